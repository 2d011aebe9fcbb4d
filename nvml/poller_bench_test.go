//go:build cgo

package nvml_test

import (
	"testing"

	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/nvml/nvmltest"
)

// BenchmarkPoll measures one poll of 8 GPUs × 64 processes against the fake NVML, whose
// calls cost next to nothing, so ns/op is the poller's own overhead (plus the fake's
// process-list slices, which the real go-nvml allocates too).
func BenchmarkPoll(b *testing.B) {
	srv := nvmltest.NewServer(nvmltest.H200s(8, 64)...)
	h := newHarness(b, srv)
	h.start()
	h.waitParked() // Init done, first poll published, Run parked on its ticker
	p := h.p
	if s := p.Poll(); !s.Up || len(s.Processes) != 8*64 {
		b.Fatalf("unexpected snapshot: up=%v processes=%d", s.Up, len(s.Processes))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = p.Poll()
	}
}

// BenchmarkLatest is what a scrape pays to get the data: one atomic load.
func BenchmarkLatest(b *testing.B) {
	p := nvml.NewPoller(nvmltest.NewServer(), nvml.Options{}, zap.NewNop())
	b.ReportAllocs()
	for b.Loop() {
		_ = p.Latest()
	}
}
