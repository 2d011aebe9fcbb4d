package main

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vram-exporter/vram_exporter/apiserver"
	"github.com/vram-exporter/vram_exporter/join"
)

type noView struct{}

func (noView) Latest() *join.View { return nil }

// The API's refusal counter is gathered on every scrape, so its garbage sets how often
// a busy scraper makes the daemon collect: a Registry's Gather left 32 KiB a call.
func TestAPIRejectedGathersWithLittleGarbage(t *testing.T) {
	g := apiRejected(apiserver.NewHandler(noView{}, apiserver.Options{}))
	if n, err := testutil.GatherAndCount(g, "vram_api_requests_rejected_total"); err != nil || n != 1 {
		t.Fatalf("gathered %d series (%v), want one", n, err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const calls = 100
	for range calls {
		if _, err := g.Gather(); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / calls
	t.Logf("%d bytes allocated per gather", per)
	if per > 1<<10 {
		t.Fatalf("%d bytes allocated per gather, want under 1 KiB", per)
	}
}
