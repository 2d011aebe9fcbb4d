package trend

import (
	"math"
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
			h.add(t0.Add(el), []float64{alloc(el)}, true, loadUnknown)
		}
		return h
	}
	bucket := func(h *history, el time.Duration) (int, int) {
		r, o, ok := h.idleOf(h.bucketOf(t0.Add(el)), false)
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
			h.add(t0.Add(el), []float64{v}, fresh || !markRepeats, loadUnknown)
		}
		total := 0
		for el := time.Minute; el < 14*time.Minute; el += 30 * time.Second {
			r, _, _ := h.idleOf(h.bucketOf(t0.Add(el)), false)
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

// TestReportedRest: where the client reports its requests in flight, a bucket keeps the
// least of its samples at rest apart from its floor (the least of all samples, which the
// fast rule needs), and its idle count is those samples; a bucket with none at rest has
// no floor at rest and counts none; other columns are untouched.
func TestReportedRest(t *testing.T) {
	cfg := DefaultConfig()
	h := newHistory(cfg, 2, 0)
	// The bucket before: its client did not say yet.
	h.add(t0.Add(-cfg.Bucket), []float64{50 * mib, 1 * mib}, true, loadUnknown)
	// Bucket 0: at rest at 100 MiB twice, and two samples with requests in flight, one
	// of them below the floor at rest (so that the test tells the two floors apart).
	vals := []struct {
		alloc, other float64
		load         int
	}{{100, 5, loadIdle}, {90, 4, loadBusy}, {900, 9, loadBusy}, {100, 6, loadIdle}}
	for i, v := range vals {
		h.add(t0.Add(time.Duration(i)*time.Second), []float64{v.alloc * mib, v.other * mib}, true, v.load)
	}
	// Bucket 1: never at rest.
	for i, a := range []float64{700, 650, 800} {
		h.add(t0.Add(cfg.Bucket+time.Duration(i)*time.Second), []float64{a * mib, 1 * mib}, true, loadBusy)
	}
	h.add(t0.Add(2*cfg.Bucket), []float64{1, 1}, true, loadBusy) // closes bucket 1
	b0 := h.bucketOf(t0)
	if f, ok := h.restAt(b0); !ok || f != 100*mib {
		t.Errorf("bucket 0: floor at rest %.0f MiB (%v), want the 100 MiB at rest", f/mib, ok)
	}
	if f, _ := h.get(0, b0); f != 90*mib {
		t.Errorf("bucket 0: floor %.0f MiB, want every sample's least, 90", f/mib)
	}
	if f, _ := h.get(1, b0); f != 4*mib {
		t.Errorf("bucket 0, other column: floor %.0f MiB, want every sample's least, 4", f/mib)
	}
	if r, o, _ := h.idleOf(b0, false); r != 2 || o != 4 || !h.reportedAt(b0) {
		t.Errorf("bucket 0: %d of %d samples at rest (reported %v), want 2 of 4, reported", r, o, h.reportedAt(b0))
	}
	if f, ok := h.restAt(b0 + 1); ok {
		t.Errorf("bucket 1: a floor at rest (%.0f MiB) without a sample at rest", f/mib)
	}
	if r, o, _ := h.idleOf(b0+1, false); r != 0 || o != 3 {
		t.Errorf("bucket 1: %d of %d samples at rest, want 0 of 3", r, o)
	}
	if f, ok := h.restAt(b0 - 1); ok || h.reportedAt(b0-1) {
		t.Errorf("the bucket before the client first said: a floor at rest %.0f MiB (%v), reported %v; want neither", f/mib, ok, h.reportedAt(b0-1))
	}
	if !h.everRest {
		t.Error("a sample at rest was seen, everRest is false")
	}
}

// TestIdleExact: the exact count (what the test of lost idle moments reads) takes a
// pace's allowance only where the floor rose in both of the bucket's rises. A server
// that is never idle, sampled every 10 s, lifts its floor by random amounts, as often
// down as up; the loose count, with the best of three paces and an eighth of the pace's
// rise as allowance, puts its few samples together by chance more than twice as often
// as the exact one. A steep leak at rest every other sample keeps its exact count from
// the second bucket after its onset on, as its floor rises in every bucket.
func TestIdleExact(t *testing.T) {
	cfg := DefaultConfig()
	const every = 10 * time.Second
	rng := rand.New(rand.NewPCG(5, 6))
	h := newHistory(cfg, 1, 0)
	for el := time.Duration(0); el <= 2*time.Hour; el += every {
		v := 4096.0 * mib
		for l, p := math.Exp(-8), rng.Float64(); p > l; p *= rng.Float64() {
			v += 160 * mib * (0.2 + 0.8*rng.Float64())
		}
		h.add(t0.Add(el), []float64{v}, true, loadUnknown)
	}
	loose, exact, seen := 0, 0, 0
	for el := time.Minute; el < 2*time.Hour-time.Minute; el += cfg.Bucket {
		b := h.bucketOf(t0.Add(el))
		r, o, _ := h.idleOf(b, false)
		x, _, _ := h.idleOf(b, true)
		loose, exact, seen = loose+r, exact+x, seen+o
	}
	t.Logf("never idle, every 10 s: %d loose and %d exact returns of %d samples", loose, exact, seen)
	if 40*exact > seen || 2*exact > loose {
		t.Errorf("never idle, every 10 s: %d exact returns of %d samples (loose %d), want under 2.5 %% and under half the loose count", exact, seen, loose)
	}

	onset := 10 * time.Minute
	h = newHistory(cfg, 1, 0)
	for i, el := 0, time.Duration(0); el <= onset+5*time.Minute; i, el = i+1, el+2*time.Second {
		v := line(4096*mib, 500*mib, onset)(el)
		if i%2 == 1 {
			v += 300 * mib // a request in flight
		}
		h.add(t0.Add(el), []float64{v}, true, loadUnknown)
	}
	for el := onset + time.Minute; el < onset+4*time.Minute; el += cfg.Bucket {
		if x, o, _ := h.idleOf(h.bucketOf(t0.Add(el)), true); x < o/2-1 {
			t.Errorf("500 MiB/min leak, bucket at %s: %d of %d samples back at the floor by the exact count, want about half", el-onset, x, o)
		}
	}
}

// TestRestPointWhen: a bucket's floor at rest keeps where in the bucket its sample was
// taken (restRun places each at its own moment): the least of the samples at rest, not
// the first of them, to 1/256 of the bucket.
func TestRestPointWhen(t *testing.T) {
	cfg := DefaultConfig()
	h := newHistory(cfg, 1, 0)
	b := h.bucketOf(t0) + 1
	start := time.Unix(0, b*int64(cfg.Bucket))
	for _, s := range []struct {
		after time.Duration
		alloc float64
		load  int
	}{{2 * time.Second, 120, loadIdle}, {9 * time.Second, 80, loadBusy}, {21 * time.Second, 110, loadIdle}, {27 * time.Second, 115, loadIdle}} {
		h.add(start.Add(s.after), []float64{s.alloc * mib}, true, s.load)
	}
	h.add(start.Add(cfg.Bucket), []float64{1}, true, loadBusy) // closes bucket b
	when, v, ok := h.restPoint(b)
	want := 21.0 / cfg.Bucket.Seconds()
	if !ok || v != 110*mib || math.Abs(when-want) > 1.0/256 {
		t.Errorf("floor at rest %.0f MiB at %.4f of the bucket (%v), want 110 MiB at %.4f", v/mib, when, ok, want)
	}
}
