//go:build cgo

package nvml_test

import (
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/nvml/nvmltest"
)

// BenchmarkPoll measures one steady poll of 8 GPUs × 64 processes against the fake
// NVML, whose calls cost next to nothing, so ns/op is the poller's own overhead (plus the
// fake's process-list slices, which the real go-nvml allocates too). The clock does not
// move, so the slower cadences (graphics and MPS lists, BAR1, MIG mode) are not due and
// their kept figures are merged, as on most real polls.
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

// BenchmarkRawCalls makes every NVML call a poll of 8 GPUs × 64 processes can make
// (the device count; per GPU memory, BAR1, MIG mode and the three process lists; a steady
// poll makes only the count, memory and the compute list) straight
// against the same fake, with handles read once as the poller keeps them. BenchmarkPoll
// minus this is the poller's own work: merging the lists, building the snapshot, copying
// the error counters. Identity (handle, UUID, name, PCI bus id) and calls a GPU does not
// support are already read once, not per poll, so they are not here either.
func BenchmarkRawCalls(b *testing.B) {
	srv := nvmltest.NewServer(nvmltest.H200s(8, 64)...)
	if ret := srv.Init(); ret != gonvml.SUCCESS {
		b.Fatal(ret)
	}
	n, _ := srv.DeviceGetCount()
	handles := make([]gonvml.Device, n)
	for i := range handles {
		handles[i], _ = srv.DeviceGetHandleByIndex(i)
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = srv.DeviceGetCount()
		for _, h := range handles {
			_, _ = h.GetMemoryInfo_v2()
			_, _ = h.GetBAR1MemoryInfo()
			_, _, _ = h.GetMigMode()
			_, _ = h.GetComputeRunningProcesses()
			_, _ = h.GetGraphicsRunningProcesses()
			_, _ = h.GetMPSComputeRunningProcesses()
		}
	}
}
