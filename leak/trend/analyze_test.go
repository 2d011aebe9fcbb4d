package trend

import (
	"math"
	"testing"
)

// fillFloors are n floors a bucket apart of a cache filling as B·(1 − e^(−t/τ)) in
// steps of q, from t0 buckets into the fill (MiB, as bytes).
func fillFloors(n int, b, tau, t0, q float64) (x, y []float64) {
	for i := range n {
		t := float64(i) + t0
		v := b * (1 - math.Exp(-t/tau))
		x = append(x, float64(i))
		y = append(y, math.Floor(v/q)*q*mib)
	}
	return x, y
}

// A slow fill in steps whose noise puts the foot minutes into its span: the rise began
// before the span, and cutting at the foot takes its steepest part off the older half
// (x_cache_fill_slow seed 1 of vram_eval -stress paged at 1:04 on that). Without the
// whole span's test it reads as not slowing. A leak, from before the span or from an
// onset within it, at the same noise and in the same steps, never does.
func TestSlowingFromBeforeFoot(t *testing.T) {
	var sc scratch
	const sigma = 16.0 * mib
	for _, c := range []struct{ tau, t0 float64 }{{50, 100}, {50, 110}, {60, 120}} {
		x, y := fillFloors(40, 4500, c.tau, c.t0, 15)
		if sc.slower(x[7:], y[7:], sigma) {
			t.Fatalf("fill τ %v from %v: slower after the foot already; the case does not test the whole span", c.tau, c.t0)
		}
		if !sc.slowing(x, y, 4*sigma, sigma) {
			t.Errorf("fill τ %v buckets from %v buckets in, in 15 MiB steps, σ 16 MiB: not slowing", c.tau, c.t0)
		}
	}
	for _, onset := range []int{0, 5, 10, 15, 20, 25, 30} {
		for _, rate := range []float64{5, 15, 40} { // MiB a bucket
			x := make([]float64, 40)
			y := make([]float64, 40)
			for i := range x {
				x[i] = float64(i)
				y[i] = 1000 * mib
				if i > onset {
					y[i] += math.Floor(rate*float64(i-onset)/15) * 15 * mib
				}
			}
			if sc.slowing(x, y, 4*sigma, sigma) {
				t.Errorf("leak of %v MiB a bucket from bucket %d: slowing", rate, onset)
			}
		}
	}
}
