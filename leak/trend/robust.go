package trend

import (
	"math"
	"slices"
)

// selectK returns the k-th smallest of v (0-based), reordering v: Hoare's quickselect
// with a median-of-three pivot. O(len(v)) on average, no allocation.
func selectK(v []float64, k int) float64 {
	lo, hi := 0, len(v)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		// Median of three as the pivot, so sorted input stays linear.
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		pivot := v[mid]
		i, j := lo, hi
		for i <= j {
			for v[i] < pivot {
				i++
			}
			for v[j] > pivot {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k]
		}
	}
	return v[k]
}

// median returns the median of v, reordering v (the mean of the two middle values when
// len(v) is even). NaN for an empty slice.
func median(v []float64) float64 {
	n := len(v)
	switch n {
	case 0:
		return math.NaN()
	case 1:
		return v[0]
	}
	hi := selectK(v, n/2)
	if n%2 == 1 {
		return hi
	}
	// After selecting n/2, the lower half holds the other middle value as its maximum.
	return (hi + slices.Max(v[:n/2])) / 2
}

// fitResult is a robust line through a window of floors.
type fitResult struct {
	slope   float64 // per x unit (bucket)
	r2      float64 // least squares R² of the inliers
	n       int     // points in the window
	inliers int
	highs   int     // ratchet new highs (see highs)
	rise    float64 // fitted line's rise across the window
	ok      bool    // enough points for a slope to mean anything
	// spread is the points' own robust scatter about Siegel's line (1.4826·MAD of the
	// residuals), before floorScale bounds it from below.
	spread float64
}

// scratch holds the buffers the robust fits need, reused across calls: an Engine is
// single-threaded, and a bucket close must not allocate.
type scratch struct {
	rx, ry  []float64 // restFit's and exactFit's points
	ri      []int     // restRun's chain of floors at rest: their indices
	rx2, rv []float64 // and points
	qa, qb  []float64 // restBack's floors at rest
	ex, ey  []float64 // exactFit's floors on its line
	a, b, c []float64
	qx, qy  []float64 // bends' floors near their robust line
}

func grow[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n, 2*n)
	}
	return (*buf)[:n]
}

// repeatedMedian is Siegel's repeated-median slope of (x, y): for each point the median
// of its slopes to every other point, then the median of those. Half the points may be
// anything (a burst, a busy stretch) without moving it: the highest breakdown point a
// line fit can have, against Theil–Sen's 29 %.
func (s *scratch) repeatedMedian(x, y []float64) float64 {
	n := len(x)
	outer := grow(&s.a, n)
	inner := grow(&s.b, n)
	m := 0
	for i := range n {
		k := 0
		for j := range n {
			if dx := x[j] - x[i]; dx != 0 {
				inner[k] = (y[j] - y[i]) / dx
				k++
			}
		}
		if k > 0 {
			outer[m] = median(inner[:k])
			m++
		}
	}
	if m == 0 {
		return 0
	}
	return median(outer[:m])
}

// robustFit fits a line to (x, y) that ignores outliers: Siegel's slope, the median
// intercept, then least squares on the points within 3 robust standard deviations
// (1.4826·MAD of the residuals, at least floorScale) of that line. The R² of those
// inliers keeps what least squares was good at (a single step scores at most 0.75, a
// line 1) while one, two, or up to half the points far off the line (busy buckets, a
// saturated minute) no longer spoil it. highs is counted over all points with a ratchet
// of 2·scale (see highs).
func (s *scratch) robustFit(x, y []float64, floorScale float64) fitResult {
	n := len(x)
	r := fitResult{n: n, ok: n >= minPoints}
	if n < 2 {
		return r
	}
	slope, icpt, spread := s.robustLine(x, y)
	r.spread = spread
	scale := math.Max(r.spread, floorScale)
	var sn, sx, sy float64
	for i := range n {
		if math.Abs(y[i]-slope*x[i]-icpt) <= 3*scale {
			sn++
			sx += x[i]
			sy += y[i]
		}
	}
	r.inliers = int(sn)
	if sn < 2 {
		return r
	}
	mx, my := sx/sn, sy/sn
	var sxx, sxy, syy float64
	for i := range n {
		if math.Abs(y[i]-slope*x[i]-icpt) <= 3*scale {
			dx, dy := x[i]-mx, y[i]-my
			sxx += dx * dx
			sxy += dx * dy
			syy += dy * dy
		}
	}
	r.highs = highs(y, 2*floorScale)
	if sxx <= 0 {
		return r
	}
	r.slope = sxy / sxx
	r.rise = r.slope * (x[n-1] - x[0])
	// Below one byte of variance the series is flat: rounding must not become a fit.
	if syy <= 1 {
		r.slope, r.r2, r.rise = 0, 1, 0
		return r
	}
	r.r2 = math.Min(math.Max(sxy*sxy/(sxx*syy), 0), 1)
	return r
}

// robustLine is Siegel's repeated-median line through (x, y), its intercept the median
// of the residuals, and their robust spread (1.4826·MAD). The caller recomputes the
// residuals it needs: the median reorders its buffer.
func (s *scratch) robustLine(x, y []float64) (slope, icpt, spread float64) {
	n := len(x)
	slope = s.repeatedMedian(x, y)
	res := grow(&s.c, n)
	for i := range n {
		res[i] = y[i] - slope*x[i]
	}
	icpt = median(res)
	for i := range n {
		res[i] = math.Abs(y[i] - slope*x[i] - icpt)
	}
	return slope, icpt, 1.4826 * median(res)
}

// highs counts the ratchet new highs of y: a point counts when it exceeds the last
// counted level by more than tol, and becomes the new level. A line of slope r counts
// about once per tol/r points, a staircase once per step taller than tol, noise that
// stays within tol never.
func highs(y []float64, tol float64) int {
	if len(y) == 0 {
		return 0
	}
	level, n := y[0], 0
	for _, v := range y[1:] {
		if v > level+tol {
			n++
			level = v
		}
	}
	return n
}
