package trend

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// BenchmarkObserve feeds 1,000 (pid, uuid) series round-robin at a 1 s cadence, so
// every 30th round closes a bucket for each: ns/op is the amortised cost of one sample.
// The load variant's client counts its requests in flight, at rest every other sample.
func BenchmarkObserve(b *testing.B) {
	for _, c := range []struct {
		n         int
		load, saw bool
	}{{1, false, false}, {1000, false, false}, {1000, true, false}, {1000, false, true}} {
		n := c.n
		name := fmt.Sprintf("series=%d", n)
		if c.load {
			name += "/load"
		}
		if c.saw {
			name += "/sawtooth"
		}
		sample := func(k Key, r int) Sample {
			s := sample(k, r)
			s.InFlight, s.HasInFlight = uint32(r%2), c.load
			if c.saw {
				// A collector's sawtooth: 30 MiB/min of garbage freed every 10 minutes,
				// whose troughs the analysis reads at every bucket close.
				g := float64(r%600) / 60 * 30 * (1 << 20)
				s.Allocated += g
				s.Reserved += g
				s.Used += g
			}
			return s
		}
		b.Run(name, func(b *testing.B) {
			e, _ := NewEngine(DefaultConfig())
			keys := make([]Key, n)
			for i := range keys {
				keys[i] = Key{PID: uint32(1000 + i), Start: 1, UUID: "GPU-5f1e3c2a-8b7d-4e09-a6c1-93d2f4b8e710"}
			}
			// Fill the long window first so the benchmark measures steady state.
			warm := int(DefaultConfig().LongWindow / time.Second)
			for r := range warm {
				for i := range keys {
					e.Observe(sample(keys[i], r))
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := warm + i/n
				e.Observe(sample(keys[i%n], r))
			}
		})
	}
}

func sample(k Key, r int) Sample {
	v := float64(1<<30) + float64(r)*1000 + float64(r%7)*1e6
	return Sample{Key: k, T: t0.Add(time.Duration(r) * time.Second),
		Used: v + 600<<20, Allocated: v / 2, Reserved: v, HasUsed: true, HasAllocated: true, HasReserved: true}
}

// TestMemoryPerSeries measures the heap one (pid, uuid) costs once its long window is
// full, with runtime.MemStats before and after creating 1,000 of them.
func TestMemoryPerSeries(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 1,000 series")
	}
	// A client that reports its requests in flight adds the floors at rest, where in
	// their buckets they were taken, and the bucket flags (≈ 2.3 KB); one that does not
	// pays nothing for them.
	for _, c := range []struct {
		load bool
		max  float64
	}{{false, 16 * 1024}, {true, 19 * 1024}} {
		const n = 1000
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		e, _ := NewEngine(DefaultConfig())
		for i := range n {
			k := Key{PID: uint32(i + 1), Start: 1, UUID: "GPU-5f1e3c2a-8b7d-4e09-a6c1-93d2f4b8e710"}
			for r := 0; r < 3; r++ { // a bucket closes: the growth slice exists too
				s := sample(k, r*30)
				s.HasInFlight = c.load
				e.Observe(s)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		per := float64(after.HeapAlloc-before.HeapAlloc) / n
		t.Logf("heap per (pid, uuid) series, requests in flight reported %v: %.0f bytes (runtime.MemStats, %d series)", c.load, per, n)
		if per > c.max {
			t.Errorf("requests in flight reported %v: %.0f bytes per series, want under %.0f KiB", c.load, per, c.max/1024)
		}
		runtime.KeepAlive(e)
	}
}

// BenchmarkNoisyLong is the slow rule's test of loud floors at its worst: a long window
// (240 buckets) whose newest quarter is loud, so exactFit's repeated medians run over
// all of it. It runs only at closes where the long window's envelope already fits a
// rising line, on a series whose floors jump.
func BenchmarkNoisyLong(b *testing.B) {
	const nl = 240
	xs, _, fs := busyFloors(nl, 80, 4*mib, 0, 2*mib, 0, 1)
	var sc analysisScratch
	if !sc.noisyLong(xs, fs, nl, 0.1*mib, 2*mib) {
		b.Fatal("the benchmark's floors are not loud")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		sc.noisyLong(xs, fs, nl, 0.1*mib, 2*mib)
	}
}
