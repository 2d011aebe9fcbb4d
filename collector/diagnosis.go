package collector

import (
	"sort"
	"strconv"

	"github.com/vram-exporter/vram_exporter/api"
	"github.com/vram-exporter/vram_exporter/capacity"
	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/push"
)

// The field guides' diagnosis as metrics: OOM events by kind and the last one's
// figures, the cache other processes could hand back, and each runtime's allocator
// settings. Every label is bounded: kind is a closed set, setting and value are
// validated and length-bounded by the protocol (at most 16 per runtime).

var oomLabels = []string{"pid", "uuid", "gpu", "kind"}

type diagDescs struct {
	oomEvents, oomRequested, oomFree, oomCached, oomLargest, oomFloor, oomTime  *metricDesc
	reclaimable, allocatorInfo, phasePeak                                       *metricDesc
	trtContexts, trtContextBytes, trtHeld, trtWeights, trtStreamable, trtBudget *metricDesc
}

var engineLabels = []string{"pid", "uuid", "gpu", "engine"}

func newDiagDescs() diagDescs {
	last := " of the process's last out-of-memory event on the GPU (kind is that event's kind); absent while the runtime did not report it."
	return diagDescs{
		oomEvents:    nd("runtime_oom_events_total", "Out-of-memory events of a process on a GPU since the daemon first saw it, by kind: shortage (the request exceeded free memory plus the process's cache), fragmentation (free plus cache held enough bytes, not in one block), peak (the bytes were not there and demand was far above the process's usual floor), unknown (too few figures, or events lost between messages). See docs/triage.md.", oomLabels...),
		oomRequested: nd("runtime_oom_last_requested_bytes", "Size of the failed request"+last, oomLabels...),
		oomFree:      nd("runtime_oom_last_free_bytes", "Memory free for the process (the driver's free memory capped by the process's limit minus its reserved bytes)"+last, oomLabels...),
		oomCached:    nd("runtime_oom_last_cached_bytes", "The runtime's cached bytes (reserved minus allocated)"+last, oomLabels...),
		oomLargest:   nd("runtime_oom_last_largest_free_block_bytes", "Largest cached block not in use"+last, oomLabels...),
		oomFloor:     nd("runtime_oom_last_floor_bytes", "The process's usual allocated floor the daemon compared the demand with"+last, oomLabels...),
		oomTime:      nd("runtime_oom_last_timestamp_seconds", "When the daemon received the process's last out-of-memory event on the GPU, since the Unix epoch.", oomLabels...),
		reclaimable:  nd("gpu_reclaimable_bytes", "Bytes the GPU's processes hold cached (reserved minus allocated of top-level pools) that their runtime hands back on request: torch (torch.cuda.empty_cache()) and CuPy (free_all_blocks()). JAX's preallocated pool and TensorRT memory are never counted.", gpuLabels...),
		allocatorInfo: nd("runtime_allocator_info", "A runtime's allocator setting as the process pushed it (PYTORCH_CUDA_ALLOC_CONF keys, XLA_PYTHON_CLIENT_* variables, CuPy's pool limit, TensorRT's allocation strategy); always 1. See docs/protocol.md.",
			"pid", "runtime", "setting", "value"),
		phasePeak: nd("runtime_phase_peak_bytes", "Peak allocated bytes inside a named phase of the process (reporter.phase) since its previous push, from the runtime's peak counter reset when the phase begins. The counter is process-wide: phases running at once in two threads see each other's allocations.",
			"pid", "uuid", "gpu", "phase"),
		trtContexts:     nd("trt_engine_contexts", "Execution contexts of a TensorRT engine, as the client's TensorRTTracker pushed them.", engineLabels...),
		trtContextBytes: nd("trt_context_activation_bytes", "Device memory one execution context of the engine needs for activations (the largest of its contexts: device_memory_size_v2, or per profile).", engineLabels...),
		trtHeld:         nd("trt_engine_activation_held_bytes", "Activation memory all contexts of the engine hold together: contexts × per-context size, less when contexts share one user-managed buffer.", engineLabels...),
		trtWeights:      nd("trt_engine_weights_bytes", "Resident weights of the TensorRT engine.", engineLabels...),
		trtStreamable:   nd("trt_engine_streamable_weights_bytes", "Streamable weights of the engine under weight streaming.", engineLabels...),
		trtBudget:       nd("trt_engine_weight_streaming_budget_bytes", "Weight-streaming budget: the streamable weights kept resident.", engineLabels...),
	}
}

func (d diagDescs) all() []*metricDesc {
	return []*metricDesc{d.oomEvents, d.oomRequested, d.oomFree, d.oomCached, d.oomLargest, d.oomFloor, d.oomTime,
		d.reclaimable, d.allocatorInfo, d.phasePeak,
		d.trtContexts, d.trtContextBytes, d.trtHeld, d.trtWeights, d.trtStreamable, d.trtBudget}
}

func (c *Collector) collectDiagnosis(e *emitter, v *join.View) {
	d := c.d.diag
	for i := range v.Processes {
		p := &v.Processes[i]
		if p.OOM == nil {
			continue
		}
		pid := pidLabel(p.PID)
		for _, k := range api.OOMKinds() {
			e.counter(d.oomEvents, float64(p.OOM.Events[k]), pid, p.UUID, p.GPU, string(k))
		}
		l := p.OOM.Last
		if l == nil {
			continue
		}
		lv := []string{pid, p.UUID, p.GPU, string(l.Result.Kind)}
		optGauge(e, d.oomRequested, l.Event.Requested, lv...)
		optGauge(e, d.oomFree, l.Result.Free, lv...)
		optGauge(e, d.oomCached, l.Result.Cached, lv...)
		optGauge(e, d.oomLargest, l.Event.LargestFreeBlock, lv...)
		if l.Floor.Known {
			optGauge(e, d.oomFloor, push.Optional{Value: l.Floor.Bytes, Set: true}, lv...)
		}
		e.gauge(d.oomTime, float64(l.Time.UnixNano())/1e9, lv...)
	}
	for i := range v.Processes {
		p := &v.Processes[i]
		for _, ph := range p.PhasePeaks {
			gauge(e, d.phasePeak, ph.PeakAllocated, pidLabel(p.PID), p.UUID, p.GPU, ph.Phase)
		}
		for _, en := range p.TRTEngines {
			lv := []string{pidLabel(p.PID), p.UUID, p.GPU, en.Engine}
			gauge(e, d.trtContexts, en.Contexts, lv...)
			optGauge(e, d.trtContextBytes, en.ContextBytes, lv...)
			optGauge(e, d.trtHeld, en.HeldBytes, lv...)
			optGauge(e, d.trtWeights, en.WeightsBytes, lv...)
			optGauge(e, d.trtStreamable, en.StreamableBytes, lv...)
			optGauge(e, d.trtBudget, en.StreamingBudgetBytes, lv...)
		}
	}
	if v.NVML.Up {
		for _, r := range capacity.Reclaimable(v) {
			gauge(e, d.reclaimable, r.Bytes, r.UUID, r.GPU)
		}
	}
	type key struct {
		pid           uint32
		runtime, name string
	}
	seen := map[key]bool{}
	for i := range v.Processes {
		p := &v.Processes[i]
		for _, rt := range p.Runtimes {
			names := make([]string, 0, len(rt.Allocator))
			for n := range rt.Allocator {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				k := key{p.PID, rt.Name, n}
				if seen[k] {
					continue // the same runtime on several GPUs, or two reporters
				}
				seen[k] = true
				e.gauge(d.allocatorInfo, 1, strconv.FormatUint(uint64(p.PID), 10), rt.Name, n, rt.Allocator[n])
			}
		}
	}
}
