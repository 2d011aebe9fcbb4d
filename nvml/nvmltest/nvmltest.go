//go:build cgo

// Package nvmltest is a fake NVML for tests, benchmarks and demo mode: a gonvml.Interface
// that serves GPUs, MIG devices and process lists from plain specs, and lets a test make
// any call fail on any GPU, remove a symbol an older driver lacks, or make Init fail as
// on a host without a driver.
//
// It keeps no per-call history (only a bounded counter per call name), so a long-running
// demo or benchmark does not grow without bound. Methods it does not implement fall
// through to an embedded nil gonvml.Interface (or gonvml.Device) and panic: an
// unexpected NVML call fails a test loudly. It embeds go-nvml's interfaces, not its moq
// mocks (pkg/nvml/mock), because demo mode links it into the daemon: the mocks' code for
// every NVML call was 1.2 MB of the daemon's binary, which counts in its RSS where the
// kernel maps the binary whole.
//
// Like go-nvml, whose types it implements, it needs cgo: a binary built without cgo has
// neither NVML nor this fake (nvml.ErrNotBuiltIn).
package nvmltest

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"sync"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// MiB is 2^20 bytes.
const MiB = 1 << 20

// NotAvailable is NVML_VALUE_NOT_AVAILABLE as NVML reports it in ProcessInfo.UsedGpuMemory
// (no permission, some vGPU/WDDM setups). Use it as ProcSpec.Used.
const NotAvailable uint64 = math.MaxUint64

// List is a set of NVML process lists.
type List uint8

// The NVML process lists.
const (
	Compute  List = 1 << iota // nvmlDeviceGetComputeRunningProcesses
	Graphics                  // nvmlDeviceGetGraphicsRunningProcesses
	MPS                       // nvmlDeviceGetMPSComputeRunningProcesses
)

// ProcSpec is one process entry. A process in several lists with the same size sets
// several bits in Lists; to give it different sizes per list, use one ProcSpec per list.
type ProcSpec struct {
	PID   uint32
	Used  uint64 // bytes, or NotAvailable
	Lists List   // 0 means Compute
}

// MIGSpec is one MIG device, served from slot i of its parent for MIG[i].
type MIGSpec struct {
	UUID              string // default "MIG-…" derived from the parent's index and the slot
	Name              string // default "<parent name> MIG 1g.18gb"
	GPUInstanceID     int
	ComputeInstanceID int
	Total, Used       uint64 // bytes; GetMemoryInfo reports Free = Total − Used
	Procs             []ProcSpec
}

// GPUSpec is one physical GPU. Zero fields take H200-like defaults in NewServer.
type GPUSpec struct {
	UUID     string // default "GPU-…" derived from the index
	Name     string // default "NVIDIA H200"
	PCIBusID string // default "00000000:<index+0x18>:00.0"

	// Memory as GetMemoryInfo_v2 reports it: Free = Total − Used − DriverReserved.
	// GetMemoryInfo (v1) reports Used + DriverReserved as used, as real drivers do.
	Total, Used, DriverReserved uint64
	BAR1Total, BAR1Used         uint64 // default 256 GiB total, 8 MiB used

	// MIG: MIGEnabled (forced on when MIG is non-empty) is GetMigMode's current mode;
	// MIGSlots is GetMaxMigDeviceCount (default 7); NoMIG makes GetMigMode return
	// NOT_SUPPORTED, as on a GPU without MIG.
	MIGEnabled bool
	MIGSlots   int
	NoMIG      bool
	MIG        []MIGSpec

	Procs []ProcSpec
}

// H200s returns n H200-like GPUs (143771 MiB) with procsPerGPU processes each, of varied,
// deterministic sizes: every 5th process is also in the graphics list (a duplicate the
// poller must merge) and every 7th is an MPS client. PIDs are 100000 + 1000*gpu + j.
func H200s(n, procsPerGPU int) []GPUSpec {
	const total, reserved = 143771 * MiB, 577 * MiB
	out := make([]GPUSpec, n)
	for i := range out {
		g := GPUSpec{Total: total, DriverReserved: reserved}
		if procsPerGPU > 0 {
			// Weights 1..8 average 4.5, so the processes fill at most ~56% of the GPU.
			unit := (total - reserved) / uint64(procsPerGPU*8) / MiB * MiB
			for j := range procsPerGPU {
				p := ProcSpec{
					PID:   uint32(100000 + 1000*i + j),
					Used:  unit * uint64(1+(7*i+13*j)%8),
					Lists: Compute,
				}
				switch {
				case j%7 == 6:
					p.Lists = MPS
				case j%5 == 4:
					p.Lists = Compute | Graphics
				}
				g.Procs = append(g.Procs, p)
				g.Used += p.Used
			}
		}
		// The CUDA contexts of those processes, which NVML counts as used too.
		g.Used += 512 * MiB
		out[i] = g
	}
	return out
}

// Server is a fake NVML serving GPUSpecs. Pass it wherever a gonvml.Interface is wanted.
// All methods are safe for concurrent use.
type Server struct {
	gonvml.Interface // nil: what Server does not implement panics

	mu            sync.Mutex
	gpus          []GPUSpec
	driverVersion string
	nvmlVersion   string
	refcount      int
	fails         map[failKey]gonvml.Return
	missing       map[string]bool
	calls         map[string]int
	devs          []*device
	migDevs       map[[2]int]*device
	ext           symbols
}

type failKey struct{ call, uuid string }

// NewServer returns a fake NVML with the given GPUs (defaults filled in, see GPUSpec),
// driver 570.124.06. Every symbol is present and no call fails until told otherwise.
func NewServer(gpus ...GPUSpec) *Server {
	s := &Server{
		driverVersion: "570.124.06",
		nvmlVersion:   "12.570.124.06",
		fails:         map[failKey]gonvml.Return{},
		missing:       map[string]bool{},
		calls:         map[string]int{},
		migDevs:       map[[2]int]*device{},
	}
	s.ext = symbols{s}
	s.gpus = fillDefaults(gpus)
	return s
}

func fillDefaults(gpus []GPUSpec) []GPUSpec {
	out := make([]GPUSpec, len(gpus))
	for i, g := range gpus {
		if g.UUID == "" {
			g.UUID = fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", 0x7e57_0000+i, i)
		}
		if g.Name == "" {
			g.Name = "NVIDIA H200"
		}
		if g.PCIBusID == "" {
			g.PCIBusID = fmt.Sprintf("00000000:%02X:00.0", 0x18+i)
		}
		if g.BAR1Total == 0 {
			g.BAR1Total, g.BAR1Used = 256<<30, 8*MiB
		}
		if g.MIGSlots == 0 {
			g.MIGSlots = 7
		}
		if len(g.MIG) > 0 {
			g.MIGEnabled = true
		}
		g.Procs = append([]ProcSpec(nil), g.Procs...)
		g.MIG = append([]MIGSpec(nil), g.MIG...)
		for j := range g.MIG {
			m := &g.MIG[j]
			if m.UUID == "" {
				m.UUID = fmt.Sprintf("MIG-%08x-0000-4000-8000-%012x", 0x7e57_0000+i, j)
			}
			if m.Name == "" {
				m.Name = g.Name + " MIG 1g.18gb"
			}
			m.Procs = append([]ProcSpec(nil), m.Procs...)
		}
		out[i] = g
	}
	return out
}

// GPUs returns the GPUs as served, defaults filled in (to learn the generated UUIDs).
func (s *Server) GPUs() []GPUSpec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fillDefaults(s.gpus)
}

// Update lets fn change the served GPUs in place (memory growing, processes coming and
// going, GPUs added or removed); defaults are filled in again afterwards.
func (s *Server) Update(fn func(gpus []GPUSpec) []GPUSpec) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gpus = fillDefaults(fn(s.gpus))
}

// Fail makes call (a go-nvml method name such as "GetMemoryInfo_v2", "DeviceGetCount" or
// "Init") return ret on the device with uuid (a GPU or MIG UUID), or everywhere when
// uuid is "". gonvml.SUCCESS removes the failure.
func (s *Server) Fail(call, uuid string, ret gonvml.Return) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ret == gonvml.SUCCESS {
		delete(s.fails, failKey{call, uuid})
		return
	}
	s.fails[failKey{call, uuid}] = ret
}

// ClearFailures removes every failure set with Fail.
func (s *Server) ClearFailures() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.fails)
}

// RemoveSymbols makes LookupSymbol report the named C symbols (e.g.
// "nvmlDeviceGetMemoryInfo_v2") as missing, as an older driver would. Calling a method
// whose every symbol version is missing panics, because with the real library the
// dynamic linker would abort the process.
func (s *Server) RemoveSymbols(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		s.missing[n] = true
	}
}

// Calls reports how many times call was made (go-nvml method names, plus "Extensions"
// and "LookupSymbol").
func (s *Server) Calls(call string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[call]
}

// CallCounts returns a copy of every call count.
func (s *Server) CallCounts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

// ResetCalls zeroes the call counts.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.calls)
}

// Initialized reports whether Init has been called more often than Shutdown.
func (s *Server) Initialized() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refcount > 0
}

// symbolsFor lists the C symbols that can serve a go-nvml method; the method is
// callable when any one is present (go-nvml picks the newest it finds).
func symbolsFor(call string) []string {
	switch call {
	case "Init":
		return []string{"nvmlInit_v2", "nvmlInit"}
	case "Shutdown", "SystemGetDriverVersion", "SystemGetNVMLVersion":
		return []string{"nvml" + call}
	case "DeviceGetCount", "DeviceGetHandleByIndex":
		return []string{"nvml" + call + "_v2", "nvml" + call}
	case "GetMemoryInfo_v2":
		return []string{"nvmlDeviceGetMemoryInfo_v2"}
	case "GetPciInfo":
		return []string{"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"}
	case "GetComputeRunningProcesses", "GetGraphicsRunningProcesses", "GetMPSComputeRunningProcesses":
		return []string{"nvmlDevice" + call + "_v3", "nvmlDevice" + call + "_v2", "nvmlDevice" + call}
	default:
		return []string{"nvmlDevice" + call}
	}
}

// enter records a call and returns what it should return: the injected failure,
// ERROR_UNINITIALIZED outside Init…Shutdown, or SUCCESS. Callers hold no lock.
func (s *Server) enter(call, uuid string) gonvml.Return {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enterLocked(call, uuid)
}

func (s *Server) enterLocked(call, uuid string) gonvml.Return {
	s.calls[call]++
	if len(s.missing) > 0 && !s.hasSymbolLocked(call) {
		panic(fmt.Sprintf("nvmltest: %s called but its symbol was removed; "+
			"with the real libnvidia-ml this aborts the process (symbol lookup error)", call))
	}
	if r, ok := s.fails[failKey{call, uuid}]; ok && uuid != "" {
		return r
	}
	if r, ok := s.fails[failKey{call, ""}]; ok {
		return r
	}
	if call != "Init" && s.refcount == 0 {
		return gonvml.ERROR_UNINITIALIZED
	}
	return gonvml.SUCCESS
}

// hasSymbolLocked reports whether any symbol that can serve call is still present.
func (s *Server) hasSymbolLocked(call string) bool {
	for _, sym := range symbolsFor(call) {
		if !s.missing[sym] {
			return true
		}
	}
	return false
}

var errNotLoaded = errors.New("nvmltest: library not loaded (call Init first)")

func (s *Server) lookupSymbol(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls["LookupSymbol"]++
	if s.refcount == 0 {
		return errNotLoaded
	}
	if s.missing[name] {
		return fmt.Errorf("nvmltest: symbol %s removed", name)
	}
	return nil
}

// Init implements gonvml.Interface.
func (s *Server) Init() gonvml.Return {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.enterLocked("Init", "")
	if r == gonvml.SUCCESS {
		s.refcount++
	}
	return r
}

// Shutdown implements gonvml.Interface.
func (s *Server) Shutdown() gonvml.Return {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.enterLocked("Shutdown", "")
	if r == gonvml.SUCCESS {
		s.refcount--
	}
	return r
}

// symbols is the Server's gonvml.ExtendedInterface.
type symbols struct{ s *Server }

func (x symbols) LookupSymbol(name string) error { return x.s.lookupSymbol(name) }

// Extensions implements gonvml.Interface.
func (s *Server) Extensions() gonvml.ExtendedInterface {
	s.mu.Lock()
	s.calls["Extensions"]++
	s.mu.Unlock()
	return s.ext
}

// SystemGetDriverVersion implements gonvml.Interface.
func (s *Server) SystemGetDriverVersion() (string, gonvml.Return) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.enterLocked("SystemGetDriverVersion", ""); r != gonvml.SUCCESS {
		return "", r
	}
	return s.driverVersion, gonvml.SUCCESS
}

// SystemGetNVMLVersion implements gonvml.Interface.
func (s *Server) SystemGetNVMLVersion() (string, gonvml.Return) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.enterLocked("SystemGetNVMLVersion", ""); r != gonvml.SUCCESS {
		return "", r
	}
	return s.nvmlVersion, gonvml.SUCCESS
}

// DeviceGetCount implements gonvml.Interface.
func (s *Server) DeviceGetCount() (int, gonvml.Return) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.enterLocked("DeviceGetCount", ""); r != gonvml.SUCCESS {
		return 0, r
	}
	return len(s.gpus), gonvml.SUCCESS
}

// DeviceGetHandleByIndex implements gonvml.Interface. Handles are stable per index.
func (s *Server) DeviceGetHandleByIndex(index int) (gonvml.Device, gonvml.Return) {
	s.mu.Lock()
	defer s.mu.Unlock()
	uuid := ""
	if index >= 0 && index < len(s.gpus) {
		uuid = s.gpus[index].UUID
	}
	if r := s.enterLocked("DeviceGetHandleByIndex", uuid); r != gonvml.SUCCESS {
		return nil, r
	}
	if uuid == "" {
		return nil, gonvml.ERROR_INVALID_ARGUMENT
	}
	for len(s.devs) <= index {
		s.devs = append(s.devs, &device{s: s, gpu: len(s.devs), slot: -1})
	}
	return s.devs[index], gonvml.SUCCESS
}

// DeviceGetHandleByUUID implements gonvml.Interface.
func (s *Server) DeviceGetHandleByUUID(uuid string) (gonvml.Device, gonvml.Return) {
	s.mu.Lock()
	idx := -1
	for i := range s.gpus {
		if s.gpus[i].UUID == uuid {
			idx = i
		}
	}
	s.mu.Unlock()
	if idx < 0 {
		if r := s.enter("DeviceGetHandleByUUID", uuid); r != gonvml.SUCCESS {
			return nil, r
		}
		return nil, gonvml.ERROR_NOT_FOUND
	}
	return s.DeviceGetHandleByIndex(idx)
}

// ErrorString implements gonvml.Interface without a library.
func (s *Server) ErrorString(r gonvml.Return) string { return r.Error() }

var _ gonvml.Interface = (*Server)(nil)
