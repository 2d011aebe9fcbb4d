package trend

import (
	"math"
	"math/rand/v2"
	"slices"
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

// TestRisingTroughs: the troughs of a collector's sawtooth say the memory that stays rose
// only where the floor stayed at or above each of them from then on, and not on a drop
// still under way.
func TestRisingTroughs(t *testing.T) {
	const sig = 10.0
	// Floors of three cycles whose troughs (indices 5, 12, 19) rise by 20 each, and the
	// ramp after the newest.
	ps := []float64{100, 110, 120, 130, 140, 100, 110, 120, 130, 140, 150, 160, 120, 130, 140, 150, 160, 170, 180, 140, 150, 160}
	xs := make([]float64, len(ps))
	for i := range xs {
		xs[i] = float64(i - len(ps) + 1)
	}
	tr := []int{5, 12, 19}
	saw := &sawCycles{drop: 19, top: 40, long: 7} // ramps of 40 over 6–7 buckets
	r := risingTroughs(tr, xs, ps, make([]float64, len(xs)), sig, xs[0], xs[0], saw)
	if !r.rising || !r.held || r.stopped() || r.halted {
		t.Fatalf("three troughs rising by 2 sig: %+v, want rising and held", r)
	}
	if want := 40.0 / 14; math.Abs(r.slope-want) > 1e-9 {
		t.Errorf("slope %g per bucket, want %g (from the oldest trough to the newest)", r.slope, want)
	}
	// A collection the cycles did not register, back below the oldest trough: the rise
	// from it is not one; the newest two still rise.
	low := slices.Clone(ps)
	low[9] = 80
	if r := risingTroughs(tr, xs, low, make([]float64, len(xs)), sig, xs[0], xs[0], saw); r.rising || !r.held {
		t.Errorf("a floor below the oldest trough after it: %+v, want held, not rising", r)
	}
	// Below the middle one after it: the troughs say nothing.
	low = slices.Clone(ps)
	low[15] = 105
	if r := risingTroughs(tr, xs, low, make([]float64, len(xs)), sig, xs[0], xs[0], saw); r != (troughRise{}) {
		t.Errorf("a floor below the middle trough after it: %+v, want nothing read", r)
	}
	// The newest trough one bucket old: a drop still under way; the two before say.
	if r := risingTroughs(tr, xs[:20], ps[:20], make([]float64, len(xs[:20])), sig, xs[0], xs[0], saw); r.rising || !r.held {
		t.Errorf("the newest trough one bucket old: %+v, want held on the two before, not rising", r)
	}
	// The newest collection back no higher than the one before, after a rise by sig.
	flat := slices.Clone(ps)
	flat[19] = 124
	if r := risingTroughs(tr, xs, flat, make([]float64, len(xs)), sig, xs[0], xs[0], saw); r.rising || r.held || !r.stopped() || !r.halted {
		t.Errorf("a trough 4 above the one before, after a rise of 20: %+v, want stopped and halted", r)
	}
	// A fall by sig after the newest trough that no cycle registered: stale.
	if r := risingTroughs(tr[:2], xs, ps, make([]float64, len(xs)), sig, xs[0], xs[0], &sawCycles{drop: 19, top: 40, long: 7}); r != (troughRise{}) {
		t.Errorf("a fall after the newest trough: %+v, want nothing read", r)
	}
	// The floor since the newest trough risen more than twice the highest ramp: stale.
	steep := slices.Clone(ps)
	steep[21] = 140 + 81
	if r := risingTroughs(tr, xs, steep, make([]float64, len(xs)), sig, xs[0], xs[0], saw); r != (troughRise{}) {
		t.Errorf("a ramp more than twice the highest since the newest trough: %+v, want nothing read", r)
	}
	// The rise began before the warm-up's end.
	if r := risingTroughs(tr, xs, ps, make([]float64, len(xs)), sig, xs[13], xs[0], saw); r.rising {
		t.Errorf("the middle trough before since: %+v, want not rising", r)
	}
	if r.slowing {
		t.Errorf("troughs rising by 20 a cycle each: %+v, want not slowing", r)
	}
	// Troughs that rise ever slower (a cache filling to its budget under the sawtooth):
	// by 60, then by 22, each by more than sig, at a third of the pace. Not where the
	// paces differ by less than the troughs' noise can make them (sig over each gap).
	fill := slices.Clone(ps)
	for i := 12; i < len(fill); i++ {
		fill[i] += 40
	}
	for i := 19; i < len(fill); i++ {
		fill[i] += 2
	}
	if r := risingTroughs(tr, xs, fill, make([]float64, len(xs)), sig, xs[0], xs[0], &sawCycles{drop: 19, top: 80, long: 7}); !r.rising || !r.slowing {
		t.Errorf("troughs rising by 60 then by 22: %+v, want rising and slowing", r)
	}
	near := slices.Clone(ps)
	for i := 12; i < len(near); i++ {
		near[i] += 8
	}
	if r := risingTroughs(tr, xs, near, make([]float64, len(xs)), sig, xs[0], xs[0], &sawCycles{drop: 19, top: 80, long: 7}); !r.rising || r.slowing {
		t.Errorf("troughs rising by 28 then by 20 (paces within the noise): %+v, want rising, not slowing", r)
	}
}

// TestTroughsSlow: over the span the envelope is judged on, and the trough before it,
// troughs whose newer half rose at under fillPace of the older half's pace, by more
// than their noise, are a fill's tail; a leak's, at its pace from its onset, are not.
func TestTroughsSlow(t *testing.T) {
	const sig = 62.0
	all := func(int) bool { return true }
	xs := make([]float64, 120)
	for i := range xs {
		xs[i] = float64(i - len(xs) + 1)
	}
	at := func(pts ...float64) ([]int, []float64) { // pairs of (x, trough)
		ps := make([]float64, len(xs))
		var tr []int
		for k := 0; k < len(pts); k += 2 {
			i := int(pts[k]) + len(xs) - 1
			tr, ps[i] = append(tr, i), pts[k+1]
		}
		return tr, ps
	}
	// The tail of a cache's fill under a collector's sawtooth (x_gc_sawtooth_cache_fill
	// seed 18): troughs up 156, 39 and 21 MiB over 27, 24 and 15 buckets. The newest two
	// gaps differ by less than their noise; the span's halves do not.
	tr, ps := at(-112, 6564, -85, 6694, -58, 6850, -34, 6889, -19, 6910)
	if !troughsSlow(tr, xs, ps, sig, -63, all) {
		t.Errorf("a fill's tail (5.8 then 1.5 MiB a bucket): not slow")
	}
	// The trough before the span stands in for the envelope at its start; without it
	// the span's troughs rise at 1.6 and 1.4 MiB a bucket, within the noise.
	if troughsSlow(tr[2:], xs, ps, sig, -63, all) {
		t.Errorf("troughs up 39 then 21 over 24 and 15 buckets: slow")
	}
	// Nor past a trough the floor fell back below since: the rise is not one.
	if troughsSlow(tr, xs, ps, sig, -63, func(i int) bool { return i != tr[1] }) {
		t.Errorf("the trough before the span not kept: slow")
	}
	// A leak under the sawtooth: its troughs rise at its pace, give or take the noise
	// (half of sig each way), whichever way the noise falls.
	for _, noise := range [][4]float64{{0, 0, 0, 0}, {-31, 31, 31, -31}, {31, 31, -31, -31}, {-31, -31, 31, 31}} {
		pace := 3.0 // MiB a bucket
		tr, ps := at(-100, 5000+noise[0], -75, 5000+25*pace+noise[1], -50, 5000+50*pace+noise[2], -20, 5000+80*pace+noise[3])
		if troughsSlow(tr, xs, ps, sig, -80, all) {
			t.Errorf("a leak of %v MiB a bucket, troughs off its line by %v: slow", pace, noise)
		}
	}
	// A leak that began within the span: its older half is the slower.
	if tr, ps := at(-100, 5000, -75, 5000, -50, 5100, -20, 5250); troughsSlow(tr, xs, ps, sig, -80, all) {
		t.Errorf("a leak from the middle of the span: slow")
	}
	// Two troughs say nothing of a pace that changed.
	if tr, ps := at(-60, 5000, -20, 5010); troughsSlow(tr, xs, ps, sig, -80, all) {
		t.Errorf("two troughs: slow")
	}
}

// twoWay counts sharp net steps: a swap whose eviction and load fall two buckets apart
// is one step of their net; a ramp of small rises, however long, is none. A walk that
// stepped down and up is two-way; steps only up, or far more up than down, are not. A
// step up that gave memory back on its way (an eviction's dip before the load) stands for
// a step down where the steps up are not too many for a coin: four swaps that grew are a
// walk's run, eight in a row are not.
func TestTwoWay(t *testing.T) {
	const sig = 20.0 * mib
	// floors from a level of 1000 MiB plus the step of size d[i] at bucket 10·(i+1),
	// an eviction of 100 MiB one bucket before each step where dip is set.
	floors := func(dip bool, d ...float64) (x, y []float64) {
		v := 1000.0
		for b := range 10 * (len(d) + 1) {
			if b > 0 && b%10 == 0 {
				v += d[b/10-1]
			}
			f := v
			if dip && b%10 == 9 {
				f -= 100
			}
			x, y = append(x, float64(b)), append(y, f*mib)
		}
		return x, y
	}
	ramp := func(n int, per float64) (x, y []float64) {
		for b := range n {
			x, y = append(x, float64(b)), append(y, (1000+per*float64(b))*mib)
		}
		return x, y
	}
	for _, c := range []struct {
		name string
		x, y []float64
		want bool
	}{
		{"walk", nil, nil, true},
		{"walk with dips", nil, nil, true},
		{"staircase up", nil, nil, false},
		{"swaps that grew, with dips", nil, nil, true},
		{"eight swaps that grew, with dips", nil, nil, false},
		{"seven up, one down", nil, nil, false},
		{"ramp", nil, nil, false},
	} {
		switch c.name {
		case "walk":
			c.x, c.y = floors(false, 200, -150, 250, -300, 180, 220, 260)
		case "walk with dips":
			c.x, c.y = floors(true, 200, -150, 250, -300, 180, 220, 260)
		case "staircase up":
			c.x, c.y = floors(false, 200, 150, 250, 300)
		case "swaps that grew, with dips":
			c.x, c.y = floors(true, 200, 150, 250, 300)
		case "eight swaps that grew, with dips":
			c.x, c.y = floors(true, 200, 150, 250, 300, 180, 220, 260, 140)
		case "seven up, one down":
			c.x, c.y = floors(false, 200, 150, 250, 300, 180, -220, 260, 140)
		case "ramp":
			c.x, c.y = ramp(60, 15) // 15 MiB a bucket: under sig/2, never a step
		}
		if got := twoWay(c.x, c.y, sig); got != c.want {
			t.Errorf("%s: twoWay %v, want %v", c.name, got, c.want)
		}
	}
}

// TestGradual: a collector's ramp climbs over its length, in lumps at most; a cache
// that swaps an item for a larger one climbs in one bucket and holds.
func TestGradual(t *testing.T) {
	xs := func(n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = float64(i - n + 1)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		ps   []float64
		want bool
	}{
		{"a line", []float64{100, 110, 120, 130, 140, 150, 160, 170, 180}, true},
		{"lumps, the largest two thirds", []float64{100, 100, 105, 105, 305, 305, 310, 400, 400}, true},
		{"a step held", []float64{100, 800, 800, 800, 800, 800, 800, 800, 800}, false},
		{"a step held, noisy", []float64{100, 101, 800, 799, 801, 802, 800, 803, 805}, false},
	} {
		if got := gradual(0, len(tc.ps)-1, xs(len(tc.ps)), tc.ps); got != tc.want {
			t.Errorf("%s: gradual = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// binomialCDF against the sum of the terms written out, and where (1 − p)^n alone
// underflows.
func TestBinomialCDF(t *testing.T) {
	direct := func(k, n int, p float64) float64 {
		sum := 0.0
		for i := 0; i <= k; i++ {
			c := 1.0
			for j := 0; j < i; j++ {
				c = c * float64(n-j) / float64(j+1)
			}
			sum += c * math.Pow(p, float64(i)) * math.Pow(1-p, float64(n-i))
		}
		return sum
	}
	for _, c := range []struct {
		k, n int
		p    float64
	}{{0, 6, 0.4}, {1, 25, 0.28}, {3, 20, 0.1}, {10, 42, 0.3}, {0, 1, 0.5}} {
		if got, want := binomialCDF(c.k, c.n, c.p), direct(c.k, c.n, c.p); math.Abs(got-want) > 1e-12*math.Max(want, 1e-300) && math.Abs(got-want) > 1e-15 {
			t.Errorf("binomialCDF(%d, %d, %g) = %g, want %g", c.k, c.n, c.p, got, want)
		}
	}
	if got := binomialCDF(5, 5, 0.5); got != 1 {
		t.Errorf("k = n: %g, want 1", got)
	}
	if got := binomialCDF(0, 10, 0); got != 1 {
		t.Errorf("p = 0: %g, want 1", got)
	}
	// 0.4^900 underflows; the tail at 300 of 900 at 0.6 is 1.25e-58, not 0.
	if got := binomialCDF(300, 900, 0.6); math.Abs(got-1.2530037451519394e-58) > 1e-66 {
		t.Errorf("binomialCDF(300, 900, 0.6) = %g, want 1.253e-58", got)
	}
}

// TestSlowingBends: a cache filling in small steps (τ 10–12 minutes at 30-second
// buckets) slows down from its first minutes, but the halves' robust slopes read its
// pace ratio as 0.80–0.86 at some spans, by the steps' quantization (cache_fill_smooth
// seed 92 of vram_eval paged at 21m30s on such a span, x_cache_fill_mid seed 98
// likewise): the least-squares parabola through all the floors reads the bend at every
// span; and a slower fill of 3 GiB (τ 18–22 minutes, outside the built ones, like
// x_cache_fill_slow) from 7.5 minutes into it, where its pace has fallen to 0.81–0.84
// (bendPace; at steadyPace only from 8–9.5 minutes). A step at the rise's foot followed
// by a line (workspaces and pools kept at a first request, then a leak) bends the
// parabola through every floor too; the floors before the step lie off the robust line
// and are left out, and it is not slowing at any span.
func TestSlowingBends(t *testing.T) {
	var sc scratch
	for _, c := range []struct {
		b, tau, q float64
		from      int
	}{{584, 20, 2.9, 11}, {738, 24, 3.7, 10}, {584, 24, 2.9, 13}, {3000, 36, 8, 15}, {3000, 40, 8, 15}, {3000, 44, 8, 15}} {
		for n := c.from; n <= 16; n++ {
			x, y := fillFloors(n, c.b, c.tau, 1, c.q)
			if !sc.slower(x, y, mib) {
				t.Errorf("fill of %v MiB, τ %v buckets, in %v MiB steps, over %d buckets: not slowing", c.b, c.tau, c.q, n)
			}
		}
	}
	for _, step := range []float64{64, 256, 512} {
		for _, rate := range []float64{8, 15} { // MiB a bucket, in 3 MiB steps
			for n := 8; n <= 30; n++ {
				x := make([]float64, n)
				y := make([]float64, n)
				for i := range x {
					x[i] = float64(i)
					y[i] = (step*math.Min(float64(i+1)/2, 1) + math.Floor(rate*float64(i)/3)*3) * mib
				}
				if sc.slower(x, y, mib) {
					t.Errorf("a step of %v MiB, then a leak of %v MiB a bucket, over %d buckets: slowing", step, rate, n)
				}
			}
		}
	}
}

// TestRampLevelBusyTop: a collector's ramp is read to where it robustly stood when it
// gave back (the median of its last three fitted points), not to one point two busy
// buckets in a row left high at its end: such a point made a ramp of 30 MiB a bucket
// read as 70, and a leak of twice the garbage's pace that should have stood out from
// the sawtooth read as one of its ramps (vram_eval -stress, x_gc_sawtooth_fast_leak
// seed 15, a leak of 322 MiB/min never flagged). The clean ramp reads its own pace.
func TestRampLevelBusyTop(t *testing.T) {
	for _, spike := range []bool{false, true} {
		xs, ps := make([]float64, 12), make([]float64, 12)
		for i := range xs {
			xs[i], ps[i] = float64(i), (1000+30*float64(i))*mib
		}
		if spike {
			ps[10] = 1700 * mib
		}
		ps[11] = 1000 * mib
		var s sawCycles
		if !s.add(11, 0, 10, xs, ps) {
			t.Fatalf("spike %v: the ramp was not taken for a cycle", spike)
		}
		if got := s.hi / mib; math.Abs(got-30) > 1 {
			t.Errorf("spike %v: ramp pace %.1f MiB a bucket, want 30", spike, got)
		}
		if lv, at, ok := rampLevel(10, 0, xs, ps); !ok || lv != 1270*mib || at != 9 {
			t.Errorf("spike %v: rampLevel = %.0f MiB at %v (%v), want 1270 MiB at 9", spike, lv/mib, at, ok)
		}
	}
	if _, _, ok := rampLevel(2, 0, []float64{0, 1, 2}, []float64{0, 1, 2}); ok {
		t.Error("rampLevel read a level from points that include the ramp's foot")
	}
}

// busyFloors are nl floors a bucket apart (x = −nl+1 … 0, the long window's), quiet to
// within 2 MiB until bucket from, then a server's load in flight: a floor that climbs
// by climb a bucket and, in each bucket without an idle moment (all but one in idle),
// sits a random few hundred MiB above it; leak adds its own pace throughout (bytes a
// bucket). quietSD sets the quiet floors' noise (busy all along: as large as the busy
// ones'). ps are the paired floors analyze fits, fs the buckets' own.
func busyFloors(nl, from int, climb, leak, quietSD float64, idle int, seed uint64) (xs, ps, fs []float64) {
	r := rand.New(rand.NewPCG(seed, 7))
	for i := range nl {
		f := 4096*mib + leak*float64(i) + quietSD*r.NormFloat64()
		if i >= from {
			f += climb * float64(i-from)
			if idle == 0 || r.IntN(idle) != 0 {
				f += 300 * mib * math.Abs(r.NormFloat64())
			}
		}
		p := f
		if i > 0 && fs[i-1] < p {
			p = fs[i-1]
		}
		xs, ps, fs = append(xs, float64(i-nl+1)), append(ps, p), append(fs, f)
	}
	return xs, ps, fs
}

// TestNoisyLong: a long window that was quiet and is now the least load in flight of a
// climbing day's traffic is noisyLong (the slow rule must not read its envelope as a
// leak); a server as noisy all along, a slow leak on a quiet one and a leak whose
// buckets with an idle moment lie on its line under the traffic are not.
func TestNoisyLong(t *testing.T) {
	const nl, rate = 240, 0.1 * mib // SlowRate a bucket
	sigma := 2.0 * mib
	for _, tc := range []struct {
		name                 string
		from                 int
		climb, leak, quietSD float64
		idle                 int
		want                 bool
	}{
		{"traffic climbs into saturation", 80, 4 * mib, 0, 2 * mib, 0, true},
		{"busy all along", 0, 4 * mib, 0, 300 * mib, 0, false},
		{"a slow leak on a quiet server", nl, 0, 0.3 * mib, 2 * mib, 0, false},
		{"a leak under the traffic, idle one bucket in three", 80, 0, 3 * mib, 0, 3, false},
	} {
		for seed := range uint64(20) {
			xs, _, fs := busyFloors(nl, tc.from, tc.climb, tc.leak, tc.quietSD, tc.idle, seed)
			var sc analysisScratch
			if got := sc.noisyLong(xs, fs, nl, rate, sigma); got != tc.want {
				newest, quiet := sc.quarterNoise(xs, fs, nl)
				t.Errorf("%s, seed %d: noisyLong %v, want %v (newest quarter's σ %.1f MiB, quietest %.1f MiB)", tc.name, seed, got, tc.want, newest/mib, quiet/mib)
				break
			}
		}
	}
}

// A cache that began filling part way into the long window's older half leaves most of
// that half level, and the repeated median reads the fill's steep points as outliers of
// that level: the older half's robust slope is 0, and only its rise says the window slows
// (x_gc_sawtooth_cache_fill seed 12: the long window's envelope, in blocks, when the slow
// rule paged for 20 minutes). A leak from any onset in the window, under noise of a
// quarter of sig, does not slow by the halves' rises: its newer half has it throughout,
// its older half at most in part.
func TestDeceleratesAfterLevel(t *testing.T) {
	var sc scratch
	seed12 := []float64{7.4002401e+07, 7.4002401e+07, 7.1444462e+07, 7.1444462e+07, 7.1444462e+07, 7.1444462e+07,
		2.9246673e+08, 2.726894347e+09, 4.485483974e+09, 5.850307289e+09, 6.222516836e+09, 6.96335536e+09,
		7.452782869e+09, 7.665634898e+09, 7.676967133e+09, 7.936102424e+09, 7.936102424e+09, 8.064671227e+09,
		8.095904769e+09, 8.095904769e+09, 8.095904769e+09}
	x := make([]float64, len(seed12))
	for i := range x {
		x[i] = -120 + float64(i)*5.9
	}
	const sig = 64 * mib
	h := len(x) / 2
	if older := sc.repeatedMedian(x[:h], seed12[:h]); older > 0 {
		t.Fatalf("the older half's repeated median is %v, not 0: the case does not test the rise", older)
	}
	if !sc.decelerates(x, seed12, sig) {
		t.Errorf("seed 12's envelope: a fill from a level older half, creeping after: not decelerating")
	}
	r := rand.New(rand.NewPCG(12, 1))
	// Fills whose steep part is in the older half (τ in blocks, from block start); one
	// that starts later is mostly in the newer half, which the halves cannot tell.
	for _, c := range []struct {
		tau  float64
		last int
	}{{1, 6}, {2, 6}, {4, 4}} {
		for start := 2; start <= c.last; start++ {
			y := make([]float64, len(x))
			for i := range y {
				y[i] = 500*mib + r.NormFloat64()*sig/4
				if dt := float64(i - start); dt > 0 {
					y[i] += 4096 * mib * (1 - math.Exp(-dt/c.tau))
				}
			}
			if !sc.decelerates(x, y, sig) {
				t.Errorf("a 4 GiB fill, τ %v blocks, from block %d: not decelerating", c.tau, start)
			}
		}
	}
	robust := 0
	for onset := 0; onset < len(x)-3; onset++ {
		for _, rate := range []float64{5, 20, 100} { // MiB a block
			for rep := range 20 {
				y := make([]float64, len(x))
				for i := range y {
					y[i] = 500*mib + r.NormFloat64()*sig/4
					if i > onset {
						y[i] += rate * float64(i-onset) * mib
					}
				}
				// The repeated medians alone may read a slope of noise as slowing, as
				// they did before; the halves' rises add none.
				older, newer := sc.repeatedMedian(x[:h], y[:h]), sc.repeatedMedian(x[h:], y[h:])
				byMedians := older > 0 && newer < older/2
				if byMedians {
					robust++
				}
				if sc.decelerates(x, y, sig) && !byMedians {
					t.Errorf("a leak of %v MiB a block from block %d (draw %d): decelerating by the halves' rises", rate, onset, rep)
				}
			}
		}
	}
	t.Logf("the repeated medians alone read %d of the leaks' draws as slowing", robust)
}

// medianSmall leaves its input as it was, and reads every value however many there are:
// a stack buffer shorter than v must not cut the median short.
func TestMedianSmall(t *testing.T) {
	for _, n := range []int{1, 2, 5, longBlocks, longBlocks + 1, 3 * longBlocks} {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(n - i) // descending: 1..n reversed
		}
		orig := slices.Clone(v)
		want := float64(n+1) / 2
		if got := medianSmall(v); got != want {
			t.Errorf("median of 1..%d: got %v, want %v", n, got, want)
		}
		if !slices.Equal(v, orig) {
			t.Errorf("n=%d: medianSmall reordered its input", n)
		}
	}
}

// TestPlateaus: a level held for a whole window and then left is found as held, with
// the windows that held it; a ramp, a burst shorter than the window and a level not yet
// fallen from are not.
func TestPlateaus(t *testing.T) {
	const w = 10
	series := func(f func(i int) float64, n int) (xs, ys []float64) {
		for i := range n {
			xs, ys = append(xs, float64(i-n+1)), append(ys, f(i))
		}
		return xs, ys
	}
	var qmin, qmax []int
	held := func(xs, ys []float64) (float64, []int) {
		pc := make([]int, len(xs)+1)
		return plateaus(xs, ys, w, 5, &qmin, &qmax, pc), pc
	}
	// 20 points at 100, then 30 at 1100 (±2), then a fall to 300 and a climb back.
	xs, ys := series(func(i int) float64 {
		switch {
		case i < 20:
			return 100
		case i < 50:
			return 1100 + float64(i%3-1)*2
		default:
			return 300 + 40*float64(i-50)
		}
	}, 70)
	h, pc := held(xs, ys)
	if h != 1098 {
		t.Errorf("held %v after a fall from 1100±2 held for 30 points, want 1098 (its least floor)", h)
	}
	if !heldBetween(xs, pc, w, 19, 50) {
		t.Error("the level held from point 20 to 49 is not found between them")
	}
	if heldBetween(xs, pc, w, 45, 50) || heldBetween(xs, pc, w, -1, 9) {
		t.Error("a plateau found in a stretch shorter than the window")
	}
	if !heldBetween(xs, pc, w, -1, 15) {
		t.Error("the first level, held from the first point, not found")
	}
	// A ramp, and a burst of 8 points at +500, never fall from a held level.
	xs, ys = series(func(i int) float64 { return 100 + 20*float64(i) }, 60)
	if h, _ := held(xs, ys); !math.IsInf(h, -1) {
		t.Errorf("held %v on a ramp", h)
	}
	xs, ys = series(func(i int) float64 {
		if i >= 30 && i < 38 {
			return 600
		}
		return 100
	}, 60)
	if h, _ := held(xs, ys); !math.IsInf(h, -1) {
		t.Errorf("held %v around a burst shorter than the window", h)
	}
	// A level still held (no fall yet) is not held.
	xs, ys = series(func(i int) float64 { return 100 + 1000*float64(min(i/20, 1)) }, 60)
	if h, _ := held(xs, ys); !math.IsInf(h, -1) {
		t.Errorf("held %v with no fall", h)
	}
}

// TestPlateausReusesBuffers: plateaus runs at every bucket close of every series, so its
// queues must keep their capacity from one close to the next. Popping their fronts by
// reslicing lost it and allocated at every close (BenchmarkObserve: 1 allocation and
// 368 B a sample).
func TestPlateausReusesBuffers(t *testing.T) {
	const n = 240
	xs, ys := make([]float64, n), make([]float64, n)
	for i := range n {
		xs[i], ys[i] = float64(i-n+1), float64(100+(i/30)*50)
	}
	var qmin, qmax []int
	pc := make([]int, n+1)
	plateaus(xs, ys, 20, 5, &qmin, &qmax, pc) // sizes the buffers
	if a := testing.AllocsPerRun(20, func() { plateaus(xs, ys, 20, 5, &qmin, &qmax, pc) }); a != 0 {
		t.Errorf("plateaus allocated %v times a call with its buffers sized", a)
	}
	// slidingMin shares plateaus' deque at every close: it must not give back the
	// capacity either.
	env := make([]float64, n)
	if a := testing.AllocsPerRun(20, func() { slidingMin(xs, ys, 20, env, &qmin); plateaus(xs, ys, 20, 5, &qmin, &qmax, pc) }); a != 0 {
		t.Errorf("slidingMin then plateaus allocated %v times a call", a)
	}
}
