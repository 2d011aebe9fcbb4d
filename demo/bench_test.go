//go:build cgo

package demo

import (
	"testing"
	"time"

	"github.com/vram-exporter/vram_exporter/clock"
	"github.com/vram-exporter/vram_exporter/push"
)

// BenchmarkSimulatedSecond is the demo loop's cost per simulated second on the default
// node (4 H200s, 10 processes): one step, the pushes that fall due into a real Store,
// and the NVML update. At --demo.speed=60 the loop runs it 60 times a real second.
func BenchmarkSimulatedSecond(b *testing.B) {
	n, _ := New(h200s(4, 1), epoch)
	clk := clock.NewFake(epoch)
	store := push.NewStore(time.Hour, 0, clk)
	s := 0
	b.ReportAllocs()
	for b.Loop() {
		s++
		n.AdvanceTo(epoch.Add(time.Duration(s)*time.Second), store)
	}
}
