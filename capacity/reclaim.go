package capacity

import (
	"strconv"

	"github.com/vram-exporter/vram_exporter/join"
)

// GPUReclaim is the memory a GPU's processes hold cached that their runtimes would hand
// back on request (join.Process.ReclaimableBytes summed): a GPU with little free memory
// but much of this is full of caches, not of work.
type GPUReclaim struct {
	UUID string
	GPU  string // NVML index label
	// Bytes sums the reclaimable bytes of Processes processes (those holding any).
	Bytes     uint64
	Processes int
}

// Reclaimable returns, in the View's GPU order, every NVML GPU's reclaimable cache;
// a GPU without any is reported with 0 so that the series exists from the start.
func Reclaimable(v *join.View) []GPUReclaim {
	if v == nil {
		return nil
	}
	type sum struct {
		bytes uint64
		procs int
	}
	per := map[string]sum{}
	for i := range v.Processes {
		p := &v.Processes[i]
		if p.ReclaimableBytes == 0 {
			continue
		}
		s := per[p.UUID]
		s.bytes += p.ReclaimableBytes
		s.procs++
		per[p.UUID] = s
	}
	out := make([]GPUReclaim, 0, len(v.GPUs))
	for _, g := range v.GPUs {
		s := per[g.UUID]
		out = append(out, GPUReclaim{UUID: g.UUID, GPU: strconv.Itoa(g.Index), Bytes: s.bytes, Processes: s.procs})
	}
	return out
}
