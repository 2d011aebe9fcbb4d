package triage

import (
	"strings"
	"testing"
	"time"

	"github.com/vram-exporter/vram_exporter/api"
)

const gib = 1 << 30

func u(v uint64) *uint64 { return &v }

// steadyCached is a steady process holding 6 GiB cached of 8 GiB reserved, pushed by
// the given runtime with the given allocator settings.
func steadyCached(runtime string, settings map[string]string) api.Process {
	now := time.Unix(10000, 0)
	return api.Process{PID: 7, UUID: "GPU-a", GPU: "0", Pushed: true,
		Runtimes:       []api.Runtime{{Name: runtime, Allocator: settings}},
		AllocatedBytes: u(2 * gib), ReservedBytes: u(8 * gib), CachedBytes: u(6 * gib),
		Trend: &api.Trend{Verdict: string(api.VerdictSteady), Since: now.Add(-time.Hour)}}
}

func TestCacheAdviceByRuntimeAndSettings(t *testing.T) {
	now := time.Unix(10000, 0)
	tests := []struct {
		name       string
		p          api.Process
		want, none []string
	}{
		{"torch default", steadyCached("torch", nil), []string{"torch.cuda.empty_cache()", "expandable_segments:True"}, nil},
		{"torch with expandable segments", steadyCached("torch", map[string]string{"expandable_segments": "True"}),
			[]string{"torch.cuda.empty_cache()", "already on"}, []string{"expandable_segments:True"}},
		{"torch cudaMallocAsync", steadyCached("torch", map[string]string{"backend": "cudaMallocAsync"}),
			[]string{"cudaMallocAsync"}, []string{"expandable_segments:True"}},
		// The measured case: a JAX process advised torch's cures.
		{"jax preallocated (default)", steadyCached("jax", nil), []string{"XLA_PYTHON_CLIENT_MEM_FRACTION=0.75)", "XLA_PYTHON_CLIENT_PREALLOCATE=false"},
			[]string{"empty_cache", "expandable_segments"}},
		{"jax preallocated, fraction set", steadyCached("jax", map[string]string{"preallocate": "true", "mem_fraction": "0.5"}),
			[]string{"XLA_PYTHON_CLIENT_MEM_FRACTION=0.5)"}, []string{"empty_cache", "expandable_segments"}},
		{"jax without preallocation", steadyCached("jax", map[string]string{"preallocate": "false"}),
			[]string{"BFC allocator keeps", "XLA_PYTHON_CLIENT_ALLOCATOR=platform"}, []string{"empty_cache", "expandable_segments", "preallocated"}},
		{"cupy", steadyCached("cupy", map[string]string{"pool_limit": "4294967296"}), []string{"free_all_blocks()", "; the pool is capped at 4 GiB"},
			[]string{"empty_cache", "expandable_segments"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := diagnose(tt.p, nil, now, true)
			for _, w := range tt.want {
				if !strings.Contains(d, w) {
					t.Errorf("diagnosis lacks %q:\n%s", w, d)
				}
			}
			for _, w := range tt.none {
				if strings.Contains(d, w) {
					t.Errorf("diagnosis must not say %q:\n%s", w, d)
				}
			}
		})
	}
}

func withOOM(p api.Process, kind api.OOMKind, e api.OOMEvent) api.Process {
	e.Kind = kind
	p.OOM = &api.OOM{Events: map[api.OOMKind]uint64{api.OOMShortage: 0, api.OOMFragmentation: 0, api.OOMPeak: 0, api.OOMUnknown: 0}, Last: &e}
	p.OOM.Events[kind] = 1
	return p
}

func TestOOMWordsByKindAndRuntime(t *testing.T) {
	ev := api.OOMEvent{Seq: 1, RequestedBytes: u(3 * gib), FreeBytes: u(1 * gib), CachedBytes: u(2 * gib),
		AllocatedBytes: u(6 * gib), FloorBytes: u(2 * gib), LargestFreeBlockBytes: u(512 << 20)}
	tests := []struct {
		name       string
		p          api.Process
		want, none []string
	}{
		{"shortage", withOOM(steadyCached("torch", nil), api.OOMShortage, ev),
			[]string{"1 out-of-memory error (1 shortage)", "asked for 3 GiB with 1 GiB free and 2 GiB cached", "lower the batch size or cap the input"}, nil},
		{"fragmentation, torch", withOOM(steadyCached("torch", nil), api.OOMFragmentation, ev),
			[]string{"fragmentation", "largest free block 512 MiB", "expandable_segments:True", "max_split_size_mb:3072"}, nil},
		{"fragmentation, torch with max_split_size_mb set", withOOM(steadyCached("torch", map[string]string{"max_split_size_mb": "512"}), api.OOMFragmentation, ev),
			[]string{"expandable_segments:True"}, []string{"max_split_size_mb:"}},
		{"fragmentation, torch with expandable segments", withOOM(steadyCached("torch", map[string]string{"expandable_segments": "True"}), api.OOMFragmentation, ev),
			[]string{"already on", "other streams or in CUDA-graph private pools"}, []string{"set PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb"}},
		{"fragmentation, jax", withOOM(steadyCached("jax", nil), api.OOMFragmentation, ev),
			[]string{"BFC pool is fragmented"}, []string{"empty_cache", "expandable_segments"}},
		{"peak", withOOM(steadyCached("torch", nil), api.OOMPeak, ev),
			[]string{"a demand of 9 GiB against a usual floor of 2 GiB", "fewer concurrent requests"}, nil},
		{"unknown", withOOM(steadyCached("torch", nil), api.OOMUnknown, api.OOMEvent{Seq: 1}),
			[]string{"said too little"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := diagnose(tt.p, nil, time.Unix(10000, 0), true)
			for _, w := range tt.want {
				if !strings.Contains(d, w) {
					t.Errorf("diagnosis lacks %q:\n%s", w, d)
				}
			}
			for _, w := range tt.none {
				if strings.Contains(d, w) {
					t.Errorf("diagnosis must not say %q:\n%s", w, d)
				}
			}
		})
	}
}

func TestReclaimWords(t *testing.T) {
	g := api.GPU{Index: 0, FreeBytes: 2 * gib, ReclaimableBytes: 31 * gib, ReclaimableProcesses: 3}
	if got, want := reclaimWords(g), "GPU 0 has 2 GiB free but 31 GiB cached in 3 processes: full of caches, not of work"; !strings.HasPrefix(got, want) {
		t.Errorf("got %q, want it to start %q", got, want)
	}
	for _, g := range []api.GPU{
		{FreeBytes: 40 * gib, ReclaimableBytes: 31 * gib, ReclaimableProcesses: 3}, // plenty free: not the page
		{FreeBytes: 0, ReclaimableBytes: gib - 1, ReclaimableProcesses: 1},         // too little to matter
	} {
		if got := reclaimWords(g); got != "" {
			t.Errorf("%+v: got %q, want nothing", g, got)
		}
	}
	h := &api.Headroom{Workers: 0, WorkersIfReclaimed: 3, LargestWorkerBytes: 10 * gib}
	if got := headroomReclaimWords(h); got != "no room for another 10 GiB worker (3 if the caches were handed back)" {
		t.Errorf("headroom words %q", got)
	}
}

func TestPhaseWordsNameThePeak(t *testing.T) {
	p := steadyCached("torch", nil)
	if got := phaseWords(p); got != "" {
		t.Errorf("no phases: %q", got)
	}
	p.PhasePeaks = []api.PhasePeak{{Phase: "infer", PeakAllocatedBytes: 1 * gib}, {Phase: "postprocess", PeakAllocatedBytes: 512 << 20}, {Phase: "preprocess", PeakAllocatedBytes: 3 * gib}}
	if got, want := phaseWords(p), "allocated peaks in phase preprocess (3 GiB), then infer (1 GiB)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if d := diagnose(p, nil, time.Unix(10000, 0), true); !strings.Contains(d, "allocated peaks in phase preprocess") {
		t.Errorf("diagnosis lacks the phase: %s", d)
	}
}

func TestTRTWordsWhenContextsDominate(t *testing.T) {
	p := steadyCached("tensorrt", nil)
	eng := func(contexts, per, held, weights uint64) api.TRTEngine {
		return api.TRTEngine{Engine: "trt.weights", Contexts: contexts, ContextBytes: u(per), HeldBytes: u(held), WeightsBytes: u(weights)}
	}
	p.TRTEngines = []api.TRTEngine{eng(4, 1228<<20, 4*(1228<<20), 2*gib)}
	if got := trtWords(p); !strings.HasPrefix(got, "engine trt.weights: 4 contexts × 1.2 GiB of activation memory (4.8 GiB, more than its 2 GiB of weights): contexts that never run concurrently can share one user-managed buffer") {
		t.Errorf("got %q", got)
	}
	for _, e := range []api.TRTEngine{
		eng(4, 1228<<20, 1228<<20, 2*gib), // already sharing one buffer
		eng(4, 512<<20, 2*gib, 8*gib),     // weights dominate
		eng(1, 4*gib, 4*gib, 1*gib),       // one context: nothing to share
	} {
		p.TRTEngines = []api.TRTEngine{e}
		if got := trtWords(p); got != "" {
			t.Errorf("%+v: got %q, want nothing", e, got)
		}
	}
}
