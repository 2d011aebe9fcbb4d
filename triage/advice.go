package triage

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vram-exporter/vram_exporter/api"
)

// Advice is chosen by the runtime that holds the memory and by its allocator settings
// (docs/runbook.md, "Advice by runtime"): torch.cuda.empty_cache() does nothing for
// XLA's preallocated pool, and with expandable_segments on, "fragmentation" no longer
// means split blocks.

// allocator is the runtime a process's advice is about and its pushed settings.
type allocator struct {
	runtime  string
	settings map[string]string
}

// allocatorOf picks the runtime whose cache the advice is about: the first of torch,
// jax, cupy, tensorrt the process pushes, in that order (a torch process that also runs
// a TensorRT engine gets torch's advice for its cache).
func allocatorOf(p api.Process) allocator {
	for _, want := range []string{"torch", "jax", "cupy", "tensorrt"} {
		for _, r := range p.Runtimes {
			if r.Name == want {
				return allocator{runtime: r.Name, settings: r.Allocator}
			}
		}
	}
	if len(p.Runtimes) > 0 {
		return allocator{runtime: p.Runtimes[0].Name, settings: p.Runtimes[0].Allocator}
	}
	return allocator{}
}

func truthy(v string) bool {
	switch strings.ToLower(v) {
	case "true", "1", "yes", "on":
		return true
	}
	return false
}

// expandable reports torch's expandable_segments:True.
func (a allocator) expandable() bool {
	return a.runtime == "torch" && truthy(a.settings["expandable_segments"])
}

// asyncBackend reports torch's cudaMallocAsync backend, which has no split blocks and
// ignores expandable_segments and max_split_size_mb.
func (a allocator) asyncBackend() bool {
	return a.runtime == "torch" && a.settings["backend"] == "cudaMallocAsync"
}

// jaxPreallocates: XLA_PYTHON_CLIENT_PREALLOCATE defaults to true.
func (a allocator) jaxPreallocates() bool {
	v, ok := a.settings["preallocate"]
	return a.runtime == "jax" && (!ok || truthy(v))
}

func (a allocator) jaxFraction() string {
	if f, ok := a.settings["mem_fraction"]; ok {
		return f
	}
	return "0.75"
}

// cacheAdvice says what the cached bytes are and how to get them back, for the
// process's runtime.
func (a allocator) cacheAdvice() string {
	switch a.runtime {
	case "torch":
		switch {
		case a.asyncBackend():
			return "torch.cuda.empty_cache() returns it to the cudaMallocAsync pool's release threshold"
		case a.expandable():
			return "torch.cuda.empty_cache() returns it (expandable_segments is already on)"
		}
		return "torch.cuda.empty_cache() returns it; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces fragmentation"
	case "jax":
		switch {
		case a.settings["allocator"] == "platform":
			return "XLA_PYTHON_CLIENT_ALLOCATOR=platform frees on release, so this is memory in use"
		case a.jaxPreallocates():
			return fmt.Sprintf("XLA preallocated its pool at start (XLA_PYTHON_CLIENT_MEM_FRACTION=%s): not a leak, and not returned while the process lives; XLA_PYTHON_CLIENT_PREALLOCATE=false or a lower XLA_PYTHON_CLIENT_MEM_FRACTION shares the GPU", a.jaxFraction())
		}
		return "XLA's BFC allocator keeps what it has grown until the process exits; XLA_PYTHON_CLIENT_ALLOCATOR=platform frees on release, at a speed cost"
	case "cupy":
		s := "cupy.get_default_memory_pool().free_all_blocks() returns it"
		if l, err := strconv.ParseUint(a.settings["pool_limit"], 10, 64); err == nil && l > 0 {
			return s + fmt.Sprintf("; the pool is capped at %s", bytesText(float64(l)))
		}
		return s + "; set_limit() caps the pool"
	case "tensorrt":
		return "TensorRT's memory is engines and contexts, not a cache"
	}
	return "how to return it depends on the runtime"
}

// reclaimWords is the GPU line when its free memory is small beside the caches its
// processes could hand back: a GPU full of caches is another page than a full GPU.
func reclaimWords(g api.GPU) string {
	if g.ReclaimableBytes < 1<<30 || g.ReclaimableBytes <= g.FreeBytes {
		return ""
	}
	procs := "1 process"
	if g.ReclaimableProcesses != 1 {
		procs = fmt.Sprintf("%d processes", g.ReclaimableProcesses)
	}
	return fmt.Sprintf("GPU %d has %s free but %s cached in %s: full of caches, not of work; torch.cuda.empty_cache() (CuPy: free_all_blocks()) in those processes hands it back, or cap them (torch.cuda.set_per_process_memory_fraction)",
		g.Index, bytesText(float64(g.FreeBytes)), bytesText(float64(g.ReclaimableBytes)), procs)
}

// oomWords says what the process's out-of-memory events were and what the field guide
// prescribes for the last one's kind, for its runtime.
func oomWords(p api.Process) string {
	o := p.OOM
	if o == nil {
		return ""
	}
	var total uint64
	var kinds []string
	for _, k := range api.OOMKinds() {
		if n := o.Events[k]; n > 0 {
			total += n
			kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
		}
	}
	if total == 0 {
		return ""
	}
	s := fmt.Sprintf("%d out-of-memory errors (%s)", total, strings.Join(kinds, ", "))
	if total == 1 {
		s = fmt.Sprintf("1 out-of-memory error (%s)", kinds[0])
	}
	l := o.Last
	if l == nil {
		return s + ": the client sent no figures to tell a shortage from fragmentation"
	}
	return s + "; the last " + lastOOMWords(*l, allocatorOf(p))
}

func lastOOMWords(e api.OOMEvent, a allocator) string {
	fig := func(b *uint64) string {
		if b == nil {
			return "?"
		}
		return bytesText(float64(*b))
	}
	asked := fmt.Sprintf("asked for %s with %s free and %s cached", fig(e.RequestedBytes), fig(e.FreeBytes), fig(e.CachedBytes))
	switch e.Kind {
	case api.OOMShortage:
		return asked + ": a shortage, the work does not fit; lower the batch size or cap the input (max tokens, sequence length, image size)" + shortageExtra(a)
	case api.OOMFragmentation:
		block := ""
		if e.LargestFreeBlockBytes != nil {
			block = fmt.Sprintf(", the largest free block %s", fig(e.LargestFreeBlockBytes))
		}
		return asked + block + ": fragmentation, the bytes were there but not in one block; " + fragmentationAdvice(a, e)
	case api.OOMPeak:
		return fmt.Sprintf("%s, a demand of %s against a usual floor of %s: a peak, usually concurrent requests adding up; allow fewer concurrent requests (a smaller max batch or worker concurrency) or cap the input size",
			asked, fig(peakDemand(e)), fig(e.FloorBytes))
	}
	return "said too little (no request size or free memory) to tell a shortage from fragmentation"
}

func peakDemand(e api.OOMEvent) *uint64 {
	if e.AllocatedBytes == nil || e.RequestedBytes == nil {
		return nil
	}
	d := *e.AllocatedBytes + *e.RequestedBytes
	return &d
}

func shortageExtra(a allocator) string {
	if a.runtime == "jax" && a.jaxPreallocates() {
		return fmt.Sprintf(", or give XLA more than XLA_PYTHON_CLIENT_MEM_FRACTION=%s", a.jaxFraction())
	}
	return ""
}

func fragmentationAdvice(a allocator, e api.OOMEvent) string {
	switch a.runtime {
	case "torch":
		switch {
		case a.asyncBackend():
			return "the cudaMallocAsync backend has no split blocks: the free memory is fragmented in the driver's pool; torch.cuda.empty_cache() before the large allocation"
		case a.expandable():
			return "expandable_segments is already on, so this is not split blocks: the cache is held on other streams or in CUDA-graph private pools; free those, or torch.cuda.empty_cache() before the large allocation"
		}
		s := "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
		if _, ok := a.settings["max_split_size_mb"]; !ok {
			mb := uint64(0)
			if e.RequestedBytes != nil {
				mb = (*e.RequestedBytes + 1<<20 - 1) >> 20
			}
			if mb > 0 {
				s += fmt.Sprintf(" (or max_split_size_mb:%d, so that blocks this large are never split)", mb)
			} else {
				s += " (or max_split_size_mb, so that large blocks are never split)"
			}
		}
		return s
	case "jax":
		return "XLA's BFC pool is fragmented: XLA_PYTHON_CLIENT_ALLOCATOR=platform allocates exactly (slower), or a larger XLA_PYTHON_CLIENT_MEM_FRACTION leaves room"
	case "cupy":
		return "cupy.get_default_memory_pool().free_all_blocks() before the large allocation"
	}
	return "return the runtime's cache before the large allocation"
}

// phaseWords names the phase where the process peaks, beside the next highest: the
// phase to bound first when memory is short.
func phaseWords(p api.Process) string {
	if len(p.PhasePeaks) == 0 {
		return ""
	}
	top := p.PhasePeaks[0]
	for _, ph := range p.PhasePeaks[1:] {
		if ph.PeakAllocatedBytes > top.PeakAllocatedBytes {
			top = ph
		}
	}
	s := fmt.Sprintf("allocated peaks in phase %s (%s)", top.Phase, bytesText(float64(top.PeakAllocatedBytes)))
	var second *api.PhasePeak
	for i, ph := range p.PhasePeaks {
		if ph.Phase != top.Phase && (second == nil || ph.PeakAllocatedBytes > second.PeakAllocatedBytes) {
			second = &p.PhasePeaks[i]
		}
	}
	if second != nil {
		s += fmt.Sprintf(", then %s (%s)", second.Phase, bytesText(float64(second.PeakAllocatedBytes)))
	}
	return s
}

// trtWords says when an engine's contexts × activation memory dominates its footprint
// (more than its weights): contexts that never run at once can share one buffer.
func trtWords(p api.Process) string {
	var parts []string
	for _, e := range p.TRTEngines {
		if e.Contexts < 2 || e.ContextBytes == nil || e.HeldBytes == nil {
			continue
		}
		held, per := *e.HeldBytes, *e.ContextBytes
		weights := uint64(0)
		if e.WeightsBytes != nil {
			weights = *e.WeightsBytes
		}
		if held <= weights || held < 2*per {
			continue // weights dominate, or the contexts already share a buffer
		}
		parts = append(parts, fmt.Sprintf("engine %s: %d contexts × %s of activation memory (%s, more than its %s of weights): contexts that never run concurrently can share one user-managed buffer (create them with ExecutionContextAllocationStrategy.USER_MANAGED and set_device_memory), or run fewer contexts",
			e.Engine, e.Contexts, bytesText(float64(per)), bytesText(float64(held)), bytesText(float64(weights))))
	}
	return strings.Join(parts, "; ")
}
