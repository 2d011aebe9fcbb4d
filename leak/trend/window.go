package trend

import "math"

// lsq holds the running least-squares sums of one sliding window. x is the bucket index
// minus an origin and y the floor minus a reference: both are re-based from time to time
// (see series.rebase) so that the sums stay small and the subtractions in fit() do not
// cancel catastrophically when a flat series sits at 80 GiB.
type lsq struct {
	n                     float64
	sx, sy, sxx, sxy, syy float64
}

func (w *lsq) add(x, y float64) {
	w.n++
	w.sx += x
	w.sy += y
	w.sxx += x * x
	w.sxy += x * y
	w.syy += y * y
}

func (w *lsq) remove(x, y float64) {
	w.n--
	w.sx -= x
	w.sy -= y
	w.sxx -= x * x
	w.sxy -= x * y
	w.syy -= y * y
	if w.n <= 0 {
		*w = lsq{}
	}
}

// fit returns the slope per bucket and the coefficient of determination R². A perfectly
// flat window has slope 0 and fit 1: the line explains everything there is.
func (w *lsq) fit() (slope, r2 float64) {
	if w.n < 2 {
		return 0, 0
	}
	sxx := w.sxx - w.sx*w.sx/w.n
	sxy := w.sxy - w.sx*w.sy/w.n
	syy := w.syy - w.sy*w.sy/w.n
	if sxx <= 0 {
		return 0, 0
	}
	slope = sxy / sxx
	// Below one byte of variance the series is flat; rounding noise in the sums must not
	// turn into a random fit.
	if syy <= 1 {
		return 0, 1
	}
	r2 = sxy * sxy / (sxx * syy)
	return slope, math.Min(math.Max(r2, 0), 1)
}
