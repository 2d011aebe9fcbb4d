//go:build cgo

package nvmltest_test

import (
	"reflect"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vram-exporter/vram_exporter/nvml/nvmltest"
)

func TestH200sDeterministicAndFits(t *testing.T) {
	a, b := nvmltest.H200s(8, 64), nvmltest.H200s(8, 64)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("H200s is not deterministic")
	}
	for i, g := range a {
		if g.Total != 143771*nvmltest.MiB || g.Used+g.DriverReserved > g.Total || len(g.Procs) != 64 {
			t.Errorf("GPU %d: total=%d used=%d procs=%d", i, g.Total, g.Used, len(g.Procs))
		}
	}
}

func TestServerBehaviour(t *testing.T) {
	s := nvmltest.NewServer(nvmltest.H200s(2, 3)...)
	if _, r := s.DeviceGetCount(); r != gonvml.ERROR_UNINITIALIZED {
		t.Errorf("DeviceGetCount before Init = %v, want ERROR_UNINITIALIZED", r)
	}
	if s.Extensions().LookupSymbol("nvmlDeviceGetMemoryInfo_v2") == nil {
		t.Error("LookupSymbol before Init succeeded; the real library is not loaded then")
	}
	if r := s.Init(); r != gonvml.SUCCESS {
		t.Fatalf("Init = %v", r)
	}
	uuid := s.GPUs()[1].UUID
	s.Fail("GetMemoryInfo_v2", uuid, gonvml.ERROR_GPU_IS_LOST)
	d0, _ := s.DeviceGetHandleByIndex(0)
	d1, _ := s.DeviceGetHandleByIndex(1)
	if _, r := d0.GetMemoryInfo_v2(); r != gonvml.SUCCESS {
		t.Errorf("GPU 0 memory = %v", r)
	}
	if _, r := d1.GetMemoryInfo_v2(); r != gonvml.ERROR_GPU_IS_LOST {
		t.Errorf("GPU 1 memory = %v, want GPU_IS_LOST", r)
	}
	s.RemoveSymbols("nvmlDeviceGetMemoryInfo_v2")
	if s.Extensions().LookupSymbol("nvmlDeviceGetMemoryInfo_v2") == nil {
		t.Error("removed symbol still found")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("calling a removed symbol did not panic")
			}
		}()
		d0.GetMemoryInfo_v2()
	}()
	if got := s.Calls("GetMemoryInfo_v2"); got != 3 {
		t.Errorf("Calls = %d, want 3", got)
	}
}
