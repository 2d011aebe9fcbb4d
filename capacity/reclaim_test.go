package capacity

import (
	"reflect"
	"testing"

	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/nvml"
)

// "GPU 0 has 2 GiB free but 31 GiB cached in 3 processes": no room for another 10 GiB
// worker now, three if the caches were handed back.
func TestReclaimableAndHeadroom(t *testing.T) {
	v := &join.View{
		GPUs: []join.GPU{
			{GPU: nvml.GPU{Index: 0, UUID: "GPU-a", TotalBytes: 80 * gib, FreeBytes: 2 * gib}},
			{GPU: nvml.GPU{Index: 1, UUID: "GPU-b", TotalBytes: 80 * gib, FreeBytes: 80 * gib}},
		},
		Processes: []join.Process{
			{PID: 1, UUID: "GPU-a", HasNVML: true, UsedBytes: 10 * gib, ReclaimableBytes: 8 * gib},
			{PID: 2, UUID: "GPU-a", HasNVML: true, UsedBytes: 10 * gib, ReclaimableBytes: 8 * gib},
			{PID: 3, UUID: "GPU-a", HasNVML: true, UsedBytes: 10 * gib, ReclaimableBytes: 15 * gib},
			{PID: 4, UUID: "GPU-a", HasNVML: true, UsedBytes: 10 * gib},
		},
	}
	want := []GPUReclaim{{UUID: "GPU-a", GPU: "0", Bytes: 31 * gib, Processes: 3}, {UUID: "GPU-b", GPU: "1"}}
	if got := Reclaimable(v); !reflect.DeepEqual(got, want) {
		t.Errorf("Reclaimable = %+v, want %+v", got, want)
	}
	h := HeadroomPerGPU(v, 2*gib)
	if len(h) != 1 || h[0].Workers != 0 || h[0].ReclaimableBytes != 31*gib || h[0].WorkersIfReclaimed != 3 {
		t.Errorf("headroom = %+v, want 0 workers now, 3 with 31 GiB reclaimed", h)
	}
}
