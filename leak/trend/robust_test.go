package trend

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestMedianAndSelect(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n < 60; n++ {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(r.IntN(20)) // ties on purpose
		}
		s := slices.Clone(v)
		slices.Sort(s)
		want := s[n/2]
		if n%2 == 0 {
			want = (s[n/2-1] + s[n/2]) / 2
		}
		if got := median(slices.Clone(v)); got != want {
			t.Fatalf("n=%d: median %v, want %v (%v)", n, got, want, v)
		}
		k := r.IntN(n)
		if got := selectK(slices.Clone(v), k); got != s[k] {
			t.Fatalf("n=%d: selectK(%d) %v, want %v", n, k, got, s[k])
		}
	}
	if !math.IsNaN(median(nil)) {
		t.Error("median of nothing is not NaN")
	}
}

// The repeated median keeps its slope with up to half the points anywhere (a saturated
// stretch of the window); least squares does not.
func TestRepeatedMedianBreakdown(t *testing.T) {
	var sc scratch
	x := make([]float64, 20)
	y := make([]float64, 20)
	for i := range x {
		x[i] = float64(i)
		y[i] = 3 * float64(i)
		if i >= 11 { // 9 of 20 far above the line
			y[i] += 5000
		}
	}
	if got := sc.repeatedMedian(x, y); math.Abs(got-3) > 1e-9 {
		t.Errorf("repeated median slope %v with 45%% outliers, want 3", got)
	}
	f := sc.robustFit(x, y, 1)
	if math.Abs(f.slope-3) > 1e-9 || f.inliers != 11 || f.r2 < 0.999 {
		t.Errorf("robust fit %+v, want slope 3 on the 11 inliers", f)
	}
}

// A single step is no line (R² ≤ 0.75 however the robust line falls), two steps are as
// close as least squares said (0.889), and both make too few new highs.
func TestRobustFitSteps(t *testing.T) {
	var sc scratch
	x := make([]float64, 20)
	one, two := make([]float64, 20), make([]float64, 20)
	for i := range x {
		x[i] = float64(i)
		if i >= 10 {
			one[i] = 100
		}
		two[i] = 100 * math.Floor(float64(i)/7)
	}
	if f := sc.robustFit(x, one, 1); f.r2 > 0.76 || f.highs != 1 {
		t.Errorf("one step: %+v, want R² ≤ 0.75 and one new high", f)
	}
	if f := sc.robustFit(x, two, 1); f.highs != 2 {
		t.Errorf("two steps: %+v, want two new highs", f)
	}
}

func TestSignCritical(t *testing.T) {
	// P(X ≥ k) < 1 % for X ~ Binomial(n, ½): 7 of 7, 10 of 10, 15 of 19, 28 of 39.
	for n, want := range map[int]int{7: 7, 10: 10, 19: 15, 39: 28} {
		if got := signCritical(n); got != want {
			t.Errorf("signCritical(%d) = %d, want %d", n, got, want)
		}
	}
	if got := signCritical(6); got <= 6 {
		t.Errorf("signCritical(6) = %d: six changes cannot reach 1 %%", got)
	}
}
