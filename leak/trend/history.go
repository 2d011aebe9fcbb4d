package trend

import (
	"math"
	"time"
)

// history is the bounded memory of one (pid, uuid) or one GPU: for a few columns
// (series) that share the bucket clock, the floor (minimum) of every closed bucket over
// the long window, and the spread (maximum − minimum) of the newest few.
//
// Why floors: a serving process's memory is a sawtooth (activations come and go with
// every request); its minimum over a bucket is the memory that stays, which is what a
// leak grows and what a request burst does not. Everything else (robust fits, noise,
// give-back excursions, envelopes) is computed from these floors at each bucket close
// (see analyze): O(long window) per close, that is O(1) per sample amortised over the
// samples of a bucket, with no running sums to drift.
type history struct {
	bucket time.Duration
	idx    []int64     // bucket index held by each slot; math.MinInt64 when empty
	floor  [][]float64 // floor[c][slot]; NaN when the column had no sample
	// spread[c][b % len]: max − min of the samples of bucket b, newest two short windows
	// and a few buckets only (the fast rule compares a rise's buckets with the quiet ones
	// before it; the short rule the newest half window's with the older ones, see
	// stretched: a load ramp that climbs and holds for a short window must not be all
	// the older buckets hold).
	spreadIdx []int64
	spread    [][]float64
	// first and last sample time of the newest few buckets, at spreadIdx's slots: how
	// much of a bucket's spread a steady rise explains (see fastRule).
	span []time.Duration
	// For one column (idleCol, −1 for none), over the long window at idx's slots: how many
	// samples of each bucket after its first (seen) came back to within restTol of the
	// bucket's floor once the floor's own pace is taken off (rest): the process's idle
	// moments, several to a bucket while it has any (see idle in analyze). Of a bucket's
	// first idleCap samples. exact: the same count held to restTol itself unless the
	// pace is a leak's (see idleRest), which the test of lost idle moments reads.
	idleCol    int
	rest, seen []uint8
	exact      []uint8
	// reported: the client said which of the bucket's samples were at rest.
	reported []bool
	// everRest: some sample since the last reset was at rest by the client's word.
	everRest bool
	// restFloor: idleCol's least value over the bucket's samples at rest, NaN when none
	// was (see addLoad). Kept apart from the floor: a fast leak's floor is its bucket's
	// first sample, the first at rest may come later in the bucket, and the fast rule's
	// tests of evenness need the former. reported and restFloor stay nil until the
	// client first reports its requests in flight.
	restFloor []float64
	// restWhen: where in its bucket the sample restFloor holds was taken, in 256ths of
	// the bucket (0 at its start; 0.12 s at the default 30 s): a leak's floors at rest
	// lie on its line to a few MiB once each is placed at its own moment (see analyze's
	// restRun). A byte a slot: 240 bytes a series that counts, at the defaults.
	restWhen []uint8

	started bool
	first   int64 // oldest bucket index ever closed since the last reset
	last    int64 // newest closed bucket

	cur     int64 // bucket being filled
	curOpen bool
	curMin  []float64 // NaN when no sample yet
	curMax  []float64
	curFrom time.Time // the current bucket's first and last sample
	curTo   time.Time
	// idleCol's current bucket: its first idleCap samples, as seconds since curFrom and
	// bytes (see idleRest).
	idleT, idleV []float64
	// The current bucket's samples that said how many requests were in flight (see
	// Sample.InFlight), those of them fresh, and the fresh ones with none in flight; and
	// idleCol's least value over the samples with none in flight (NaN when none).
	loadN, loadFresh, restN int
	restMin                 float64
	restMinT                time.Time // when restMin was taken
	// The current bucket's first and last sample at rest (idleCol), and, for the newest
	// closed bucket, how far the last rose above the first and over how long (0 where
	// the client said nothing of its load): whether a rise at rest still went on within
	// it.
	restFirstV, restLastV float64
	restFirstT, restLastT time.Time
	restRise              float64
	restSpan              time.Duration
	// lateRise: for idleCol's newest closed bucket, how far the least of its buffered
	// samples in the later half of their span stood above the least in the earlier
	// half, and lateSpan that span; 0 where either half had none (see late).
	lateRise float64
	lateSpan time.Duration
}

// A sample's load, as the client reported it.
const (
	loadUnknown = iota // the client does not report requests in flight
	loadIdle           // none in flight: the process at rest
	loadBusy           // some in flight
)

func newHistory(cfg Config, ncols, idleCol int) *history {
	n := int(cfg.LongWindow / cfg.Bucket)
	// Two short windows: with one, a load ramp's climb filled the older buckets that the
	// newest half window is compared with by the time its hold fitted a line (measured:
	// 2 of 100 load_ramp traces paged, 1 with two; TestLoadRampStretched 4 of 20, 0).
	ns := 2*int(cfg.ShortWindow/cfg.Bucket) + fastBuckets + 2
	h := &history{
		bucket:    cfg.Bucket,
		idx:       make([]int64, n),
		floor:     make([][]float64, ncols),
		spreadIdx: make([]int64, ns),
		spread:    make([][]float64, ncols),
		span:      make([]time.Duration, ns),
		curMin:    make([]float64, ncols),
		curMax:    make([]float64, ncols),
		idleCol:   idleCol,
	}
	if idleCol >= 0 {
		h.rest, h.seen, h.exact = make([]uint8, n), make([]uint8, n), make([]uint8, n)
		h.idleT, h.idleV = make([]float64, 0, idleCap), make([]float64, 0, idleCap)
	}
	// One backing array for all columns: fewer allocations, better locality.
	backing := make([]float64, n*ncols)
	sb := make([]float64, ns*ncols)
	for c := range h.floor {
		h.floor[c] = backing[c*n : (c+1)*n : (c+1)*n]
		h.spread[c] = sb[c*ns : (c+1)*ns : (c+1)*ns]
	}
	h.reset()
	return h
}

func (h *history) reset() {
	for i := range h.idx {
		h.idx[i] = math.MinInt64
	}
	for i := range h.spreadIdx {
		h.spreadIdx[i] = math.MinInt64
	}
	for c := range h.floor {
		h.curMin[c], h.curMax[c] = math.NaN(), math.NaN()
	}
	h.restMin, h.everRest = math.NaN(), false
	h.started, h.curOpen = false, false
}

func (h *history) bucketOf(t time.Time) int64 {
	ns := t.UnixNano()
	b := ns / int64(h.bucket)
	if ns%int64(h.bucket) < 0 {
		b--
	}
	return b
}

// bucketEnd is the time a bucket closes: verdicts computed at a close are dated there.
func (h *history) bucketEnd(b int64) time.Time {
	return time.Unix(0, (b+1)*int64(h.bucket))
}

// add folds one sample into the current bucket; fresh says whether the idle column's
// value is a new measurement (not a push the daemon already fed), which is all the idle
// count takes, and load what the client said of its requests in flight. It reports the index of the bucket it closed, if the sample belongs to a
// later bucket. Samples older than the current bucket (clock steps, reordering) are
// folded into the current one: dropping them would lose a floor, and they are at most a
// bucket late in practice.
func (h *history) add(t time.Time, vals []float64, fresh bool, load int) (closed int64, ok bool) {
	b := h.bucketOf(t)
	if h.curOpen && b > h.cur {
		closed, ok = h.cur, true
		h.close()
	}
	if !h.curOpen {
		h.cur, h.curOpen = b, true
		h.curFrom, h.curTo = t, t
		h.idleT, h.idleV = h.idleT[:0], h.idleV[:0]
		h.loadN, h.loadFresh, h.restN, h.restMin = 0, 0, 0, math.NaN()
		h.restFirstT, h.restLastT = time.Time{}, time.Time{}
	}
	if t.Before(h.curFrom) {
		h.curFrom = t
	}
	if t.After(h.curTo) {
		h.curTo = t
	}
	for c, v := range vals {
		if math.IsNaN(v) {
			continue
		}
		if math.IsNaN(h.curMin[c]) || v < h.curMin[c] {
			h.curMin[c] = v
		}
		if math.IsNaN(h.curMax[c]) || v > h.curMax[c] {
			h.curMax[c] = v
		}
		if c == h.idleCol && fresh && len(h.idleV) < idleCap {
			h.idleT, h.idleV = append(h.idleT, t.Sub(h.curFrom).Seconds()), append(h.idleV, v)
		}
		if c == h.idleCol && load != loadUnknown {
			h.addLoad(t, v, fresh, load == loadIdle)
		}
	}
	return closed, ok
}

// addLoad counts a sample of the idle column whose client said whether requests were in
// flight, and keeps the least of those at rest: the floor a leak grows, where the least
// of the others is load in flight, often far above it under traffic (see restAt).
func (h *history) addLoad(t time.Time, v float64, fresh, rest bool) {
	h.loadN++
	if fresh {
		h.loadFresh++
	}
	if !rest {
		return
	}
	if h.restFirstT.IsZero() || t.Before(h.restFirstT) {
		h.restFirstT, h.restFirstV = t, v
	}
	if !t.Before(h.restLastT) {
		h.restLastT, h.restLastV = t, v
	}
	if fresh {
		h.restN++
	}
	if math.IsNaN(h.restMin) || v < h.restMin {
		h.restMin, h.restMinT = v, t
	}
}

// restTol is how far a process's samples at rest may lie apart within a bucket once the
// floor's pace is taken off: the allocator counts bytes exactly and NVML whole MiB, and
// short-lived tensors jitter the floor by a few MiB.
const restTol = 4 << 20

// idleCap bounds the samples of a bucket the idle count looks at: a bucket's first 32
// (a sample a second fills a 30-second bucket).
const idleCap = 32

// idleRest is how many of the current bucket's buffered samples after the first came
// back to its floor: lie within restTol (plus an eighth of the pace's rise over the
// bucket) of its least sample once a pace is taken off. The pace is the one, of none,
// the newest closed bucket's rise and this bucket's own floor's rise over it, that
// finds the most: a leak's floor moves its idle moments along with it, and the newest
// rise lags a bucket behind a steep leak's onset, this bucket's own floor does not.
//
// exact is the same count without the eighth of the pace's rise unless the floor rose
// in both buckets: the allowance is for a steep leak's pace, known to a few per cent,
// and a leak's floor rises bucket after bucket. A server that is never idle lifts its
// floor by random amounts, as often down as up (the least load in flight, drawn anew),
// and the best of three paces with tens of MiB of allowance puts two of a bucket's few
// samples together by chance: on a load_diurnal trace's saturated hours (seed 50,
// sampled every 10 s) 1–5 of the 40 samples after the first in 10 minutes, against 0–1
// at pace 0, where its quiet hours came back 28 % of the time; the test of lost idle
// moments (idle in analyze) needs under a quarter of that. The fast rule keeps the
// loose count: a steep leak's onset (the newest rise still 0) is its to judge.
func (h *history) idleRest() (loose, exact int) {
	c, bs := h.idleCol, h.bucket.Seconds()
	paces := [3]float64{}
	if f1, ok := h.get(c, h.cur-1); ok {
		paces[2] = max(h.curMin[c]-f1, 0) / bs
		if f0, ok := h.get(c, h.cur-2); ok {
			paces[1] = max(f1-f0, 0) / bs
		}
	}
	agree := paces[1] > 0 && paces[2] > 0
	for _, p := range paces {
		dmin := math.Inf(1)
		for i, v := range h.idleV {
			dmin = math.Min(dmin, v-p*h.idleT[i])
		}
		near, on := 0, 0
		for i, v := range h.idleV {
			d := v - p*h.idleT[i] - dmin
			if d <= restTol+p*bs/8 {
				near++
				if d <= restTol || agree {
					on++
				}
			}
		}
		loose, exact = max(loose, near-1), max(exact, on-1)
	}
	return loose, exact
}

// idleOf is how many samples of bucket b after its first came back to its floor, by the
// loose count or the exact one (see idleRest), and how many there were, if the ring
// holds it (idleCol only).
func (h *history) idleOf(b int64, exact bool) (rest, seen int, ok bool) {
	s, held := h.slot(b)
	if h.idleCol < 0 || !held || h.seen[s] == 0 {
		return 0, 0, false
	}
	if exact {
		return int(h.exact[s]), int(h.seen[s]), true
	}
	return int(h.rest[s]), int(h.seen[s]), true
}

// restAt returns idleCol's floor over the samples of bucket b the client said were at
// rest, if it had any and the ring still holds it.
func (h *history) restAt(b int64) (float64, bool) {
	_, v, ok := h.restPoint(b)
	return v, ok
}

// restPoint is restAt with where in bucket b that floor's sample was taken (a share of
// the bucket, see restWhen).
func (h *history) restPoint(b int64) (when, v float64, ok bool) {
	s, held := h.slot(b)
	if h.reported == nil || !held || !h.reported[s] || math.IsNaN(h.restFloor[s]) {
		return 0, 0, false
	}
	return float64(h.restWhen[s]) / 256, h.restFloor[s], true
}

// reportedAt says whether the client said which of bucket b's samples were at rest.
func (h *history) reportedAt(b int64) bool {
	s, held := h.slot(b)
	return h.reported != nil && held && h.reported[s]
}

// slot is bucket b's slot in the long-window rings, if they still hold it.
func (h *history) slot(b int64) (int, bool) {
	n := int64(len(h.idx))
	s := int(((b % n) + n) % n)
	return s, h.idx[s] == b
}

func (h *history) close() {
	b := h.cur
	h.curOpen = false
	n := int64(len(h.idx))
	if h.started && b-h.last >= n {
		// Everything we hold is older than the long window: start over rather than walk
		// the gap bucket by bucket.
		cur, mx := append([]float64(nil), h.curMin...), append([]float64(nil), h.curMax...)
		h.reset()
		copy(h.curMin, cur)
		copy(h.curMax, mx)
	}
	if !h.started {
		h.started, h.first = true, b
	}
	s := int(b % n)
	ss := int(b % int64(len(h.spreadIdx)))
	h.idx[s], h.spreadIdx[ss] = b, b
	h.span[ss] = h.curTo.Sub(h.curFrom)
	if h.idleCol >= 0 {
		h.rest[s], h.seen[s], h.exact[s] = 0, 0, 0
		h.restSpan, h.restRise = 0, 0
		if h.reported != nil {
			h.reported[s], h.restFloor[s] = false, math.NaN()
		}
		h.lateRise, h.lateSpan = h.late()
		switch n := len(h.idleV); {
		case h.loadN > 0:
			if h.reported == nil {
				// Only a process whose client reports its requests in flight pays for
				// them (≈ 2.3 KB at the defaults).
				h.reported, h.restFloor = make([]bool, len(h.idx)), make([]float64, len(h.idx))
				h.restWhen = make([]uint8, len(h.idx))
			}
			// The client said which samples were at rest: they are the idle moments,
			// counted as they are rather than inferred from values that come back to
			// the floor (each at most idleCap, like the inferred count).
			h.rest[s], h.seen[s] = uint8(min(h.restN, idleCap)), uint8(min(h.loadFresh, idleCap))
			h.exact[s] = h.rest[s]
			h.reported[s], h.restFloor[s] = true, h.restMin
			if !math.IsNaN(h.restMin) {
				at := float64(h.restMinT.UnixNano()-b*int64(h.bucket)) / float64(h.bucket)
				h.restWhen[s] = uint8(min(max(at*256, 0), 255))
			}
			h.everRest = h.everRest || !math.IsNaN(h.restMin)
			if !h.restFirstT.IsZero() {
				h.restSpan, h.restRise = h.restLastT.Sub(h.restFirstT), h.restLastV-h.restFirstV
			}
		case n > 0:
			loose, exact := h.idleRest()
			h.rest[s], h.exact[s], h.seen[s] = uint8(loose), uint8(exact), uint8(n-1)
		}
	}
	for c := range h.floor {
		h.floor[c][s] = h.curMin[c]
		h.spread[c][ss] = h.curMax[c] - h.curMin[c]
		h.curMin[c], h.curMax[c] = math.NaN(), math.NaN()
	}
	h.last = b
}

// get returns the floor of column c in bucket b, if the ring still holds it.
func (h *history) get(c int, b int64) (float64, bool) {
	s, held := h.slot(b)
	if !held {
		return 0, false
	}
	v := h.floor[c][s]
	return v, !math.IsNaN(v)
}

// spreadSlot is bucket b's slot in the spread and span rings, if they still hold it.
func (h *history) spreadSlot(b int64) (int, bool) {
	n := int64(len(h.spreadIdx))
	s := int(((b % n) + n) % n)
	return s, h.spreadIdx[s] == b
}

// spreadOf returns the spread of column c in bucket b, if still held.
func (h *history) spreadOf(c int, b int64) (float64, bool) {
	s, ok := h.spreadSlot(b)
	if !ok {
		return 0, false
	}
	v := h.spread[c][s]
	return v, !math.IsNaN(v)
}

// spanOf is the time between the first and the last sample of bucket b, if still held.
func (h *history) spanOf(b int64) (time.Duration, bool) {
	s, ok := h.spreadSlot(b)
	if !ok {
		return 0, false
	}
	return h.span[s], true
}

// latest is the newest closed floor of column c.
func (h *history) latest(c int) (float64, bool) {
	if !h.started {
		return 0, false
	}
	return h.get(c, h.last)
}

// maxSpread is the largest spread of column c over the newest n buckets (0 if none): the
// most memory a request took on top of the floor lately.
func (h *history) maxSpread(c int, n int64) float64 {
	var m float64
	for b := h.last - n + 1; b <= h.last; b++ {
		if s, ok := h.spreadOf(c, b); ok && s > m {
			m = s
		}
	}
	return m
}

// late is how far the least of the current bucket's buffered samples in the later half
// of their span stands above the least in the earlier half, and that span (0, 0 where
// a half has none). A floor that rises at a pace through the bucket puts half the
// span's rise between the two (the least of each half is its first sample at rest); a
// load that ended within the bucket, none.
func (h *history) late() (float64, time.Duration) {
	n := len(h.idleT)
	if n < 2 {
		return 0, 0
	}
	mid := h.idleT[n-1] / 2
	a, b := math.Inf(1), math.Inf(1)
	for i, t := range h.idleT {
		if t < mid {
			a = math.Min(a, h.idleV[i])
		} else {
			b = math.Min(b, h.idleV[i])
		}
	}
	if math.IsInf(a, 1) || math.IsInf(b, 1) {
		return 0, 0
	}
	return b - a, time.Duration(h.idleT[n-1] * float64(time.Second))
}
