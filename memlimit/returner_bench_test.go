//go:build linux

package memlimit

import (
	"runtime/debug"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user and system CPU time so far: a forced collection's mark
// workers run on every core, so wall time per op undercounts it.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// live is a daemon-sized live heap: ~12 MiB in 64-byte pointerful nodes, as the
// joined views, trends and procfs caches are.
type node struct {
	next *node
	_    [7]uint64 // the size of a view node
}

func liveHeap() *node {
	var head *node
	for range 12 << 20 / 64 {
		head = &node{next: head}
	}
	return head
}

var sink []byte

// churn is what the daemon allocates between two checks at idle (20 s of ticks).
func churn() {
	for range 4096 {
		sink = make([]byte, 4096)
	}
}

// BenchmarkForcedReturn is what the old returner paid every 20 s at steady state once
// the runtime held more than 32 MiB: a forced collection and scavenge, then the
// heap growing back (page faults), on top of the allocation between checks.
func BenchmarkForcedReturn(b *testing.B) {
	keep := liveHeap()
	b.ReportAllocs()
	start := cpuTime(b)
	for b.Loop() {
		churn()
		debug.FreeOSMemory()
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
	_ = keep.next
}

// BenchmarkNoForcedReturn is the same allocation with the runtime's own collections
// only: the difference to BenchmarkForcedReturn is the forced return's cost.
func BenchmarkNoForcedReturn(b *testing.B) {
	keep := liveHeap()
	b.ReportAllocs()
	start := cpuTime(b)
	for b.Loop() {
		churn()
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
	_ = keep.next
}
