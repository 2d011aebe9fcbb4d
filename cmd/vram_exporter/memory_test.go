package main

import (
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
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

// Every page of the daemon's binary that the kernel maps counts in its RSS, and on some
// kernels nearly all of it is mapped, touched or not (Linux 6.18 on ext4 showed the
// whole text and read-only data resident right after start). go-nvml's moq mocks were
// 1.2 MB of it, linked only for demo mode's fake NVML, which does without them.
func TestDaemonDoesNotLinkTheNVMLMocks(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "github.com/NVIDIA/go-nvml/pkg/nvml/mock" {
			t.Fatalf("the daemon links %s", pkg)
		}
	}
}
