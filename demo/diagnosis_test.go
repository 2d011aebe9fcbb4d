//go:build cgo

package demo

import (
	"testing"

	"github.com/vram-exporter/vram_exporter/api"
	"github.com/vram-exporter/vram_exporter/capacity"
)

// Each diagnosis scenario shows through the real join: an OOM of each kind counted under
// that kind, the JAX process's settings with nothing reclaimable, the TensorRT engine's
// four contexts, and a GPU whose processes hold reclaimable caches.
func TestDiagnosisScenariosThroughTheRealJoin(t *testing.T) {
	p := newPipeline(t, h200s(4, 1))
	want := map[Scenario]api.OOMKind{OOMShortage: api.OOMShortage, OOMFragmentation: api.OOMFragmentation, OOMPeak: api.OOMPeak}
	for s := 1; s <= 25*60; s++ {
		p.step()
	}
	v := p.step()
	scen := p.scenarios()
	seen := map[Scenario]bool{}
	for _, pr := range v.Processes {
		sc := scen[pr.PID]
		seen[sc] = true
		switch sc {
		case OOMShortage, OOMFragmentation, OOMPeak:
			if pr.OOM == nil || pr.OOM.Last == nil {
				t.Fatalf("%s: no OOM stats after 25 minutes", sc)
			}
			// Failures at 150 s, 750 s and 1350 s of age, each of its kind.
			if got := pr.OOM.Events[want[sc]]; got != 3 || pr.OOM.Last.Result.Kind != want[sc] {
				t.Errorf("%s: events %v, last %s (%s); want 3 of %s", sc, pr.OOM.Events, pr.OOM.Last.Result.Kind, pr.OOM.Last.Result.Reason, want[sc])
			}
		case JAXPreallocated:
			if pr.Runtimes[0].Name != "jax" || pr.Runtimes[0].Allocator["preallocate"] != "true" || pr.ReclaimableBytes != 0 {
				t.Errorf("jax: runtimes %+v, reclaimable %d", pr.Runtimes, pr.ReclaimableBytes)
			}
		case TensorRTContexts:
			if len(pr.Pools) != 5 || len(pr.TRTEngines) != 1 || pr.TRTEngines[0].Contexts != 4 {
				t.Errorf("tensorrt: %d pools, engines %+v; want weights and four contexts", len(pr.Pools), pr.TRTEngines)
			}
		}
	}
	for _, sc := range []Scenario{OOMShortage, OOMFragmentation, OOMPeak, JAXPreallocated, TensorRTContexts} {
		if !seen[sc] {
			t.Errorf("scenario %s not in the view", sc)
		}
	}
	var reclaim uint64
	for _, r := range capacity.Reclaimable(v) {
		reclaim = max(reclaim, r.Bytes)
	}
	if reclaim < 1<<30 {
		t.Errorf("no GPU holds a GiB of reclaimable cache: %+v", capacity.Reclaimable(v))
	}
}
