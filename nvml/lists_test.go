//go:build cgo

package nvml_test

import (
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vram-exporter/vram_exporter/nvml"
)

// driverList is one device's process list behind the ListsInto contract; says controls
// whether ERROR_INSUFFICIENT_SIZE reports the count needed (documented) or not.
type driverList struct {
	procs int
	says  bool
	calls int
}

func (l *driverList) into(buf []gonvml.ProcessInfo) (int, gonvml.Return) {
	l.calls++
	if len(buf) < l.procs {
		if l.says {
			return l.procs, gonvml.ERROR_INSUFFICIENT_SIZE
		}
		return len(buf), gonvml.ERROR_INSUFFICIENT_SIZE
	}
	for i := range l.procs {
		buf[i] = gonvml.ProcessInfo{Pid: uint32(1000 + i), UsedGpuMemory: uint64(i) << 20}
	}
	return l.procs, gonvml.SUCCESS
}

func (l *driverList) GetComputeRunningProcessesInto(b []gonvml.ProcessInfo) (int, gonvml.Return) {
	return l.into(b)
}
func (l *driverList) GetGraphicsRunningProcessesInto(b []gonvml.ProcessInfo) (int, gonvml.Return) {
	return l.into(b)
}
func (l *driverList) GetMPSComputeRunningProcessesInto(b []gonvml.ProcessInfo) (int, gonvml.Return) {
	return l.into(b)
}

// A list is read with one driver call once the buffer has been sized by the first read,
// also after it grows a little; only a jump past the headroom costs a retry.
func TestReadListOneCallWhenSteady(t *testing.T) {
	for _, says := range []bool{true, false} {
		l := &driverList{procs: 40, says: says}
		var buf []gonvml.ProcessInfo
		steps := []struct{ procs, calls int }{
			{40, 2}, // the first read: 16 offered, then enough (counted or doubled)
			{40, 1}, {44, 1}, {3, 1}, {44, 1},
			{200, 2}, // past the headroom: one retry
			{200, 1},
		}
		if !says {
			steps[0].calls = 3 // 16 → 32 → 64
			steps[5].calls = 3 // 64 → 128 → 256
		}
		for i, s := range steps {
			l.procs, l.calls = s.procs, 0
			list, calls, ret := nvml.ReadList(l, 0, &buf)
			if ret != gonvml.SUCCESS || len(list) != s.procs || calls != s.calls || l.calls != s.calls {
				t.Fatalf("driver says count %v, step %d (%d processes): %d entries, %d calls (counted %d), %v; want %d calls",
					says, i, s.procs, len(list), calls, l.calls, ret, s.calls)
			}
			if s.procs > 0 && (list[0].Pid != 1000 || list[s.procs-1].Pid != uint32(1000+s.procs-1)) {
				t.Fatalf("step %d: list %v…", i, list[:1])
			}
		}
	}
}

// A failing call is returned as it is, after one call.
func TestReadListPassesErrorsThrough(t *testing.T) {
	var buf []gonvml.ProcessInfo
	l := failingList{gonvml.ERROR_NO_PERMISSION}
	if list, calls, ret := nvml.ReadList(l, 1, &buf); ret != gonvml.ERROR_NO_PERMISSION || list != nil || calls != 1 {
		t.Fatalf("%v %d %v", list, calls, ret)
	}
}

type failingList struct{ ret gonvml.Return }

func (f failingList) GetComputeRunningProcessesInto([]gonvml.ProcessInfo) (int, gonvml.Return) {
	return 0, f.ret
}
func (f failingList) GetGraphicsRunningProcessesInto([]gonvml.ProcessInfo) (int, gonvml.Return) {
	return 0, f.ret
}
func (f failingList) GetMPSComputeRunningProcessesInto([]gonvml.ProcessInfo) (int, gonvml.Return) {
	return 0, f.ret
}
