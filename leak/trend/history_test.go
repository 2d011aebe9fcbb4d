package trend

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestIdleRest: the history counts a bucket's samples that came back to its floor. A
// process at rest every other sample keeps that count while a steep leak lifts its
// floor, from the bucket after the onset on (the bucket's own floor gives the pace
// before the closed floors do); load in flight drawn anew at every sample comes back to
// it by chance only.
func TestIdleRest(t *testing.T) {
	cfg := DefaultConfig()
	const every = 2 * time.Second
	run := func(alloc func(el time.Duration) float64, d time.Duration) *history {
		h := newHistory(cfg, 1, 0)
		for el := time.Duration(0); el <= d; el += every {
			h.add(t0.Add(el), []float64{alloc(el)}, true)
		}
		return h
	}
	bucket := func(h *history, el time.Duration) (int, int) {
		r, o, ok := h.idleOf(h.bucketOf(t0.Add(el)))
		if !ok {
			t.Fatalf("no idle count for the bucket at %s", el)
		}
		return r, o
	}
	onset := 10 * time.Minute
	leak := func(el time.Duration) float64 {
		v := line(4096*mib, 500*mib, onset)(el)
		if (el/every)%2 == 1 {
			v += 300 * mib // a request in flight
		}
		return v
	}
	h := run(leak, onset+5*time.Minute)
	for el := onset + 30*time.Second; el < onset+4*time.Minute; el += 30 * time.Second {
		if r, o := bucket(h, el); r < o/2-1 {
			t.Errorf("500 MiB/min leak, bucket at %s: %d of %d samples back at the floor, want about half", el, r, o)
		}
	}

	rng := rand.New(rand.NewPCG(1, 2))
	vals := map[time.Duration]float64{}
	load := func(el time.Duration) float64 {
		if v, ok := vals[el]; ok {
			return v
		}
		v := 4096*mib + 2048*mib*(0.3+0.7*rng.Float64())
		vals[el] = v
		return v
	}
	h = run(load, 15*time.Minute)
	total := 0
	for el := time.Minute; el < 14*time.Minute; el += 30 * time.Second {
		r, _ := bucket(h, el)
		total += r
	}
	if total > 4 {
		t.Errorf("load in flight at every sample: %d samples back at the floor over 26 buckets, want at most 4 (chance)", total)
	}
}

// TestIdleRestSkipsRepeats: the daemon samples at every poll and the client pushes on
// its own clock, so a push may be fed twice; a load drawn anew at every push, each fed
// twice, must not read as a process at rest (its repeats sit exactly at the floor when
// the floor is theirs). Fed as fresh samples, the repeats come back to the floor.
func TestIdleRestSkipsRepeats(t *testing.T) {
	cfg := DefaultConfig()
	rng := rand.New(rand.NewPCG(3, 4))
	count := func(markRepeats bool) int {
		h := newHistory(cfg, 1, 0)
		v := 0.0
		for i, el := 0, time.Duration(0); el <= 15*time.Minute; i, el = i+1, el+time.Second {
			fresh := i%2 == 0
			if fresh {
				v = 4096*mib + 2048*mib*(0.3+0.7*rng.Float64())
			}
			h.add(t0.Add(el), []float64{v}, fresh || !markRepeats)
		}
		total := 0
		for el := time.Minute; el < 14*time.Minute; el += 30 * time.Second {
			r, _, _ := h.idleOf(h.bucketOf(t0.Add(el)))
			total += r
		}
		return total
	}
	if n := count(true); n > 4 {
		t.Errorf("repeats skipped: %d samples back at the floor over 26 buckets, want at most 4 (chance)", n)
	}
	if n := count(false); n < 26 {
		t.Errorf("repeats counted: %d samples back at the floor over 26 buckets, want one a bucket at least", n)
	}
}
