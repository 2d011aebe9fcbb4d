package trend

import (
	"math"
	"time"
)

// history is the bounded memory of one (pid, uuid) or one GPU: the floor (minimum) of
// every closed bucket for the long window, for a few columns (series) that share the
// bucket clock, plus running least-squares sums for the short and the long window.
//
// Why floors: a serving process's memory is a sawtooth (activations come and go with
// every request); its minimum over a bucket is the memory that stays, which is what a
// leak grows and what a request burst does not.
//
// Outlier rejection: a floor can only be wrong upwards (a bucket in which the process
// was never idle, so every sample carried activations). The point fitted for bucket b is
// therefore min(floor[b−1], floor[b]): a single raised bucket vanishes, a straight line
// only shifts by one bucket (its slope is unchanged). On the suite, without it, one busy
// bucket in a step leak's window dropped R² from 0.98 to 0.55 and delayed detection by
// 13 minutes.
//
// Why incremental least squares and not Theil–Sen: with that rejection the remaining
// failure modes (cache steps) fool Theil–Sen as much as least squares (a median of
// pairwise slopes across one step is still the step over the distance), while R² is
// exactly what separates a step (R² ≤ 0.75 for any single step) from a line, and it
// comes for free from the same sums. So every closed bucket costs O(1) per column, plus
// an O(ring) re-base once per ring length.
type history struct {
	bucket  time.Duration
	shortN  int64 // buckets in the short window
	idx     []int64
	cols    [][]float64 // cols[c][slot]: the fitted point (see above); NaN when none
	prev    []float64   // raw floor of the newest closed bucket per column (NaN: none)
	prevIdx int64

	short, long []lsq // per column
	fast        []lsq // per column: the newest fastN buckets (see fastWindow); nil when off
	fastN       int64
	shortTail   int64 // oldest bucket index that may still be in the short sums
	fastTail    int64
	longTail    int64
	origin      int64     // x = bucket index − origin
	ref         []float64 // y = floor − ref[c]
	refOK       []bool
	sinceRebase int

	started bool
	last    int64 // newest closed bucket

	cur     int64 // bucket being filled
	curOpen bool
	curMin  []float64 // NaN when no sample yet
}

func newHistory(cfg Config, ncols int) *history {
	n := int(cfg.LongWindow / cfg.Bucket)
	h := &history{
		bucket: cfg.Bucket,
		shortN: int64(cfg.ShortWindow / cfg.Bucket),
		idx:    make([]int64, n),
		cols:   make([][]float64, ncols),
		short:  make([]lsq, ncols),
		long:   make([]lsq, ncols),
		ref:    make([]float64, ncols),
		refOK:  make([]bool, ncols),
		curMin: make([]float64, ncols),
		prev:   make([]float64, ncols),
	}
	if fn := fastBuckets(cfg); fn > 0 {
		h.fastN, h.fast = fn, make([]lsq, ncols)
	}
	// One backing array for all columns: fewer allocations, better locality.
	backing := make([]float64, n*ncols)
	for c := range h.cols {
		h.cols[c] = backing[c*n : (c+1)*n : (c+1)*n]
	}
	h.reset()
	return h
}

func (h *history) reset() {
	for i := range h.idx {
		h.idx[i] = math.MinInt64
	}
	for c := range h.cols {
		h.short[c], h.long[c] = lsq{}, lsq{}
		if h.fast != nil {
			h.fast[c] = lsq{}
		}
		h.refOK[c] = false
		h.curMin[c] = math.NaN()
		h.prev[c] = math.NaN()
	}
	h.started, h.curOpen, h.sinceRebase = false, false, 0
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

// add folds one sample into the current bucket. It reports the index of the bucket it
// closed, if the sample belongs to a later bucket. Samples older than the current bucket
// (clock steps, reordering) are folded into the current one: dropping them would lose a
// floor, and they are at most a bucket late in practice.
func (h *history) add(t time.Time, vals []float64) (closed int64, ok bool) {
	b := h.bucketOf(t)
	if h.curOpen && b > h.cur {
		closed, ok = h.cur, true
		h.close()
	}
	if !h.curOpen {
		h.cur, h.curOpen = b, true
	}
	for c, v := range vals {
		if math.IsNaN(v) {
			continue
		}
		if math.IsNaN(h.curMin[c]) || v < h.curMin[c] {
			h.curMin[c] = v
		}
	}
	return closed, ok
}

func (h *history) close() {
	b := h.cur
	h.curOpen = false
	n := int64(len(h.idx))
	if h.started && b-h.last >= n {
		// Everything we hold is older than the long window: start over rather than walk
		// the gap bucket by bucket.
		cur := append([]float64(nil), h.curMin...)
		h.reset()
		copy(h.curMin, cur)
	}
	if !h.started {
		h.started = true
		h.origin = b
		h.shortTail, h.longTail, h.fastTail = b, b, b
	}
	h.evict(&h.shortTail, b-h.shortN, h.short)
	if h.fast != nil {
		h.evict(&h.fastTail, b-h.fastN, h.fast)
	}
	h.evict(&h.longTail, b-n, h.long)

	s := int(b % n)
	h.idx[s] = b
	x := float64(b - h.origin)
	adjacent := h.prevIdx == b-1
	for c := range h.cols {
		raw := h.curMin[c]
		v := raw
		if adjacent && raw > h.prev[c] { // NaN compares false: a missing neighbour is ignored
			v = h.prev[c]
		}
		h.prev[c] = raw
		h.cols[c][s] = v
		h.curMin[c] = math.NaN()
		if math.IsNaN(v) {
			continue
		}
		if !h.refOK[c] {
			h.ref[c], h.refOK[c] = v, true
		}
		y := v - h.ref[c]
		h.short[c].add(x, y)
		h.long[c].add(x, y)
		if h.fast != nil {
			h.fast[c].add(x, y)
		}
	}
	h.last, h.prevIdx = b, b

	h.sinceRebase++
	if h.sinceRebase >= len(h.idx) {
		h.rebase()
	}
}

// evict removes from the sums every bucket with index ≤ limit, walking from *tail.
func (h *history) evict(tail *int64, limit int64, w []lsq) {
	n := int64(len(h.idx))
	for ; *tail <= limit; *tail++ {
		s := int(*tail % n)
		if h.idx[s] != *tail {
			continue
		}
		x := float64(*tail - h.origin)
		for c := range h.cols {
			v := h.cols[c][s]
			if !math.IsNaN(v) {
				w[c].remove(x, v-h.ref[c])
			}
		}
	}
}

// rebase moves the x origin to the newest bucket and each y reference to its newest
// floor, and recomputes the sums from the ring. Once per ring length, so O(1) amortised.
func (h *history) rebase() {
	h.sinceRebase = 0
	h.origin = h.last
	s := int(h.last % int64(len(h.idx)))
	for c := range h.cols {
		if v := h.cols[c][s]; !math.IsNaN(v) {
			h.ref[c] = v
		}
		h.short[c], h.long[c] = lsq{}, lsq{}
		if h.fast != nil {
			h.fast[c] = lsq{}
		}
	}
	n := int64(len(h.idx))
	for b := h.longTail; b <= h.last; b++ {
		s := int(b % n)
		if h.idx[s] != b {
			continue
		}
		x := float64(b - h.origin)
		for c := range h.cols {
			v := h.cols[c][s]
			if math.IsNaN(v) {
				continue
			}
			y := v - h.ref[c]
			h.long[c].add(x, y)
			if b >= h.shortTail {
				h.short[c].add(x, y)
			}
			if h.fast != nil && b >= h.fastTail {
				h.fast[c].add(x, y)
			}
		}
	}
}

// span is the time covered by the long window's floors of column c.
func (h *history) longSpan(c int) time.Duration {
	if h.long[c].n < 2 {
		return 0
	}
	// The sums do not remember their oldest x; the tail and the count bound it well
	// enough for "is there enough history", which is all this is used for.
	first := h.longTail
	if lo := h.last - int64(len(h.idx)) + 1; first < lo {
		first = lo
	}
	return time.Duration(h.last-first) * h.bucket
}

// highs counts the buckets among the newest n of column c that set a new maximum over
// the older ones in those n (the first present one does not count).
func (h *history) highs(c int, n int64) int64 {
	if !h.started {
		return 0
	}
	ring := int64(len(h.idx))
	var count int64
	hi := math.NaN()
	for b := h.last - n + 1; b <= h.last; b++ {
		s := int(((b % ring) + ring) % ring)
		if h.idx[s] != b {
			continue
		}
		v := h.cols[c][s]
		if math.IsNaN(v) {
			continue
		}
		if math.IsNaN(hi) {
			hi = v
			continue
		}
		if v > hi {
			count++
			hi = v
		}
	}
	return count
}
