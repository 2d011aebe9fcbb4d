//go:build cgo

package nvmltest

import (
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// device is a GPU (slot < 0) or one MIG slot of a GPU. It reads its spec from the server
// on every call, so Update takes effect at once and handles stay valid.
type device struct {
	gonvml.Device // nil: what device does not implement panics
	s             *Server
	gpu           int
	slot          int
}

var _ gonvml.Device = (*device)(nil)

// begin locks the server, finds the spec and records the call. ok is false (and ret
// says why) when the call must fail; the caller must call s.mu.Unlock.
func (d *device) begin(call string) (g *GPUSpec, m *MIGSpec, ret gonvml.Return) {
	d.s.mu.Lock()
	if d.gpu >= len(d.s.gpus) {
		d.s.calls[call]++
		return nil, nil, gonvml.ERROR_GPU_IS_LOST
	}
	g = &d.s.gpus[d.gpu]
	uuid := g.UUID
	if d.slot >= 0 {
		if d.slot >= len(g.MIG) || !g.MIGEnabled {
			d.s.calls[call]++
			return nil, nil, gonvml.ERROR_INVALID_ARGUMENT
		}
		m = &g.MIG[d.slot]
		uuid = m.UUID
	}
	if len(d.s.missing) > 0 && !d.s.hasSymbolLocked(call) {
		// enterLocked would panic with the lock held, and device methods defer their
		// unlock only after begin returns: every later call (Calls too) would deadlock.
		d.s.calls[call]++
		d.s.mu.Unlock()
		panic(fmt.Sprintf("nvmltest: %s called but its symbol was removed; "+
			"with the real libnvidia-ml this aborts the process (symbol lookup error)", call))
	}
	return g, m, d.s.enterLocked(call, uuid)
}

func (d *device) end() { d.s.mu.Unlock() }

func (d *device) GetUUID() (string, gonvml.Return) {
	g, m, r := d.begin("GetUUID")
	defer d.end()
	switch {
	case r != gonvml.SUCCESS:
		return "", r
	case m != nil:
		return m.UUID, r
	}
	return g.UUID, r
}

func (d *device) GetName() (string, gonvml.Return) {
	g, m, r := d.begin("GetName")
	defer d.end()
	switch {
	case r != gonvml.SUCCESS:
		return "", r
	case m != nil:
		return m.Name, r
	}
	return g.Name, r
}

func (d *device) GetIndex() (int, gonvml.Return) {
	_, _, r := d.begin("GetIndex")
	defer d.end()
	return d.gpu, r
}

func (d *device) GetPciInfo() (gonvml.PciInfo, gonvml.Return) {
	g, _, r := d.begin("GetPciInfo")
	defer d.end()
	var p gonvml.PciInfo
	if r != gonvml.SUCCESS {
		return p, r
	}
	for i := 0; i < len(g.PCIBusID) && i < len(p.BusId)-1; i++ {
		p.BusId[i] = int8(g.PCIBusID[i])
	}
	p.PciDeviceId = 0x233510DE
	return p, r
}

func (d *device) GetMemoryInfo_v2() (gonvml.Memory_v2, gonvml.Return) {
	g, m, r := d.begin("GetMemoryInfo_v2")
	defer d.end()
	if r != gonvml.SUCCESS {
		return gonvml.Memory_v2{}, r
	}
	if m != nil {
		return gonvml.Memory_v2{}, gonvml.ERROR_NOT_SUPPORTED
	}
	return gonvml.Memory_v2{
		Version:  2,
		Total:    g.Total,
		Reserved: g.DriverReserved,
		Used:     g.Used,
		Free:     sub(g.Total, g.Used+g.DriverReserved),
	}, r
}

func (d *device) GetMemoryInfo() (gonvml.Memory, gonvml.Return) {
	g, m, r := d.begin("GetMemoryInfo")
	defer d.end()
	if r != gonvml.SUCCESS {
		return gonvml.Memory{}, r
	}
	if m != nil {
		return gonvml.Memory{Total: m.Total, Used: m.Used, Free: sub(m.Total, m.Used)}, r
	}
	// v1 counts the driver's reservation as used.
	used := g.Used + g.DriverReserved
	return gonvml.Memory{Total: g.Total, Used: used, Free: sub(g.Total, used)}, r
}

func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

func (d *device) GetBAR1MemoryInfo() (gonvml.BAR1Memory, gonvml.Return) {
	g, m, r := d.begin("GetBAR1MemoryInfo")
	defer d.end()
	if r != gonvml.SUCCESS {
		return gonvml.BAR1Memory{}, r
	}
	if m != nil {
		return gonvml.BAR1Memory{}, gonvml.ERROR_NOT_SUPPORTED
	}
	return gonvml.BAR1Memory{Bar1Total: g.BAR1Total, Bar1Used: g.BAR1Used, Bar1Free: sub(g.BAR1Total, g.BAR1Used)}, r
}

func (d *device) GetMigMode() (int, int, gonvml.Return) {
	g, m, r := d.begin("GetMigMode")
	defer d.end()
	if r != gonvml.SUCCESS {
		return 0, 0, r
	}
	if m != nil || g.NoMIG {
		return 0, 0, gonvml.ERROR_NOT_SUPPORTED
	}
	mode := gonvml.DEVICE_MIG_DISABLE
	if g.MIGEnabled {
		mode = gonvml.DEVICE_MIG_ENABLE
	}
	return mode, mode, r
}

func (d *device) GetMaxMigDeviceCount() (int, gonvml.Return) {
	g, m, r := d.begin("GetMaxMigDeviceCount")
	defer d.end()
	if r != gonvml.SUCCESS {
		return 0, r
	}
	if m != nil || g.NoMIG {
		return 0, gonvml.ERROR_NOT_SUPPORTED
	}
	return g.MIGSlots, r
}

func (d *device) GetMigDeviceHandleByIndex(slot int) (gonvml.Device, gonvml.Return) {
	g, m, r := d.begin("GetMigDeviceHandleByIndex")
	defer d.end()
	switch {
	case r != gonvml.SUCCESS:
		return nil, r
	case m != nil || g.NoMIG:
		return nil, gonvml.ERROR_NOT_SUPPORTED
	case !g.MIGEnabled:
		return nil, gonvml.ERROR_INVALID_ARGUMENT
	case slot < 0 || slot >= g.MIGSlots:
		return nil, gonvml.ERROR_INVALID_ARGUMENT
	case slot >= len(g.MIG):
		return nil, gonvml.ERROR_NOT_FOUND
	}
	key := [2]int{d.gpu, slot}
	h, ok := d.s.migDevs[key]
	if !ok {
		h = &device{s: d.s, gpu: d.gpu, slot: slot}
		d.s.migDevs[key] = h
	}
	return h, r
}

func (d *device) GetGpuInstanceId() (int, gonvml.Return) {
	_, m, r := d.begin("GetGpuInstanceId")
	defer d.end()
	if r != gonvml.SUCCESS {
		return 0, r
	}
	if m == nil {
		return 0, gonvml.ERROR_INVALID_ARGUMENT
	}
	return m.GPUInstanceID, r
}

func (d *device) GetComputeInstanceId() (int, gonvml.Return) {
	_, m, r := d.begin("GetComputeInstanceId")
	defer d.end()
	if r != gonvml.SUCCESS {
		return 0, r
	}
	if m == nil {
		return 0, gonvml.ERROR_INVALID_ARGUMENT
	}
	return m.ComputeInstanceID, r
}

func (d *device) IsMigDeviceHandle() (bool, gonvml.Return) {
	_, _, r := d.begin("IsMigDeviceHandle")
	defer d.end()
	return d.slot >= 0, r
}

func (d *device) GetComputeRunningProcesses() ([]gonvml.ProcessInfo, gonvml.Return) {
	return d.processes("GetComputeRunningProcesses", Compute)
}

func (d *device) GetGraphicsRunningProcesses() ([]gonvml.ProcessInfo, gonvml.Return) {
	return d.processes("GetGraphicsRunningProcesses", Graphics)
}

func (d *device) GetMPSComputeRunningProcesses() ([]gonvml.ProcessInfo, gonvml.Return) {
	return d.processes("GetMPSComputeRunningProcesses", MPS)
}

// The *Into methods are the single driver call (nvml.ListsInto) the poller makes where it
// can: each counts as one call of its list, and a buffer too small gets
// ERROR_INSUFFICIENT_SIZE with the count needed, as the v3 NVML calls document.

func (d *device) GetComputeRunningProcessesInto(buf []gonvml.ProcessInfo) (int, gonvml.Return) {
	return d.processesInto("GetComputeRunningProcesses", Compute, buf)
}

func (d *device) GetGraphicsRunningProcessesInto(buf []gonvml.ProcessInfo) (int, gonvml.Return) {
	return d.processesInto("GetGraphicsRunningProcesses", Graphics, buf)
}

func (d *device) GetMPSComputeRunningProcessesInto(buf []gonvml.ProcessInfo) (int, gonvml.Return) {
	return d.processesInto("GetMPSComputeRunningProcesses", MPS, buf)
}

func (d *device) processesInto(call string, list List, buf []gonvml.ProcessInfo) (int, gonvml.Return) {
	g, m, r := d.begin(call)
	defer d.end()
	if r != gonvml.SUCCESS {
		return 0, r
	}
	all := listed(g, m, list)
	copy(buf, all)
	if len(all) > len(buf) {
		return len(all), gonvml.ERROR_INSUFFICIENT_SIZE
	}
	return len(all), r
}

func (d *device) processes(call string, list List) ([]gonvml.ProcessInfo, gonvml.Return) {
	g, m, r := d.begin(call)
	defer d.end()
	if r != gonvml.SUCCESS {
		return nil, r
	}
	out := listed(g, m, list)
	if len(out) > 1 {
		// go-nvml's wrapper offers room for one process first: a longer list costs it a
		// second driver call (after ERROR_INSUFFICIENT_SIZE says how many), counted here
		// so call counts compare with the *Into path as they would on a driver.
		d.s.calls[call]++
	}
	return out, r
}

// listed is what a list call reports of g (or of its MIG instance m).
func listed(g *GPUSpec, m *MIGSpec, list List) []gonvml.ProcessInfo {
	procs, gi, ci := g.Procs, uint32(0xFFFFFFFF), uint32(0xFFFFFFFF)
	if m != nil {
		procs, gi, ci = m.Procs, uint32(m.GPUInstanceID), uint32(m.ComputeInstanceID)
	}
	var out []gonvml.ProcessInfo
	for _, p := range procs {
		if inList(p, list) {
			out = append(out, gonvml.ProcessInfo{Pid: p.PID, UsedGpuMemory: p.Used, GpuInstanceId: gi, ComputeInstanceId: ci})
		}
	}
	return out
}

func inList(p ProcSpec, list List) bool {
	if p.Lists == 0 {
		return list == Compute
	}
	return p.Lists&list != 0
}
