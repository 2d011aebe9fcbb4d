//go:build cgo

package nvml

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

var kindNames = [3]string{KindCompute, KindGraphics, KindMPS}

var listCalls = [3]string{CallGetComputeRunningProcesses, CallGetGraphicsRunningProcesses, CallGetMPSComputeRunningProcesses}

// notAvailable is NVML_VALUE_NOT_AVAILABLE as it arrives in an unsigned field.
const notAvailable = math.MaxUint64

// deviceState is what the poller remembers about one NVML index between polls.
// Identity (handle, UUID, name, bus id) does not change while NVML stays initialised,
// so it is read once instead of three extra NVML calls per GPU per tick. What a GPU does
// not support is also remembered: NOT_SUPPORTED is a property of the GPU, not an event,
// so it is counted once and the call is not repeated.
type deviceState struct {
	handle gonvml.Device
	uuid   string
	name   string
	busID  string
	known  bool // identity fully read

	noMemoryV2 bool
	noBAR1     bool
	noMIG      bool
	noList     [3]bool // per process list kind

	// What is read on a slower cadence than every poll (Options), with the time of
	// the last successful read (zero: read on the next poll) and the figures kept
	// between reads. A failed read is retried on the next poll.
	migAt  time.Time
	migOn  bool
	bar1At time.Time
	bar1   gonvml.BAR1Memory
	listAt [3]time.Time            // per process list kind; the compute list is read every poll
	kept   [3][]gonvml.ProcessInfo // the last graphics and MPS lists

	// lists reads the process lists with one driver call each into listBuf, sized from
	// the last lists (see lists.go); nil: go-nvml's wrappers.
	lists   ListsInto
	listBuf [3][]gonvml.ProcessInfo

	migs []deviceState // per MIG slot; handle and ids refreshed every poll
	gi   int
	ci   int
}

// procScratch is reused across polls so a steady poll allocates little: index and accs
// merge one device's three process lists, out collects every device's processes and
// chunks remembers which range of out belongs to which device.
type procScratch struct {
	index  map[uint32]int
	accs   []procAcc
	out    []Process
	chunks []procChunk
}

type procChunk struct {
	uuid       string
	start, end int
}

type procAcc struct {
	pid   uint32
	used  uint64
	kinds uint8
	fresh bool // used was read on this poll, not kept from an earlier one
}

// pollLocked reads every device once. It returns a non-nil error when the driver is
// gone and Run must re-initialise.
func (p *Poller) pollLocked() (*Snapshot, error) {
	start := p.clock.Now()
	p.now = start
	s := &Snapshot{Time: start}
	if !p.up || p.lost {
		s.Errors = p.errorsLocked()
		return s, nil
	}
	s.DriverVersion, s.NVMLVersion = p.driverVersion, p.nvmlVersion

	n, ret := p.lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		p.countLocked(CallDeviceGetCount, ret)
		s.Errors = p.errorsLocked()
		s.PollDuration = p.clock.Now().Sub(start)
		if driverGone(ret) {
			p.lost = true
			return s, &CallError{Call: CallDeviceGetCount, Return: ret}
		}
		return s, nil
	}
	if n != len(p.devices) {
		// A GPU appeared or vanished: indices may have shifted, forget everything.
		p.devices = make([]deviceState, n)
	}

	sc := &p.scratch
	sc.out, sc.chunks = sc.out[:0], sc.chunks[:0]
	gpus := make([]GPU, 0, n)
	for i := range p.devices {
		gpus = p.pollDevice(i, &p.devices[i], gpus)
	}
	slices.SortFunc(gpus, func(a, b GPU) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), strings.Compare(a.UUID, b.UUID))
	})
	// Each device's processes are already sorted by PID; ordering the per-device chunks
	// by UUID and copying them once is much cheaper than sorting the whole list.
	slices.SortFunc(sc.chunks, func(a, b procChunk) int { return strings.Compare(a.uuid, b.uuid) })
	procs := make([]Process, 0, len(sc.out))
	for _, c := range sc.chunks {
		procs = append(procs, sc.out[c.start:c.end]...)
	}
	clear(sc.out) // drop references into this snapshot

	s.Up = true
	s.GPUs = gpus
	s.Processes = procs
	s.Errors = p.errorsLocked()
	s.PollDuration = p.clock.Now().Sub(start)
	return s, nil
}

// identify reads a physical GPU's identity. A GPU without a UUID cannot be joined with
// anything, so it is skipped for this poll; a missing name or bus id is tolerated.
func (p *Poller) identify(index int, d *deviceState) bool {
	if d.known {
		return true
	}
	h, ret := p.lib.DeviceGetHandleByIndex(index)
	if ret != gonvml.SUCCESS {
		p.countLocked(CallDeviceGetHandleByIndex, ret)
		return false
	}
	uuid, ret := h.GetUUID()
	if ret != gonvml.SUCCESS {
		p.countLocked(CallGetUUID, ret)
		return false
	}
	complete := true
	name, ret := h.GetName()
	if ret != gonvml.SUCCESS {
		p.countLocked(CallGetName, ret)
		complete = false
	}
	busID := ""
	if pci, ret := h.GetPciInfo(); ret == gonvml.SUCCESS {
		busID = cString(pci.BusId[:])
	} else {
		p.countLocked(CallGetPciInfo, ret)
		complete = false
	}
	*d = deviceState{handle: h, uuid: uuid, name: name, busID: busID, known: complete, lists: p.raw.listsFor(h)}
	return true
}

func (p *Poller) pollDevice(index int, d *deviceState, gpus []GPU) []GPU {
	if !p.identify(index, d) {
		return gpus
	}
	g := GPU{
		Index: index, UUID: d.uuid, Name: d.name, PCIBusID: d.busID,
		GPUInstanceID: -1, ComputeInstanceID: -1,
	}
	if !p.readMemory(d, &g) {
		return gpus
	}
	if !d.noBAR1 && p.opts.due(d.bar1At, p.now, p.opts.BAR1Interval) {
		bar1, ret := d.handle.GetBAR1MemoryInfo()
		switch ret {
		case gonvml.SUCCESS:
			d.bar1, d.bar1At = bar1, p.now
		case gonvml.ERROR_NOT_SUPPORTED:
			d.noBAR1 = true
			p.countLocked(CallGetBAR1MemoryInfo, ret)
		default:
			d.bar1At = time.Time{}
			p.countLocked(CallGetBAR1MemoryInfo, ret)
		}
	}
	if !d.noBAR1 && !d.bar1At.IsZero() {
		g.BAR1Valid, g.BAR1TotalBytes, g.BAR1UsedBytes = true, d.bar1.Bar1Total, d.bar1.Bar1Used
	}
	g.MIGEnabled = p.migEnabled(d)
	gpus = append(gpus, g)
	if !g.MIGEnabled {
		p.readProcesses(d, g.UUID)
		return gpus
	}
	// In MIG mode the parent's process lists are an aggregate that needs extra
	// privileges; each process is read from its MIG device instead, so it is attributed
	// to the MIG UUID and never counted twice.
	return p.pollMIG(d, g, gpus)
}

// readMemory fills the memory fields; false means the GPU's memory could not be read at
// all and the GPU is left out of the snapshot.
func (p *Poller) readMemory(d *deviceState, g *GPU) bool {
	if p.syms.memoryV2 && !d.noMemoryV2 {
		m, ret := d.handle.GetMemoryInfo_v2()
		switch ret {
		case gonvml.SUCCESS:
			g.MemoryAPI = MemoryAPIv2
			g.TotalBytes, g.UsedBytes, g.FreeBytes, g.DriverReservedBytes = m.Total, m.Used, m.Free, m.Reserved
			return true
		case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_FUNCTION_NOT_FOUND:
			// The symbol exists but this GPU or driver branch does not implement it:
			// fall back to v1 for good.
			d.noMemoryV2 = true
			p.countLocked(CallGetMemoryInfoV2, ret)
		default:
			p.countLocked(CallGetMemoryInfoV2, ret)
			return false
		}
	}
	return p.readMemoryV1(d.handle, g)
}

func (p *Poller) readMemoryV1(h gonvml.Device, g *GPU) bool {
	m, ret := h.GetMemoryInfo()
	if ret != gonvml.SUCCESS {
		p.countLocked(CallGetMemoryInfo, ret)
		return false
	}
	g.MemoryAPI = MemoryAPIv1
	g.TotalBytes, g.UsedBytes, g.FreeBytes = m.Total, m.Used, m.Free
	return true
}

// migEnabled reads the current MIG mode on a slow cadence: it changes only with a GPU
// reset (a requested change shows as pending until then), and a reset makes the GPU
// drop out and come back, which rebuilds the device state and so reads it again.
func (p *Poller) migEnabled(d *deviceState) bool {
	if !p.syms.mig || d.noMIG {
		return false
	}
	if !p.opts.due(d.migAt, p.now, p.opts.MIGModeInterval) {
		return d.migOn
	}
	current, _, ret := d.handle.GetMigMode()
	switch ret {
	case gonvml.SUCCESS:
		d.migOn, d.migAt = current == gonvml.DEVICE_MIG_ENABLE, p.now
		return d.migOn
	case gonvml.ERROR_NOT_SUPPORTED:
		// Not a MIG-capable GPU: expected, not an error worth a counter.
		d.noMIG = true
	default:
		p.countLocked(CallGetMigMode, ret)
	}
	d.migOn, d.migAt = false, time.Time{}
	return false
}

// pollMIG appends one GPU entry (and its processes) per MIG device of parent. MIG
// devices come and go at runtime, so the slots are walked on every poll.
func (p *Poller) pollMIG(d *deviceState, parent GPU, gpus []GPU) []GPU {
	max, ret := d.handle.GetMaxMigDeviceCount()
	if ret != gonvml.SUCCESS {
		p.countLocked(CallGetMaxMigDeviceCount, ret)
		return gpus
	}
	if len(d.migs) != max {
		d.migs = make([]deviceState, max)
	}
	for slot := range d.migs {
		m := &d.migs[slot]
		h, ret := d.handle.GetMigDeviceHandleByIndex(slot)
		if ret == gonvml.ERROR_NOT_FOUND {
			*m = deviceState{} // an empty slot, the normal case
			continue
		}
		if ret != gonvml.SUCCESS {
			p.countLocked(CallGetMigDeviceHandleByIndex, ret)
			continue
		}
		uuid, ret := h.GetUUID()
		if ret != gonvml.SUCCESS {
			p.countLocked(CallGetUUID, ret)
			continue
		}
		if uuid != m.uuid || !m.known {
			// A new instance in this slot: read what does not change while it lives.
			*m = deviceState{uuid: uuid, gi: -1, ci: -1}
			m.known = true
			if name, ret := h.GetName(); ret == gonvml.SUCCESS {
				m.name = name
			} else {
				p.countLocked(CallGetName, ret)
				m.known = false
			}
			if id, ret := h.GetGpuInstanceId(); ret == gonvml.SUCCESS {
				m.gi = id
			} else {
				p.countLocked(CallGetGpuInstanceID, ret)
				m.known = false
			}
			if id, ret := h.GetComputeInstanceId(); ret == gonvml.SUCCESS {
				m.ci = id
			} else {
				p.countLocked(CallGetComputeInstanceID, ret)
				m.known = false
			}
		}
		m.handle, m.lists = h, p.raw.listsFor(h)
		g := GPU{
			Index: parent.Index, UUID: uuid, Name: m.name, PCIBusID: parent.PCIBusID,
			ParentUUID: parent.UUID, GPUInstanceID: m.gi, ComputeInstanceID: m.ci,
		}
		// nvmlDeviceGetMemoryInfo is the call documented for MIG device handles.
		if !p.readMemoryV1(h, &g) {
			continue
		}
		gpus = append(gpus, g)
		p.readProcesses(m, uuid)
	}
	return gpus
}

// readProcesses merges the compute, graphics and MPS lists of one device into one
// Process per PID, sorted by PID, appended to the scratch output as one chunk. A failing
// list only drops that list. The compute list is read on every poll; the graphics and
// MPS lists every GraphicsMPSInterval, and the last ones are merged in between. A kept
// entry adds its kind to a PID a list read on this poll already has but not its size,
// so a process's bytes are never older than the poll.
func (p *Poller) readProcesses(d *deviceState, uuid string) {
	sc := &p.scratch
	if sc.index == nil {
		sc.index = make(map[uint32]int)
	}
	clear(sc.index)
	sc.accs = sc.accs[:0]

	for kind := range kindNames {
		if d.noList[kind] {
			continue
		}
		if kind > 0 && (kind != 2 || p.syms.mps) && !p.opts.due(d.listAt[kind], p.now, p.opts.GraphicsMPSInterval) {
			p.mergeList(d.kept[kind], kind, false, "")
			continue
		}
		var (
			list []gonvml.ProcessInfo
			ret  gonvml.Return
			call string
		)
		if kind == 2 && !p.syms.mps {
			continue
		}
		call = listCalls[kind]
		switch {
		case d.lists != nil:
			list, _, ret = ReadList(d.lists, kind, &d.listBuf[kind])
		case kind == 0:
			list, ret = d.handle.GetComputeRunningProcesses()
		case kind == 1:
			list, ret = d.handle.GetGraphicsRunningProcesses()
		default:
			list, ret = d.handle.GetMPSComputeRunningProcesses()
		}
		if ret != gonvml.SUCCESS {
			if ret == gonvml.ERROR_NOT_SUPPORTED {
				d.noList[kind] = true
			}
			d.kept[kind], d.listAt[kind] = nil, time.Time{}
			p.countLocked(call, ret)
			continue
		}
		if kind > 0 {
			d.kept[kind], d.listAt[kind] = list, p.now
		}
		p.mergeList(list, kind, true, call)
	}
	// procAcc holds no pointers, so sorting it is cheaper than sorting Processes.
	slices.SortFunc(sc.accs, func(a, b procAcc) int { return cmp.Compare(a.pid, b.pid) })
	start := len(sc.out)
	for _, a := range sc.accs {
		sc.out = append(sc.out, Process{PID: a.pid, UUID: uuid, UsedBytes: a.used, Kinds: p.kinds[a.kinds]})
	}
	sc.chunks = append(sc.chunks, procChunk{uuid: uuid, start: start, end: len(sc.out)})
}

// mergeList adds one process list to the scratch accumulators. fresh says the list was
// read on this poll; only then are NOT_AVAILABLE sizes counted (once per read).
func (p *Poller) mergeList(list []gonvml.ProcessInfo, kind int, fresh bool, call string) {
	sc := &p.scratch
	for _, pi := range list {
		used := pi.UsedGpuMemory
		if used == notAvailable {
			used = 0
			if fresh {
				p.countNameLocked(call, ErrValueNotAvailable)
			}
		}
		if j, ok := sc.index[pi.Pid]; ok {
			a := &sc.accs[j]
			a.kinds |= 1 << kind
			switch {
			case fresh && !a.fresh:
				a.used, a.fresh = used, true
			case fresh == a.fresh:
				a.used = max(a.used, used)
			}
			continue
		}
		sc.index[pi.Pid] = len(sc.accs)
		sc.accs = append(sc.accs, procAcc{pid: pi.Pid, used: used, kinds: 1 << kind, fresh: fresh})
	}
}

// cString converts a NUL-terminated C char array as go-nvml exposes it.
func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}
