package trend

import (
	"math"
	"slices"
	"time"
)

// sigmaMin is the smallest noise the floors are credited with: NVML reports a process's
// memory in whole MiB, and nothing below a MiB is worth a page.
const sigmaMin = 1 << 20

// steadyPace is how much of its average pace since the start a rise must keep in its
// newest short window to be a leak from the start rather than a warm-up: a fill whose
// total grows as t^a rises at a times its average pace, and fills slow down (a
// coupon collector of shapes or kernels, a CUDA context's modules) well below 0.8,
// while a leak keeps 1.
const steadyPace = 0.8

// longBlocks is how many blocks the long window is fitted in: 5-minute blocks at the
// defaults, each the minimum of its floors.
const longBlocks = 24

// fastBuckets is how many consecutive rising buckets the fast rule wants: with 30 s
// buckets, three increments fit within two minutes of a leak's onset wherever in its
// bucket the onset falls (the first, partial bucket may not rise at all).
const fastBuckets = 3

// roomyBuckets bounds from below the steep rises in a row the fast rule wants where the
// GPU has room (no urgency, see track): more than twice fastBuckets, three and a half
// minutes at the defaults. A saturated server's floor ramps with its load as steeply
// and as rigidly as a leak for a minute or three; measured with the other tests of a
// rise clear of load as they stood then (docs/leak-detection.md, round 4): runs of 3, 4
// and 5 paged on 8, 3 and 2 of 100 saturated bursts, 6 on none but on
// TestSaturatedBurst's 3-minute ramp.
const roomyBuckets = 2 * fastBuckets

// urgentWindows is how many short windows of memory left, at a steep rise's pace, make
// the fast rule urgent: two, so that a leak of 100 MiB/min or more that would fill a
// nearly full GPU in under 20 minutes pages within about two minutes of its onset.
const urgentWindows = 2

// steadyRise bounds how unevenly the newest two of a fast rise's buckets may rise for the
// urgent fast rule to page on them: the larger rise at most steadyRise times the smaller.
// A leak adds the same bytes every bucket (a constant pace; what jitters is the idle
// moment's phase and the noise, both small next to a fast step), so its floor climbs in
// even steps. A saturated server's floor is the least load in flight, drawn anew every
// bucket from requests that come and go, so it climbs as unevenly as the load (steps of
// 150 then 600 then 200 MiB) even where its buckets do not stretch. An uneven pair does
// not veto the rise: the next bucket is judged again with the newest pair, so a leak
// whose floor jittered pages a bucket later. Two, plus the noise: a floor whose idle
// moment falls at the start of one bucket and a third into the next (requests in a
// regular cycle) climbs in steps of exactly 1:2 (TestFastRuleUrgentPartWayUp). Measured
// on seeds 1–100 (docs/leak-detection.md, round 4 third pass): saturated_burst_near_full
// 22 → 16 pages, fast_leak_near_full 14 → 15 over 2 minutes, least forecast lead 2m56s
// unchanged; without the noise term 16 over; 1.5 kept 14 bursts but put 21 fast leaks over
// 2 minutes, 2.5 and 3 kept 18 and 20 bursts.
const steadyRise = 2

// view is what one column's floors say at a bucket close (see analyze).
type view struct {
	present bool    // the short window holds at least minPoints floors
	newest  float64 // the envelope's newest point
	sigma   float64
	sig     float64 // the smallest rise that counts: max(4σ, MinRate × ShortWindow)
	w       int64   // envelope width in buckets: the longest give-back excursion seen

	short, long fitResult // the floors themselves, exported
	judge       fitResult // the envelope over max(short window, 3 w)
	half        fitResult // the envelope over max(half a short window, 3 w), when early
	halfSmooth  bool      // the newest bucket changes scatter ≤ smoothNoise σ, when early
	envLong     fitResult // the envelope over the long window since the warm-up, in blocks
	recent      fitResult // the envelope's newest quarter of the long window
	// sigLong and sigRecent are sig for envLong's and recent's blocks: their own noise.
	sigLong, sigRecent float64
	decel              bool // the long envelope slows down (see decelerates)
	// still and stillRest: how the floors since the warm-up, and the floors at rest
	// (atRestLong's), have stood still (see lastRise); only where a long-window line at
	// MinRate or more can use them (see standstill.stopped).
	still, stillRest standstill
	// envLong, recent and decel are only computed once the slow rule could apply.
	longSpan int64 // buckets between the oldest and newest floor in the long window

	settled  bool // the envelope's range over the short window is within sig
	smooth   bool // since first seen, the floors rose in most buckets, not slowing down
	line     bool // over the newest half of the short window the floors rise in most buckets
	falls    bool // over the same half, the floors fall by more than 2σ in more than one bucket in four
	fast     bool // a steep, clean rise over a quiet floor (see the fast rule)
	fastRate float64
	cont     bool // the newest bucket still rises at half the fast rate or more
	contPair bool // or the newest two buckets together do (see fastRule)
	// restRun: the floors at rest rose as the fast rule's run does, skipping the buckets
	// that had no moment at rest (see restRun), at restRunRate bytes per second.
	restRun     bool
	restRunRate float64
	rigid       bool      // the fast rise shifted its buckets' samples up, it did not stretch them
	rested      bool      // its buckets kept their moments at rest by the exact count (urgent pages take it for rigid)
	clear       clearance // and how it cleared what load could explain (see fastRule): it may page on a roomy GPU
	even        bool      // its newest two buckets rose within steadyRise of each other (urgent pages need it)
	goes        bool      // the newest bucket did not stand still within itself (see lateGoes; urgent pages need it)
	// stretched: the newest half of the short window's buckets spread wider than the
	// buckets before it (see stretched): load in flight, not a leak, lifted the floor.
	stretched bool
	// noisy: the judged window's floors jump by noisier times the long window's noise
	// and no exact line under them rises: the least load in flight (see analyze).
	noisy bool
	// noisyLong: the long window's newest quarter's floors jump by noisier times its
	// quietest quarter's and no exact line under them rises (see analysisScratch.noisyLong).
	noisyLong bool
	// slowing: over two short windows (the judged window if longer), the rise from its
	// foot goes ever slower (see slowing): a cache filling to its budget. Not for NVML's
	// coarse used.
	slowing bool
	// slowRamp: slowing read on the floors since the newest collection of a collector's
	// sawtooth (a clean ramp, see analyze), whatever the envelope, which lags it, says.
	// slowing includes it.
	slowRamp bool
	// idleLost: the newest buckets lost the idle moments the series showed before (see
	// idle): its floor is the least load in flight of a server that is never idle any
	// more, not memory that stays. idleLostLong: some stretch of the long window lost
	// them (the slow rule's rise may be a load's climb). Allocated only.
	idleLost, idleLostLong bool
	// atRest: the line through the floors the client said were at rest (see restFit),
	// when the idle moments were lost; it frees a rise they hold.
	atRest fitResult
	// atRestInferred: atRest is exactFit's, the client does not say which samples were
	// at rest.
	atRestInferred bool
	// atRestLong: the same over the long window since the warm-up, when some stretch of
	// it lost them (the slow rule's).
	atRestLong fitResult
	// idleGone: the fast rise's buckets lost the idle moments of the quiet window before
	// it (see fastRule). restThin: they kept so few that they are no evidence of a leak's
	// idle moments rising with it yet (see restThin; urgent pages need them).
	idleGone, restThin bool
	// sawRamp: the newest rise is the next ramp of a sawtooth the series showed (see
	// sawCycles.ramp): a collector's cycle, judged on its troughs when it comes back.
	sawRamp bool
	// held: the highest level the floors held for a whole short window within the long
	// window and then fell from (see plateaus); level: the least of the newest
	// fastBuckets fitted floors. A level under held + sig is a refill (see judge).
	held, level float64
	// floor: the newest floor itself (not the envelope's); fell: on a series that
	// showed a collector's sawtooth (see sawCycles), within the short window a
	// bucket's floor fell by sig below the one before's: a collection. (On any series,
	// noise that falls by sig kept fills the fast rule took: -stress x_cache_fill_large
	// 0 → 6 false verdicts.)
	floor    float64
	fell     bool
	steepSaw bool
	// pastSaw: the floors' own line over the short window rises more than steadyRise
	// times as steeply as the steepest ramp of the sawtooth from its lowest level
	// (backLow): what keeps growth that steepSaw started (see track).
	pastSaw bool
	// troughs: what the collections of the series' sawtooth came back to (see
	// risingTroughs); not for NVML's coarse used.
	troughs troughRise
	// twoWay: over the judged window the floors stepped down to stay as well as up (see
	// twoWay), and not up so much more often that chance does not explain it.
	twoWay bool
	// twoWayLong: the same over the long window since the warm-up, for steps of 4 sig
	// (the slow rule's: a busy server's floors step both ways by sig, see track).
	twoWayLong bool
}

// analyze computes the view of column c at the close of bucket h.last. Everything is
// recomputed from the ring (a few thousand operations for the default 240 floors), into
// the engine's scratch buffers.
//
// The long-window rules (envLong, recent, decel, longSpan) only use the floors from
// bucket since on: the warm-up's growth is excused, and a long window still full of a
// cache that filled in steps must not read as a slow leak once the warm-up is over.
//
// coarse marks NVML's used bytes of a process that pushes nothing (or of a GPU);
// needSmooth asks for the smooth test (the warm-up's); early for the half-window fit
// (allocated, and memory outside the allocator).
func (e *Engine) analyze(h *history, c int, since int64, coarse, needSmooth, early bool) view {
	cfg := &e.cfg
	sc := &e.sc
	nl := int64(len(h.idx))
	ns := int64(cfg.ShortWindow / cfg.Bucket)
	var v view
	if !h.started {
		return v
	}

	// The long window's floors, oldest first, x = bucket index − newest (≤ 0). The point
	// fitted is min(floor[b−1], floor[b]): a floor can only be wrong upwards (a bucket in
	// which the process was never idle), so one raised bucket vanishes while a line only
	// shifts by a bucket.
	xs, ps, fs := grow(&sc.x, 0), grow(&sc.p, 0), grow(&sc.f, 0)
	prev, prevOK := 0.0, false
	for b := h.last - nl + 1; b <= h.last; b++ {
		f, ok := h.get(c, b)
		if !ok {
			prevOK = false
			continue
		}
		p := f
		if prevOK && prev < p {
			p = prev
		}
		xs, ps, fs = append(xs, float64(b-h.last)), append(ps, p), append(fs, f)
		prev, prevOK = f, true
	}
	sc.x, sc.p, sc.f = xs, ps, fs
	n := len(xs)
	if n == 0 {
		return v
	}
	// The first point the long-window rules may use.
	slo := 0
	for slo < n && int64(xs[slo])+h.last < since {
		slo++
	}
	if slo < n {
		v.longSpan = int64(xs[n-1] - xs[slo])
	}
	inShort := 0
	for i := n - 1; i >= 0 && xs[i] > -float64(ns); i-- {
		inShort++
	}
	v.present = inShort >= minPoints

	// Noise: over the long window (see diffSigma).
	v.sigma = diffSigma(xs, ps, &sc.d)
	sigma := math.Max(v.sigma, sigmaMin)
	v.sig = e.sigOf(sigma)

	// Give-back excursions: a floor that rose at least sig above a level and came back
	// down to it (within sig/2), or fell by sig from higher floors since the window
	// began (the series was higher all that time and gave it back). The longest, in
	// buckets, is the envelope width: memory that this series has shown it gives back (a
	// garbage collector's cycle, a burst) is judged on its troughs, by the envelope
	// min(floors over the last w buckets). The steepest pace at which an excursion
	// longer than fastBuckets rose to its top is back: a sawtooth's ramps (a collector's
	// garbage, the load of a burst) rise at about the same pace each time, and a leak on
	// the series adds its own to it (see fastRule).
	// backLow: the same over the excursions that rose from the lowest level any rose
	// from (within sig): on a collector's sawtooth, a leak's ramp that the next
	// collection cuts short shows as an excursion too, from part way up the leak, at
	// the leak's pace, and must not excuse the leak (see fastRule).
	back, backLow, lowest := 0.0, 0.0, math.Inf(1)
	var saw sawCycles
	sc.tr = sc.tr[:0]
	fromFirst := int64(xs[0])+h.last == h.first // the window reaches the process's first bucket
	// A fall from a level held for a short window to within a quarter of its height over
	// the window's lowest floor is no give-back: the series stood there and let go of
	// nearly all of it (a cache cleared, engines torn down), a reset, not the end of a
	// cycle it repeats. Read as an excursion, it made the envelope as wide as the level
	// was long (an hour or more), blind to a leak after it until the level left the long
	// window (vram_eval -stress, x_cache_refill_leak: 63 of 100 missed, 72 minutes at the
	// median). The fall's depth is where it bottoms within fastBuckets: memory freed
	// over seconds can straddle a bucket's close (seed 1's 4072 → 3544 → 3364 MiB). Not a
	// smaller fall: a cache at capacity that swaps one adapter for a smaller one steps
	// down from a level it held too, and its walk's next steps up are no leak
	// (x_adapter_churn*, seeds 1–100: 22 false verdicts of 300 before, 29 where any such
	// fall counted, 21 at half the height, 20 at a quarter; seeds 10001–10100, held out:
	// 24, 29 at half, 23 at a quarter).
	// Both need a floor sig under one before it (a give-back, a fall from a held level):
	// floors that never fell so far (most series at most closes) skip the pass.
	v.held = math.Inf(-1)
	fellBySig, lowFloor := false, ps[0]
	for i, hi := 1, ps[0]; i < n; i++ {
		fellBySig = fellBySig || hi-ps[i] >= v.sig
		hi, lowFloor = math.Max(hi, ps[i]), math.Min(lowFloor, ps[i])
	}
	if fellBySig {
		sc.pc = grow(&sc.pc, n+1)
		v.held = plateaus(xs, ps, ns, v.sig, &sc.dq, &sc.dq2, sc.pc)
	}
	for j := 1; j < n; j++ {
		k, top, gave := gaveBack(ps, j, v.sig, fromFirst)
		if gave && slices.Min(ps[j:min(j+fastBuckets, n)])-lowFloor <= (ps[top]-lowFloor)/4 && heldBetween(xs, sc.pc, ns, k, j) {
			gave = false
		}
		if gave {
			prevDrop := saw.drop
			saw.drop = j
			v.w = max(v.w, int64(xs[j]-xs[max(k, 0)]))
			// The pace is the rise to where the excursion stood when it gave back (the
			// higher of its last two points), not to its highest point: a collector's
			// ramp and a long generation climb until they give back, while two busy
			// buckets in a row leave one point part way up as high as a burst's top (see
			// analyze's fitted points). Read as the top of a collector's cycle, such a
			// point made a pace of 139 MiB/min out of ramps of 11, which excused a leak
			// of 279 MiB/min for the 30 minutes it ran (vram_eval -stress,
			// x_gc_sawtooth_fast_leak seed 13).
			end := j - 1
			if j-2 > k && ps[j-2] > ps[end] {
				end = j - 2
			}
			if k >= 0 && xs[j]-xs[k] > fastBuckets && xs[end] > xs[k] {
				pace := (ps[end] - ps[k]) / (xs[end] - xs[k])
				back = math.Max(back, pace)
				if ps[k] <= lowest+v.sig {
					// Read to where the ramp robustly stood (see rampLevel): on a
					// collector's sawtooth (where backLow stands in for back, see
					// fastRule) two busy buckets in a row at a ramp's end left a point
					// that made a ramp of 29 MiB a bucket read as 99, which excused a
					// leak of 322 MiB/min for the 30 minutes it ran (vram_eval -stress,
					// x_gc_sawtooth_fast_leak seed 15).
					if lv, at, ok := rampLevel(end, k, xs, ps); ok {
						pace = (lv - ps[k]) / (at - xs[k])
					}
					backLow = math.Max(backLow, pace)
				}
				lowest = math.Min(lowest, ps[k])
				// The ramp a collection cut began at the trough before it, where nothing
				// fell by sig since: a leak lifts each trough, and the walk back from a
				// higher one stops part way up the ramp, the sooner the shorter the cycle
				// (the issue's 30 MiB/min of garbage over a 10 MiB/min leak, collected 5
				// minutes after the one before: the walk climbs 6 buckets of a 10-bucket
				// ramp). Not where the walk climbed no more than fastBuckets: a busy
				// server's floor lifted by its load for a bucket or two and back, part way
				// up a collector's ramp, is no collection (gc_sawtooth seeds 32 and 100
				// paged on such "troughs" rising at the garbage's pace).
				kc := k
				if m := len(sc.tr); m > 0 {
					if t0 := sc.tr[m-1]; t0 < k && ps[t0] <= ps[j] && prevDrop <= t0+2 && xs[top]-xs[k] > fastBuckets {
						kc = t0
					}
				}
				if saw.add(j, kc, top, xs, ps) {
					sc.tr = noteTrough(sc.tr, j, xs, ps)
				}
			}
		}
	}
	v.sawRamp, v.floor = saw.ramp(xs, ps, v.sig), ps[n-1]
	// The judged window: the short window, or three envelope widths if longer, so that
	// a trend under a sawtooth is seen across at least three of its cycles; and the span
	// a rise's slowing is read over, on the envelope and on the troughs (troughsSlow):
	// two short windows, or the judged window if longer.
	nj := min(max(ns, 3*v.w), nl)
	nSlow := min(max(2*ns, nj), nl)
	if !coarse {
		v.troughs = risingTroughs(sc.tr, xs, ps, grow(&sc.held, n), v.sig, float64(since-h.last), -float64(nSlow), &saw)
	}
	for i := n - 1; saw.hi > 0 && i > 0 && xs[i] > -float64(ns) && !v.fell; i-- {
		v.fell = fs[i] < fs[i-1]-v.sig
	}
	env := grow(&sc.env, n)
	slidingMin(xs, ps, v.w, env, &sc.dq)
	v.newest = env[n-1]
	v.level = ps[n-1]
	for i := n - 2; i >= 0 && i >= n-fastBuckets; i-- {
		v.level = math.Min(v.level, ps[i])
	}

	// The floors' own fits, exported: the short window, and the long window in blocks.
	lo := n - inShort
	v.short = sc.robustFit(xs[lo:], ps[lo:], sigma)
	// Steep past the sawtooth (steepSaw): on a series that showed a collector's
	// sawtooth, the floors' own line over the short window rises at the fast rate or
	// more, and faster than twice the steepest ramp the sawtooth climbed from its lowest
	// level (backLow), by the fast step; and the floors rose in at least half the
	// window's buckets. Under a sawtooth the judged window is three envelope widths
	// (up to 40 minutes) of the troughs, which lag a leak by a cycle, and a leak much
	// steeper than the garbage outruns them: a collection gives back less than the leak
	// added since the trough before, which is no cycle, and the troughs read go stale
	// (see risingTroughs). On a busy server the collections and the buckets without an
	// idle moment keep breaking the fast rule's run. What no ramp of the sawtooth does is
	// climb a whole short window at more than twice the pace of the steepest one it gave
	// back (a collector's garbage piles up with the requests at about the same pace
	// each cycle): vram_eval -stress, x_gc_sawtooth_fast_leak seed 15, a leak of 322
	// MiB/min under ramps of 29 MiB a bucket, never flagged in the 30 minutes it ran,
	// now after 8 minutes. Rising in at least half the buckets (by more than a MiB: the
	// fitted points repeat where a bucket held no idle moment, and a collection falls)
	// because a cache at capacity swapping engines outside the allocator climbs as
	// steeply in a staircase of a few large steps (x_adapter_churn_unattributed seed 19,
	// 5 rises in 19 buckets, paged for four minutes without this; the leak rose in 13–16).
	// And not where those floors rise ever slower (see slowing; read on the floors, the
	// envelope lags): a cache that fills on such a server outruns its ramps at first
	// (x_gc_sawtooth_cache_fill seed 60, 444 then 125 MiB/min, paged at 22:30 without
	// this).
	step := cfg.FastRate * cfg.Bucket.Seconds()
	v.pastSaw = v.short.ok && v.short.slope > steadyRise*backLow
	// slowShort: the test of slowing on the short window's floors, once read here; the
	// test since the newest collection below reads the same floors when that
	// collection is older than the window.
	slowShort, slowShortRead := false, false
	if saw.hi > 0 && e.qualifies(v.short) && v.short.slope >= step && v.short.slope-steadyRise*backLow >= step {
		up, all := 0, 0
		for i := lo + 1; i < n; i++ {
			if xs[i]-xs[i-1] == 1 {
				all++
				if ps[i] > ps[i-1]+sigmaMin {
					up++
				}
			}
		}
		if 2*up >= all {
			slowShort, slowShortRead = sc.slowing(xs[lo:], ps[lo:], v.sig, sigma), true
			v.steepSaw = !slowShort
		}
	}
	bx, by := blocks(xs, ps, longBlocks, &sc.bx, &sc.by)
	v.long = sc.robustFit(bx, by, sigma)

	// The judged window (nj, above).
	jlo := n
	for jlo > 0 && xs[jlo-1] > -float64(nj) {
		jlo--
	}
	jx, jy := blocks(xs[jlo:], env[jlo:], 40, &sc.jx, &sc.jy)
	v.judge = sc.robustFit(jx, jy, sigma)
	v.twoWay = twoWay(xs[jlo:], ps[jlo:], v.sig)
	// Whether it rises ever slower, judged over two short windows (see slowing).
	slo2 := n
	for slo2 > 0 && xs[slo2-1] > -float64(nSlow) {
		slo2--
	}
	v.slowing = !coarse && sc.slowing(xs[slo2:], env[slo2:], v.sig, sigma)
	// On a series that showed a collector's sawtooth the envelope is its troughs, a
	// cycle behind: a cache that fills on such a server outruns the ramps at first, the
	// fast rule takes its run, and the envelope reads no slowing until collections
	// come back to the fill's later floors (x_gc_sawtooth_cache_fill seed 3, 179
	// MiB/min at first, `leak` for 9 minutes). Since the newest collection (within
	// the short window) the floors are a clean ramp, the garbage's pace and what
	// stays: a leak adds a constant pace to it, a fill one that slows. Only where the
	// newest fall was a collection (a cycle add counted): a cache at capacity that
	// swaps falls at each eviction, and the loads since are steps, no ramp; read as
	// slowing, they let leaks under such churn go (x_adapter_churn_leak: 7 more never
	// fired VRAMProcessLeak, 50 → 57 of 100).
	if !coarse && saw.hi > 0 && saw.last >= saw.drop {
		if from := max(lo, saw.drop); from == lo && slowShortRead {
			v.slowRamp = slowShort
		} else {
			v.slowRamp = sc.slowing(xs[from:], ps[from:], v.sig, sigma)
		}
		v.slowing = v.slowing || v.slowRamp
	}
	if coarse {
		// NVML's view: the allocator cache's high-water mark steps up by segments as
		// rarer, larger requests arrive; only steps of sig count as new highs.
		v.judge.highs = highs(jy, v.sig)
	}
	// For the paging series that push (early): the newest half of the judged window, on
	// which a rise that began within the short window fills half the points about 2.5
	// minutes sooner than on the whole; and whether its newest changes are as smooth as a
	// line's (see track).
	if early {
		v.half = v.judge
		if nh := min(max(ns/2, 3*v.w), nl); nh < nj {
			hlo := n
			for hlo > 0 && xs[hlo-1] > -float64(nh) {
				hlo--
			}
			hx, hy := blocks(xs[hlo:], env[hlo:], 40, &sc.jx, &sc.jy)
			v.half = sc.robustFit(hx, hy, sigma)
		}
		v.halfSmooth = recentScatter(xs, ps, max(minPoints, int(ns)/4), &sc.bx) <= smoothNoise*sigma
	}
	// Noisy: the floors over the judged window jump from bucket to bucket by noisier
	// times what they did over the long window, and no exact line under them rises (see
	// exactFit): the floor is the least load in flight, not memory that stays. A server
	// whose traffic climbs until no bucket has an idle moment draws its floor anew from
	// the load at every bucket; that floor climbs with the load, and its lower envelope
	// fits a line at 0.85–0.92 (load_diurnal without the counts, sampled every 5–10 s,
	// where too few samples are due for the test of lost idle moments to say anything).
	// A leak leaves the floors' noise as it was, and where a busy server's noise did
	// grow, its buckets with an idle moment still lie on the leak's line to a few MiB.
	// Read only where the short rule's fits would start growth: most closes skip the
	// judged window's noise, and exactFit's repeated medians run only past it.
	if !coarse && (e.qualifies(v.judge) || (early && e.qualifies(v.half))) && diffSigma(xs[jlo:], ps[jlo:], &sc.d) > noisier*sigma {
		ex := sc.exactFit(xs, fs, nj, sigma)
		v.noisy = !ex.ok || ex.slope/cfg.Bucket.Seconds() < cfg.MinRate
	}
	// The slow rule's fits, only once it could apply: half a long window since the
	// warm-up, and an envelope that rises at all.
	if v.longSpan >= nl/2 {
		ex, ey := blocks(xs[slo:], env[slo:], longBlocks, &sc.bx, &sc.by)
		v.envLong, v.sigLong = sc.robustFit(ex, ey, sigma), v.sig
		v.twoWayLong = twoWay(xs[slo:], ps[slo:], longStep*v.sig)
		b := e.cfg.Bucket.Seconds()
		// Below MinRate only the slow rule resolves a rise, and it judges the envelope in
		// blocks, each the least of many floors: there its noise is its own scatter about
		// its line, not one floor's from the next. A busy server's floors scatter by tens
		// of MiB (the least of a few samples, mid-request or not) while its blocks' least
		// floors hardly move, and a 0.3 MiB/min leak rises 36 MiB in two hours: measured
		// against one floor's sig (60–70 MiB there) it was never a rise at all
		// (x_slow_leak_busy: 65 of 100 missed). Not at MinRate or more, which the short
		// window resolves and whose tests of load judge: a day's traffic climbing into
		// saturation has an envelope as smooth, whose one floor's sig was all that kept
		// the slow rule off its climb (load_diurnal: 7 → 13 false verdicts).
		own := v.envLong.ok && v.envLong.slope/b < e.cfg.MinRate
		if own {
			v.envLong, v.sigLong = e.ownNoise(v.envLong, ey, sigma)
		}
		if v.envLong.ok && v.envLong.slope/b >= e.cfg.MinRate {
			// Only where the slow rule's test of floors that stopped applies (see track).
			v.still = lastRise(xs[slo:], ps[slo:], grow(&sc.held, n-slo), v.sig, heldFor(ns))
		}
		if v.envLong.ok && v.envLong.slope/b >= e.cfg.SlowRate/2 {
			v.decel = sc.decelerates(ex, ey, v.sigLong)
			qlo := n
			for qlo > slo && xs[qlo-1] > -float64(max(nl/4, ns)) {
				qlo--
			}
			qx, qy := blocks(xs[qlo:], env[qlo:], 40, &sc.jx, &sc.jy)
			v.recent, v.sigRecent = sc.robustFit(qx, qy, sigma), v.sig
			if own {
				v.recent, v.sigRecent = e.ownNoise(v.recent, qy, sigma)
			}
			// Only where the slow rule would start on this close (its line, not slowing,
			// its newest quarter rising: see track's slowOK and slowStart), the one place
			// that reads it: a series already growing or whose line does not qualify pays
			// nothing for exactFit's repeated medians over the long window.
			if !coarse && v.slowRises(b, e.cfg.SlowRate, e.cfg.MinFit) && v.recent.rise >= v.sigRecent {
				v.noisyLong = sc.noisyLong(xs[slo:], fs[slo:], nl, e.cfg.SlowRate*b, sigma)
			}
		}
	}

	// Settled: over the short window the envelope moved less than sig.
	if inShort >= minPoints && xs[n-1]-xs[0] >= float64(ns-1) {
		mn, mx := math.Inf(1), math.Inf(-1)
		for i := lo; i < n; i++ {
			mn, mx = math.Min(mn, env[i]), math.Max(mx, env[i])
		}
		v.settled = mx-mn <= v.sig
	}

	// Line: does the current rise go up (by more than the noise) in most buckets, like a
	// line, or in a few, like a staircase? Three in four of the changes over the newest
	// half of the short window (a rise that began mid-window is judged on itself), at
	// least minPoints of them. Both already rise as growth: this only tells their
	// shapes apart, for the probation after a warm-up. Falls: over the same changes, the
	// floor fell by more than 2σ in more than one in four (see track).
	var up, down, all int
	for i := n - 1; i > lo; i-- {
		if xs[i]-xs[i-1] != 1 {
			continue
		}
		all++
		if ps[i] > ps[i-1]+sigma {
			up++
		}
		if ps[i] < ps[i-1]-2*sigma {
			down++
		}
		if all >= minPoints && float64(all) >= float64(ns)/2 {
			break
		}
	}
	v.line = all >= minPoints && 4*up >= 3*all
	v.falls = all >= minPoints && 4*down > all

	// Smooth (asked for during the warm-up only): since the series was first seen, the
	// same sign test says the floor rose in most buckets, and in each of the last
	// fastBuckets (the rise goes on), and its newest short window (at most the newest
	// half of what it has seen) rises at least steadyPace of its average pace since then. A leak from the first
	// request is a line from the start; a warm-up is front-loaded (the model, then the
	// cache, then ever rarer shapes and kernels), so it slows down; a staircase rises
	// in few buckets.
	if needSmooth && h.last-h.first < nl && n >= 2*minPoints {
		up, all = 0, 0
		rising := n > fastBuckets // and still rising, bucket after bucket
		for i := 1; i < n; i++ {
			if xs[i]-xs[i-1] == 1 {
				all++
				if ps[i] > ps[i-1]+sigma {
					up++
				} else if i >= n-fastBuckets {
					rising = false
				}
			}
		}
		if rising && all >= n-2 && up >= e.signCritical(all) {
			average := (ps[n-1] - ps[0]) / (xs[n-1] - xs[0])
			// The newest short window, or the newest half of the history if that is
			// shorter (a process just past its warm-up).
			nlo := n - min(inShort, n/2)
			newest := sc.repeatedMedian(xs[nlo:], ps[nlo:])
			v.smooth = average > 0 && newest >= steadyPace*average
		}
	}

	// A bucket's spread, less what a steady rise at the pace of its floor's rise since
	// the bucket before explains: its samples span that share of the bucket.
	spreadAt := func(i int) (float64, bool) {
		b := h.last + int64(xs[i])
		sp, ok := h.spreadOf(c, b)
		if !ok || i == 0 || xs[i]-xs[i-1] != 1 {
			return sp, ok
		}
		span, _ := h.spanOf(b)
		return sp - math.Max(fs[i]-fs[i-1], 0)*math.Min(span.Seconds()/cfg.Bucket.Seconds(), 1), true
	}
	idleAt := func(i int, exact bool) (int, int, bool) { return h.idleOf(h.last+int64(xs[i]), exact) }
	// told: the client said which of bucket i's samples were at rest (the idle counts
	// are its own, not inferred), on the column those counts are for.
	told := func(i int) bool { return c == h.idleCol && h.reportedAt(h.last+int64(xs[i])) }
	v.goes = c != h.idleCol || lateGoes(h, cfg.FastRate)
	// going: at rest, the newest bucket's last sample stood above its first by a quarter
	// of what the fast step puts between them, where the client said which were at rest
	// and they span half a bucket or more (see fastRule's clearRest).
	going := true
	if c == h.idleCol && h.restSpan >= cfg.Bucket/2 {
		going = h.restRise >= cfg.FastRate*h.restSpan.Seconds()/4
	}
	fr := e.fastRule(xs, env, fs, spreadAt, idleAt, told, sigma, v.sig, back, backLow, saw.hi, going)
	v.fast, v.fastRate, v.cont, v.contPair, v.rigid, v.clear, v.even, v.rested = fr.fast, fr.rate, fr.cont, fr.pair, fr.rigid, fr.clear, fr.even, fr.rested
	// restPt: the floor of bucket i's samples the client said were at rest (on the
	// column those counts are for), placed at the moment it was taken, x in buckets as xs.
	restPt := func(i int) (float64, float64, bool) {
		if c != h.idleCol {
			return 0, 0, false
		}
		when, r, ok := h.restPoint(h.last + int64(xs[i]))
		return xs[i] + when, r, ok
	}
	v.restRunRate, v.restRun = e.restRun(xs, env, restPt, h.restRise, h.restSpan, sigma, v.sig)
	v.idleGone, v.restThin = fr.chance <= goneChance, fr.chance <= restThin
	v.stretched = e.stretched(xs, spreadAt, sigma, ns, int64(len(h.spreadIdx)))
	if c == h.idleCol {
		v.idleLost, v.idleLostLong = idle(h, ns)
		if v.idleLost {
			if h.restFloor != nil {
				v.atRest = sc.restFit(h, xs, max(2*ns, nj), sigma)
			} else if h.last-since >= ns && v.judge.rise >= v.sig && !v.sawRamp {
				// Inferred from the floors' exactness (see exactFit), where a collector's
				// ramp is as exact as a leak: only where the envelope (the troughs of
				// what the series gives back) rose too, not on the next ramp of a
				// sawtooth it showed (it waits for its trough), and from a short window
				// after the warm-up (a rise from the start, a collector's first ramp,
				// is the warm-up's end to judge; since is past h.last until then).
				v.atRest, v.atRestInferred = sc.exactFit(xs, fs, max(2*ns, nj), sigma), true
			}
		}
		if v.idleLostLong && v.longSpan >= nl/2 {
			// The slow rule's span: the long window since the warm-up.
			v.atRestLong = sc.restFit(h, xs[slo:], nl, sigma)
			if v.atRestLong.ok && v.atRestLong.slope/e.cfg.Bucket.Seconds() >= e.cfg.MinRate {
				// The same reading of what the floors at rest hold (restFit left them in
				// rx, ry): a load that climbs lifts the others, not these.
				v.stillRest = lastRise(sc.rx, sc.ry, grow(&sc.held, len(sc.rx)), v.sig, heldFor(ns))
			}
		}
	}
	return v
}

// restFit is a robust line through the floors, over the newest span buckets, of the
// samples the client said were at rest (see history.restAt): where it reports its requests in
// flight, a server that lost its idle moments still shows the floor a leak grows in the
// buckets that had one, however rare, and load does not lift those. Over two short
// windows (or the judged window) because they are sparse.
func (s *scratch) restFit(h *history, xs []float64, span int64, sigma float64) fitResult {
	rx, ry := s.rx[:0], s.ry[:0]
	for i := range xs {
		if xs[i] <= -float64(span) {
			continue
		}
		if f, ok := h.restAt(h.last + int64(xs[i])); ok {
			rx, ry = append(rx, xs[i]), append(ry, f)
		}
	}
	s.rx, s.ry = rx, ry
	return s.robustFit(rx, ry, sigma)
}

// exactFit stands in for restFit where the client does not say which samples were at
// rest: a bucket with an idle moment has the floor a leak grows as its floor, to the
// byte (the allocator counts bytes, and short-lived tensors jitter it by a few MiB), so
// those buckets lie on one line; a bucket without one lies above it by the least load
// in flight, which is as random as the requests are (tens to hundreds of MiB). Over
// the newest span buckets, the line under the floors (fitted, then refitted to the
// floors not above it by more than the tolerance, twice) keeps the floors within
// restTol of it, plus half a bucket of its pace (an idle moment falls anywhere in its
// bucket); when at least a third of the floors, and minPoints, lie on it across at
// least half the span, the fit through them is the floors at rest. A server that lost
// its idle moments for good has floors that scatter with its load, and few of them
// within a few MiB of any line.
func (s *scratch) exactFit(xs, fs []float64, span int64, sigma float64) fitResult {
	rx, ry := s.rx[:0], s.ry[:0]
	for i := range xs {
		if xs[i] > -float64(span) {
			rx, ry = append(rx, xs[i]), append(ry, fs[i])
		}
	}
	s.rx, s.ry = rx, ry
	n := len(rx)
	if n < 2*minPoints {
		return fitResult{}
	}
	kx, ky := grow(&s.ex, n), grow(&s.ey, n)
	copy(kx, rx)
	copy(ky, ry)
	var slope, icpt, tol float64
	// keep puts into kx, ky the floors at most tol above the line (and, if both, at
	// most tol below it).
	keep := func(both bool) int {
		kx, ky = s.ex[:n], s.ey[:n]
		m := 0
		for i := range rx {
			if d := ry[i] - slope*rx[i] - icpt; d <= tol && (!both || d >= -tol) {
				kx[m], ky[m] = rx[i], ry[i]
				m++
			}
		}
		kx, ky = kx[:m], ky[:m]
		return m
	}
	for range exactPasses {
		slope = s.repeatedMedian(kx, ky)
		res := grow(&s.c, len(kx))
		for i := range kx {
			res[i] = ky[i] - slope*kx[i]
		}
		icpt = median(res)
		tol = restTol + math.Max(slope, 0)/2
		if keep(false) < minPoints {
			return fitResult{}
		}
	}
	m := keep(true)
	if m < minPoints || 3*m < n || kx[m-1]-kx[0] < float64(span)/2 {
		return fitResult{}
	}
	// Nor where a floor lies under the line, by more than the tolerance, lower than a
	// level the floors on the line reached before it: a bucket's floor is wrong only
	// upwards (load in flight), and a leak's memory stays, so its floors at rest never
	// come back under a level they reached (a leak whose pace follows the traffic, or
	// that stopped, leaves floors under a line through a third of them, but not under
	// their own past; the floors before its onset lie under its line, but before it
	// rose). Where requests are small and samples many (every 1–2 s), a bucket without an
	// idle moment has as its floor the least of some thirty draws of one or two small
	// requests, a few MiB up and as exact as a floor at rest; as the load climbs, a third
	// of the buckets line up on that least load in flight, while those that still had an
	// idle moment lie at the floor under it (TestSmallRequestsClimb: 5 of 20 climbs paged
	// without this; vram_eval load_diurnal seeds 2021 and 2026). A leak under such
	// traffic whose idle buckets are too few for a line of their own waits for the slow
	// rule (load_diurnal_leak seed 99: it had been flagged on the line above them).
	// A level is reached where two floors on the line in a row (of those on it) stand at
	// it or higher: one may be a bucket that a request spanned, on the line by chance
	// (vram_eval -stress, x_leak_per_request seed 44 was missed on one).
	level, prev := math.Inf(-1), math.Inf(-1)
	for i := range rx {
		switch d := ry[i] - slope*rx[i] - icpt; {
		case d < -tol && ry[i] < level-tol:
			return fitResult{}
		case math.Abs(d) <= tol:
			level, prev = math.Max(level, math.Min(prev, ry[i])), ry[i]
		}
	}
	// Exact floors are precise enough to tell a line from a fill that slows: a cache's
	// tail rises exactly too, ever slower, where a leak keeps its pace (steadyPace).
	if h := m / 2; h >= minPoints {
		older, newer := s.repeatedMedian(kx[:h], ky[:h]), s.repeatedMedian(kx[h:], ky[h:])
		if older > 0 && newer < steadyPace*older {
			return fitResult{}
		}
	}
	return s.robustFit(kx, ky, sigma)
}

// exactPasses is how often exactFit refits its line to the floors not above it: the
// first fit runs through the middle of floors of which up to two thirds lie above the
// floor at rest; each pass drops those and moves it down onto the rest.
const exactPasses = 3

// idleExpect is how many returns to the floor a stretch of buckets must have been due,
// at the series' best share, before having (almost) none says the idle moments are gone:
// with 12 due, a series whose idle moments go on at two thirds of the best share it
// showed (the best of many stretches is above their mean) has 3 or fewer in 4 of 100.
const idleExpect = 12

// idleGone is how many returns to the floor a fast rise's buckets must have been due, at
// the quiet window's share, for none at all to say its idle moments are gone: a leak whose
// idle moments go on at two thirds of that share has none in 1 of 200 (e^(−⅔·8), where
// the share is small; fastRule takes the exact chance, (1 − ⅔·share)^samples, to the
// same bound, which a large share reaches with fewer returns due). As few returns as the
// run kept, not only none, are held to that bound (see fastRule's chance).
const idleGone = 8

// goneChance is idleGone's bound as a chance: e^(−⅔·idleGone), 1 in 207.
var goneChance = math.Exp(-2 * idleGone / 3.0)

// restThin is the chance below which a fast rise's buckets kept too few returns to the
// floor to page on yet, where the GPU is about to run out (see track): one in ten that a
// leak whose idle moments go on at two thirds of the quiet window's share keeps as few.
// A saturated server near a full GPU lifts its floor as steeply and as evenly as a leak
// for three buckets, and its samples are all mid-request; sampled every 10 s, three
// buckets have six samples after their firsts, and none at rest out of six is no proof
// at idleGone's bound, where the GPU would be left to run out, but is reason to wait a
// bucket (measured on 100 seeds: saturated_burst_near_full paged at such a bound or
// below on 6 of its 12 pages, 0.04–0.08 without a return, 0.00–0.003 with one or two
// of tens; every fast_leak_near_full page stood at 0.41 or above).
const restThin = 0.1

// binomialCDF is the chance of k or fewer successes in n trials of chance p.
func binomialCDF(k, n int, p float64) float64 {
	if k >= n || p <= 0 {
		return 1
	}
	if p >= 1 {
		return 0
	}
	// Term by term in logs: (1 − p)^n alone underflows for a few hundred samples.
	lq, lr := math.Log1p(-p), math.Log(p)-math.Log1p(-p)
	lt, sum := float64(n)*lq, 0.0
	for i := 0; i <= k; i++ {
		sum += math.Exp(lt)
		lt += math.Log(float64(n-i)) - math.Log(float64(i+1)) + lr
	}
	return math.Min(sum, 1)
}

// idle says whether the series lost the idle moments it showed: now, over the newest
// buckets, and ever, over any stretch of the long window. A stretch lost them when, of
// its samples after each bucket's first, at most a quarter of the share that came back
// to the floor in the best stretch of the long window did (with at least idleExpect
// due). The stretches are half a short window, or one or two whole ones where half is
// due too few (few samples to a bucket, or a server busy most of the time even when
// quiet): a server sampled every 10 s (two samples after each bucket's first) whose
// quiet hours came back to the floor 28 % of the time is due 11.2 returns over a short
// window and 22 over two, and until it was due 12 nothing said its idle moments went. Returns are counted exactly (see history.idleRest), as load in
// flight comes back to a floor by chance only. Measured on 100 seeds without the client's
// counts, the two together: load_diurnal 18 → 14 false verdicts (17 with either alone);
// its twin, a leak under that traffic, 22 → 25 never flagged in its three hours (flagged
// 1m39s, 33 min and 1h21m after their onsets before) and three over an hour later (seed
// 62's 2.97 MiB/min 9m37s → 1h35m); outside the built ranges x_gc_sawtooth_wide 41 → 42
// false verdicts and a collector's fast leak, flagged 28 minutes after its onset before,
// not in the 30 minutes its trace runs (x_gc_sawtooth_fast_leak seed 88); every other
// class as before, and with the counts unchanged.
//
// A process between requests sits at its floor, sample after sample; a leak lifts those
// moments with the floor and keeps them. A server whose load climbs until it is never
// idle loses them: its floor is then the least load in flight, drawn anew at every
// sample (no second sample comes back to it), and climbs with the load for as long as
// the load climbs, smoothly, at a slow leak's pace (load_diurnal). A server that was
// busy all along never showed such a share, and is judged as before.
func idle(h *history, ns int64) (now, ever bool) {
	for m := max(ns/2, minPoints); ; m *= 2 {
		now, ever, sure := idleOver(h, m)
		if sure || m >= 2*ns {
			return now, ever
		}
	}
}

// idleOver is idle's test over stretches of m buckets, newest first (at most the newest
// 48, which bounds the work at any settings); sure says whether the newest was due
// idleExpect returns, without which it says nothing of now.
func idleOver(h *history, m int64) (now, ever, sure bool) {
	var rets, obs [2 * longBlocks]int // each stretch's returns, and its samples after the first
	var told [2 * longBlocks]bool     // the client said which samples were at rest, in every bucket
	k, best := 0, 0.0
	nl := int64(len(h.idx))
	for end := h.last; end-m >= h.last-nl && k < len(rets); end -= m {
		var r, o int
		all := true
		for b := end - m + 1; b <= end; b++ {
			if ri, oi, ok := h.idleOf(b, true); ok {
				r, o = r+ri, o+oi
				all = all && h.reportedAt(b)
			}
		}
		rets[k], obs[k], told[k] = r, o, all && o > 0
		if int64(o) >= m {
			best = math.Max(best, float64(r)/float64(o))
		}
		k++
	}
	for i := range k {
		due := best * float64(obs[i])
		// Where the client says which samples were at rest, none in idleExpect of a
		// process that has been at rest before is the idle moments gone, whatever the
		// window still holds of its quieter hours.
		toldLost := told[i] && h.everRest && rets[i] == 0 && obs[i] >= idleExpect
		lost := (due >= idleExpect && 4*float64(rets[i]) <= due) || toldLost
		if i == 0 {
			now, sure = lost, due >= idleExpect || (told[i] && obs[i] >= idleExpect)
		}
		ever = ever || lost
	}
	return now, ever, sure
}

// fastRule is the rule for steep leaks: the newest fastBuckets floors each rose above
// the one before by at least FastRate (and 4σ), and the short window before the rise was
// quiet (its envelope within sig: busy buckets that came back do not count). rate is the pace of the
// newest fastBuckets buckets, whether or not they pass; cont reports whether the newest
// bucket still rose by half the fast rate; rigid, even and clear are the tests (below) that
// let the rule start growth near a full GPU (rigid and even) and on a roomy one (clear; see track);
// chance is that of a leak keeping as few of the quiet window's idle moments in the
// rise's buckets as they did (see below): at idleGone's bound it vetoes both, at
// restThin it holds an urgent page; rested, that they kept enough of them by the exact
// count to stand in for rigid near a full GPU.
// saw is the pace of the steepest ramp of the series' collector's sawtooth, 0 if it
// showed none (see sawCycles).
func (e *Engine) fastRule(xs, env, fs []float64, spreadAt func(int) (float64, bool), idleAt func(i int, exact bool) (int, int, bool), told func(int) bool, sigma, sig, back, backLow, saw float64, going bool) fastRise {
	cfg := &e.cfg
	var (
		rate              float64
		cont, rigid, even bool
		clear             clearance
	)
	n := len(xs)
	step := cfg.FastRate * cfg.Bucket.Seconds()
	if n >= 2 && xs[n-1]-xs[n-2] == 1 {
		cont = fs[n-1]-fs[n-2] >= step/2
	}
	// pair: the same over the newest two buckets together, where the newest bucket does
	// not spread wider than the short window's buckets before it (their upper quartile,
	// and the noise, as the rigid test below). A floor is the least of a bucket's
	// samples, and on a server seldom idle a bucket without an idle moment holds it up
	// by the least load in flight: the bucket after it then rises less than a leak's
	// pace, or falls, and cont fails on a leak that goes on (vram_eval -stress,
	// x_fast_leak_stops seeds 16 and 48: let go at the bucket that was to confirm the
	// run, never flagged). A long generation that ends falls by all it held, and a
	// saturated burst's floor, the least load in flight, falls in a bucket its load
	// stretches (without the spread's test x_saturated_long seed 270 paged at the fall
	// that was to confirm it). A confirming bucket that a request spans from its start
	// spreads as wide, and still fails (x_fast_leak_stops seed 15, fast_leak seed 97).
	pair := cont
	if !cont && n >= 3 && xs[n-1]-xs[n-3] == 2 && fs[n-1]-fs[n-3] >= step {
		ns := int64(cfg.ShortWindow / cfg.Bucket)
		older := e.sc.bx[:0]
		for i := n - 3; i >= 0 && xs[i] > xs[n-1]-float64(ns); i-- {
			if sp, ok := spreadAt(i); ok {
				older = append(older, sp)
			}
		}
		e.sc.bx = older
		if sp, ok := spreadAt(n - 1); ok && len(older) >= minPoints {
			pair = sp <= upperQuartile(older)+4*sigma
		}
	}
	k := fastBuckets
	if n < k+1 || xs[n-1]-xs[n-1-k] != float64(k) {
		return fastRise{cont: cont, pair: pair, chance: 1}
	}
	// The pace of the newest buckets, whether or not they start a fast rise: a fast
	// leak's forecast follows it.
	rate = (fs[n-1] - fs[n-2]) / cfg.Bucket.Seconds()
	// Each of the newest k floors above the one before by more than the noise, and all
	// but the oldest of those steep (below; the oldest may be the bucket the leak began
	// in, part way through). No fit: three rises of that size in a row over a quiet floor
	// are not noise, and the rule only pages when the GPU is about to run out (see
	// track), where a floor whose idle moments fall anywhere in the bucket jitters too
	// much for a line through three points.
	//
	// Steep: a rise by the fast step, or one above the noise that the rise after it (by
	// the fast step) makes two steps with. A bucket's floor is its first moment at rest,
	// wherever in the bucket that falls, so a leak's floor rises by its bucket's worth
	// plus the difference of two phases: after a bucket at rest only at its end, by as
	// little as nothing, and the rise before it by up to two buckets' worth. At twice the
	// fast rate one rise in eight falls short of the step by chance; ending the run there
	// left the quiet window before it holding the leak, and the fast rule never paged
	// (suite/leak_alloc_100mib: 6m30s, by the short rule, on every seed).
	rises := func(i int, by float64) bool { return i >= 1 && xs[i]-xs[i-1] == 1 && fs[i]-fs[i-1] >= by }
	steep := func(i int) bool {
		return rises(i, step) || (rises(i, 4*sigma) && i+1 < n && rises(i+1, step) && fs[i+1]-fs[i-1] >= 2*step)
	}
	if !rises(n-k, 4*sigma) {
		return fastRise{rate: rate, cont: cont, pair: pair, chance: 1}
	}
	for i := n - k + 1; i < n; i++ {
		if !steep(i) {
			return fastRise{rate: rate, cont: cont, pair: pair, chance: 1}
		}
	}
	rate = (fs[n-1] - fs[n-k]) / float64(k-1) / cfg.Bucket.Seconds()
	// The run of steep rises may be longer than k: the rule may only become urgent part
	// way up a leak (the memory left shrinks as it rises), and then the floor before the
	// newest k buckets is the leak itself. The quiet floor is the one before the whole
	// run, which starts at the oldest bucket of consecutive steep rises (its own first
	// rise only above the noise, like the oldest of k).
	run := n - k // the index of the run's oldest rise, fs[run] − fs[run−1]
	if steep(run) {
		for steep(run - 1) {
			run--
		}
		if rises(run-1, 4*sigma) {
			run--
		}
	}
	// The quiet floor before the rise: the short window that ends where it starts (foot),
	// or where a request held across its first buckets hid it (see bridge).
	ns := int64(cfg.ShortWindow / cfg.Bucket)
	foot := run - 1
	mn, mx, cnt := quietEnv(xs, env, foot, ns)
	if cnt < minPoints || mx-mn > sig {
		f, level, ok := bridge(xs, fs, env, run, sigma, sig, ns)
		if !ok {
			return fastRise{rate: rate, cont: cont, pair: pair, chance: 1}
		}
		foot, mx = f, level
	}
	start := xs[foot]
	pre, in := e.sc.bx[:0], e.sc.by[:0] // the quiet window's and the run's spreads (below)
	for i := foot; i >= 0 && xs[i] > start-float64(ns); i-- {
		if sp, ok := spreadAt(i); ok {
			pre = append(pre, sp)
		}
	}
	// Rigid: a leak shifts the distribution of a bucket's samples up as a whole (the
	// idle moments and the requests on top of them rise together); load stretches it
	// (more requests in flight: a bucket's top rises faster than its floor). So the
	// run's median spread (less the rise's own drift within each bucket, see spreadAt)
	// must not exceed the quiet window's upper quartile by more than the noise. The
	// quartile, not the median: requests of heavy-tailed sizes make three buckets'
	// spreads noisy, and a leak near a full GPU must not miss its page on that (with
	// the median 1 of 60 such leaks ran the GPU out unflagged; with the quartile none,
	// while 12 of 60 saturated bursts near a full GPU still page: docs/leak-detection.md).
	for i := run; i < n; i++ {
		if sp, ok := spreadAt(i); ok {
			in = append(in, sp)
		}
	}
	e.sc.bx, e.sc.by = pre, in
	if len(pre) < minPoints || len(in) < fastBuckets-1 {
		return fastRise{fast: true, rate: rate, cont: cont, pair: pair, chance: 1}
	}
	load := upperQuartile(pre)
	rigid = median(in) <= load+4*sigma
	// Clear of load: what lets the rule page on a roomy GPU (see track), where a
	// saturated burst, a garbage collector's ramp or a batch held at once may rise as
	// steeply and as rigidly for a few buckets. A leak's rise, unlike theirs:
	//   - goes on: more than roomyBuckets steep rises in a row, not fastBuckets;
	//   - begins with at most a bucket's worth of itself (the onset bucket rises no more
	//     than twice the steepest rise after it: one bucket plus its idle moments'
	//     phase), not with a jump that something else then tops up;
	//   - lifts the floor by more than the requests in flight take on top of it in most
	//     quiet buckets (their spreads' upper quartile): the least load a server that is
	//     never idle holds is at most what its requests take, and a burst of larger
	//     requests than usual stretches its buckets, which the rigid test rejects; or
	//     kept the quiet window's moments at rest (restful, below);
	//   - outlasts every give-back excursion the series has shown: its envelope (the
	//     troughs, see analyze) rose too, so a sawtooth's ramp no longer than ones that
	//     came back does not count, even where they rose from the series' first floor;
	//     except on a collector's sawtooth (saw, the steepest of its ramps: see
	//     sawCycles), whose troughs lag a leak by a whole cycle, up to 14 minutes, and
	//     whose next ramp the pace test below tells from one: a leak of 100–1000 MiB/min
	//     under the issue's sawtooth waited 9m15s (median) for its envelope, 8 of 100
	//     went unflagged for the 30 minutes the trace ran (vram_eval -stress,
	//     x_gc_sawtooth_fast_leak; 3m41s and 6 with this);
	//   - rises faster, by the fast step and by steadyRise times, than any excursion the
	//     series gave back (back, see analyze): a collector's ramp that runs longer than
	//     the ones before rises at their pace, and so does the next of a server's long
	//     generations, whose cache grows with every token at a pace that varies from one
	//     request to the next by less than twice (long_generation: 1.5–1.8× apart paged);
	//     a leak adds its own pace to theirs.
	onset := true
	if run >= 1 {
		steepest := 0.0
		for i := run + 1; i < n; i++ {
			steepest = math.Max(steepest, fs[i]-fs[i-1])
		}
		onset = fs[run]-fs[run-1] <= 2*steepest
	}
	pace := (fs[n-1] - fs[run]) / float64(n-1-run)
	if saw > 0 {
		back = backLow
	}
	steeper := pace-steadyRise*back >= step
	// On a sawtooth, only for the long run: three buckets clear by the counts are no
	// test of pace (a quick collector's sawtooth under counted traffic paged on them,
	// x_gc_sawtooth_quick seed 82 with -load).
	envRose := env[n-1]-mx >= sig
	lifts := rigid && onset && (envRose || saw > 0) && steeper
	// Even: the newest two rises (both full buckets of the rise, each at least the fast
	// step) within steadyRise of each other, give or take the noise (4σ, as the rigid
	// test): a leak's constant pace, not the least load in flight (see steadyRise).
	// And the oldest of the newest fastBuckets rises no more than twice the steeper of
	// them, give or take the same: a leak's floor rises by a bucket's worth plus at
	// most another of phase, so a jump that smaller rises follow is a request that
	// arrived and filled (vram_eval -stress, x_requests_last_near_full seed 66: floors up
	// 1,413, 285 and 154 MiB a bucket sampled every 10 s, a one-bucket page).
	a, b := fs[n-2]-fs[n-3], fs[n-1]-fs[n-2]
	even = math.Max(a, b) <= steadyRise*math.Min(a, b)+4*sigma && fs[n-3]-fs[n-4] <= 2*math.Max(a, b)+4*sigma
	// Chance: that the run's buckets keep as few of the quiet window's idle
	// moments (see idle) as they did, for a leak whose idle moments go on at two thirds
	// of the quiet window's share: binomial, over the run's samples after each bucket's
	// first. A saturated server's floor is the least load in flight, drawn anew at every
	// sample; a leak's idle moments rise with it. At idleGone's bound the idle moments
	// are gone (track vetoes the rule). Round 9 held only none at all to that bound:
	// saturated_burst_near_full 13 → 12 pages, 8 → 6 where the client counts, on seeds
	// 1–100. As few as one or two returns out of tens are as rare for a leak (seeds 11,
	// 63 and 88 paged on them, at chances of 0.003 and below).
	var rp, op, rr, or, re, oe int
	counted := true // every bucket of the quiet window and of the run told (see below)
	for i := foot; i >= 0 && xs[i] > start-float64(ns); i-- {
		if r, o, ok := idleAt(i, false); ok {
			rp, op = rp+r, op+o
		}
		counted = counted && told(i)
	}
	for i := run; i < n; i++ {
		if r, o, ok := idleAt(i, false); ok {
			rr, or = rr+r, or+o
		}
		if r, o, ok := idleAt(i, true); ok {
			re, oe = re+r, oe+o // the exact count, for rested (below)
		}
		counted = counted && told(i)
	}
	share := float64(rp) / math.Max(float64(op), 1) // the quiet window's returns to the floor per sample
	// judged: the run has samples enough that a leak resting at two thirds of that share
	// would have none at rest at most as rarely as idleGone due allow.
	judged := binomialCDF(0, or, 2*share/3) <= goneChance
	chance := binomialCDF(rr, or, 2*share/3)
	// keeps: returns r of o samples are at least restKept of the quiet window's share,
	// and the run is judged.
	keeps := func(r, o int) bool { return judged && float64(r) >= restKept*share*float64(o) }
	// Kept at rest: where the client counts its requests, the run's buckets kept at
	// least restKept of the quiet window's share of samples with none in flight, and is
	// judged. Those samples' floor is no load in flight: a saturated
	// server, a long generation or a batch held at once leaves (almost) none at rest
	// while it lifts the floor, a leak lifts the floor under them. That is the evidence
	// the run's length and its lift over the requests' size stand in for without the
	// counts, so such a rise may page after fastBuckets (see track: not for a young
	// process, whose caches fill at rest as traffic first arrives).
	//
	// Where the client does not count, the same returns to the floor (the samples that
	// came back to it once the floor's pace is taken off) stand in for the lift over the
	// requests' size on the long run: a server that is never idle draws its floor anew
	// from the load in flight and its samples rarely come back to it (on a day's
	// saturated hours 1–5 of 40, see history.idleRest), a leak's idle moments rise with
	// it. Without this a leak under requests larger than its rise over the run waited
	// for the short rule (suite/leak_alloc_100mib: 100 MiB/min under requests of up to
	// 600 MiB, 6m30s on all 100 seeds; fast_leak p90 6m09s). Not for a young process
	// (see track).
	restful := keeps(rr, or)
	kept := counted && restful
	switch {
	case lifts && n-run > roomyBuckets && fs[n-1]-mx >= load:
		clear = clearLoad
	case lifts && envRose && kept && going:
		clear = clearRest
	case lifts && n-run > roomyBuckets && restful && saw == 0:
		clear = clearIdle
	}
	// Rested: the run's buckets kept restKept of the quiet window's share by the exact
	// count (see history.idleRest: within restTol of the floor once its pace is off, the
	// pace's allowance only where the floor rose in both buckets it is read from), with
	// samples enough to judge. That is the floor at rest under whatever requests the
	// run's buckets held, so near a full GPU it stands in for the rigid test (see track).
	return fastRise{fast: true, rate: rate, cont: cont, pair: pair, rigid: rigid, clear: clear, even: even, chance: chance, rested: keeps(re, oe)}
}

// quietEnv is the least and the greatest envelope over the short window (ns buckets)
// that ends at bucket index end, and how many buckets it holds: the fast rule's quiet
// floor before a rise.
func quietEnv(xs, env []float64, end int, ns int64) (mn, mx float64, cnt int) {
	mn, mx = math.Inf(1), math.Inf(-1)
	for i := end; i >= 0 && xs[i] > xs[end]-float64(ns); i-- {
		mn, mx = math.Min(mn, env[i]), math.Max(mx, env[i])
		cnt++
	}
	return mn, mx, cnt
}

// bridge finds the foot of a steep run that a request held across the rise's first
// buckets broke: where requests last (seconds to a minute or more), a bucket may have
// no idle moment at all, and one held across a leak's onset lifts the floors of its
// buckets by its own size, then falls, when it ends, onto the leak's line. The run of
// steep rises then starts after that fall, and the short window before it holds the
// leak's first minutes, never quiet: the fast rule never paged, on a nearly full GPU
// either (vram_eval -stress, x_requests_last_fast_leak_near_full seed 52: a request of
// 1.4 GiB held for three minutes across the onset of a 582 MiB/min leak, flagged by
// the short rule 8 minutes in, as the GPU ran out; seed 1 the same for a minute).
//
// The bridge holds where the run rose at one pace from the bucket before it (the
// landing, which must lie on the run's line, give or take a bucket's rise and the noise,
// as a floor placed anywhere in its bucket does) and where, walking back from the
// landing over at most a short window of buckets, no floor lies below that line by more than
// the same (a leak's floor is never under its own line, load only lifts it), at least one
// lies above it (a request held: what broke the run), and the walk reaches a bucket that
// ends a quiet short window where the line has come down to that window's level (its
// greatest envelope), within a bucket's rise either way: the rise began where the quiet
// floor ended. It returns that bucket, the foot, and the window's level.
//
// A short window back, not six buckets (round 31's bound): requests that last 10–90 s on
// average are now and then held for minutes, and one held for six minutes from a 195
// MiB/min leak's onset put its quiet floor thirteen buckets before the landing; the
// process ran the GPU out unflagged, without a forecast (vram_eval -stress,
// x_requests_last_fast_leak_near_full seed 74; flagged 8m27s in, 1m24s before the OOM,
// with this). Measured on 100 seeds of every class, with and without the counts: no
// other trace changed.
func bridge(xs, fs, env []float64, run int, sigma, sig float64, ns int64) (int, float64, bool) {
	n, b := len(xs), run-1
	if b < 1 || xs[run]-xs[b] != 1 || xs[n-1] <= xs[run] {
		return 0, 0, false
	}
	p := (fs[n-1] - fs[run]) / (xs[n-1] - xs[run]) // the run's rise a bucket
	tol := p + 4*sigma
	line := func(i int) float64 { return fs[n-1] + p*(xs[i]-xs[n-1]) }
	if math.Abs(fs[b]-line(b)) > tol {
		return 0, 0, false
	}
	// Every rise from the landing on at the run's pace, within steadyRise either way
	// (give or take 4σ): a leak adds the same bytes every bucket, and a rise measured
	// from a bridge must be one. Adapters loaded two in a row after a swap rose 43, 931
	// and 648 MiB, and bridged to a page (vram_eval -stress -load, x_adapter_churn seed
	// 1129).
	for i := run; i < n; i++ {
		if d := fs[i] - fs[i-1]; d < p/steadyRise-4*sigma || d > steadyRise*p+4*sigma {
			return 0, 0, false
		}
	}
	held := false
	for j := b - 1; j >= 0 && xs[b]-xs[j] <= float64(ns); j-- {
		if fs[j] < line(j)-tol {
			return 0, 0, false
		}
		held = held || fs[j] > line(j)+tol
		// The envelope passes over busy buckets that came back (see analyze), so the
		// window may read quiet part way up, and the foot may be a busy bucket itself:
		// the foot is where the line has come down to the window's level.
		if mn, mx, cnt := quietEnv(xs, env, j, ns); cnt >= minPoints && mx-mn <= sig && line(j) <= mx+tol+p {
			return j, mx, held && line(j) >= mx-tol-p
		}
	}
	return 0, 0, false
}

// restRun is the fast rule's run read on the floors at rest alone, where the client
// counts its requests (restPt: each bucket's, placed at the moment its sample was
// taken). The chain: the newest buckets that had a moment at rest (the newest or the
// one before among them, none more than roomyBuckets after the one before it), each
// floor at rest above the one before by more than the noise (4σ), back to the level the
// rise began from. It holds a leak's run where at least fastBuckets of them rose above
// that level, over more than a bucket of time, on one line (each within restLine of the
// rise, or 4σ, of the least-squares line through them, and the newest on the line
// through the older ones: the rise goes on) at the fast step or more, and by the fast
// step faster than steadyRise times any excursion the floors at
// rest gave back (see restBack: a collector's garbage piles up at rest too, as fastRule
// has it), from a quiet floor (the short window before the rise within sig, the newest
// above it by sig), and where the newest bucket's moments at rest span half a bucket or
// more, they rose at the line's pace too (newRise over newSpan, see below). It returns
// the line's pace in bytes per second.
//
// No load is in flight at those moments, so what lifts them is memory that stays; the
// fast rule reads every floor, and a bucket that a request spans from start to end
// holds its floor up by that request, so the bucket after it, at rest, falls back below
// it and breaks the run. On a server at rest one sample in five such buckets come every
// few minutes, and leaks of 170–800 MiB/min waited for the short rule, 7–12 minutes
// (vram_eval -load, fast_leak seeds 43, 62, 83, 94, 97). A saturated server, a long
// generation, a batch held at once have no moment at rest while they lift the floor;
// a young process's caches fill at rest, so track holds this while young as it does
// the fast rule's clearRest. What else rises at rest, measured on 100 seeds of -stress
// with the counts: a collector's garbage (x_gc_sawtooth_steep 71, x_gc_sawtooth_quick
// 16 false verdicts without restBack, 0 with it), weights reloaded in shards within a
// minute (x_model_reload 9 without the test that the newest goes on the older ones'
// line, 6 with it, as without restRun), garbage in lumps at random moments whose floors
// at rest line up across buckets (x_gc_lumpy 4 and x_model_reload 7 without the test of
// the newest bucket's own pace, 0 and 6 with it).
func (e *Engine) restRun(xs, env []float64, restPt func(int) (float64, float64, bool), newRise float64, newSpan time.Duration, sigma, sig float64) (float64, bool) {
	n := len(xs)
	if n == 0 {
		return 0, false
	}
	// The newest floor at rest is the newest bucket's or the one before's.
	if _, _, ok := restPt(n - 1); !ok {
		if n < 2 {
			return 0, false
		}
		if _, _, ok := restPt(n - 2); !ok {
			return 0, false
		}
	}
	step := e.cfg.FastRate * e.cfg.Bucket.Seconds()
	// The chain, newest first: idx (indices of xs), px and pv (the points).
	idx, px, pv := e.sc.ri[:0], e.sc.rx2[:0], e.sc.rv[:0]
	level := -1 // index into the chain of the newest point at the level the rise began from
	for i := n - 1; i >= 0; i-- {
		if len(idx) > 0 && xs[idx[len(idx)-1]]-xs[i] > roomyBuckets {
			break
		}
		x, r, ok := restPt(i)
		if !ok {
			continue
		}
		idx, px, pv = append(idx, i), append(px, x), append(pv, r)
		if m := len(pv); m > 1 && pv[m-2]-r <= 4*sigma {
			level = m - 2
			break
		}
	}
	e.sc.ri, e.sc.rx2, e.sc.rv = idx, px, pv
	if level < 0 {
		// No level before the rise within the window read: no quiet floor to rise from.
		return 0, false
	}
	// The rise: the chain's points above the level, newest first.
	k := level
	if k < fastBuckets || px[0]-px[k-1] <= 1 {
		return 0, false
	}
	// The least-squares line through them, and through the older ones alone, which the
	// newest must go on.
	tol := math.Max(4*sigma, restLine*(pv[0]-pv[k-1]))
	pace, ok := lineThrough(px[:k], pv[:k], tol)
	if !ok || pace < step {
		return 0, false
	}
	older, ok := lineThrough(px[1:k], pv[1:k], tol)
	if !ok || math.Abs(pv[0]-(pv[1]+older*(px[0]-px[1]))) > tol {
		return 0, false
	}
	if pace-steadyRise*e.restBack(xs, restPt, sig) < step {
		return 0, false
	}
	// The quiet window before the rise: the short window that ends at the level, its
	// envelope within sig (as fastRule's).
	ns := float64(e.cfg.ShortWindow / e.cfg.Bucket)
	start := xs[idx[level]]
	lo, hi, cnt := math.Inf(1), math.Inf(-1), 0
	for i := idx[level]; i >= 0 && xs[i] > start-ns; i-- {
		lo, hi = math.Min(lo, env[i]), math.Max(hi, env[i])
		cnt++
	}
	if cnt < minPoints || hi-lo > sig || pv[0] < hi+sig {
		return 0, false
	}
	if newSpan >= e.cfg.Bucket/2 {
		// Within the newest bucket its moments at rest (newRise over newSpan, their
		// first to their last) rose at the line's pace, within steadyRise either way
		// (and restTol, their jitter: the floors' σ is that of whole buckets, tens of
		// MiB under lumpy garbage): a leak goes on at its pace between them as across
		// the buckets; garbage in lumps and weights loaded in shards come in jumps,
		// which a bucket holds or does not.
		want := pace / e.cfg.Bucket.Seconds() * newSpan.Seconds()
		if newRise < want/steadyRise-restTol || newRise > steadyRise*want+restTol {
			return 0, false
		}
	}
	return pace / e.cfg.Bucket.Seconds(), true
}

// lineThrough is the slope of the least-squares line through the points (x, y), ok
// where no point lies farther than tol from it.
func lineThrough(x, y []float64, tol float64) (float64, bool) {
	var mx, my float64
	for j := range x {
		mx, my = mx+x[j], my+y[j]
	}
	mx, my = mx/float64(len(x)), my/float64(len(x))
	var sxy, sxx float64
	for j := range x {
		sxy += (x[j] - mx) * (y[j] - my)
		sxx += (x[j] - mx) * (x[j] - mx)
	}
	if sxx == 0 {
		return 0, false
	}
	slope := sxy / sxx
	for j := range x {
		if math.Abs(y[j]-(my+slope*(x[j]-mx))) > tol {
			return slope, false
		}
	}
	return slope, true
}

// restLine is how far from their line a leak's floors at rest may lie, as a share of
// their rise (see restRun): an eighth. Placed at their own moments they lie on it to a
// few MiB (the allocator counts bytes); a collector's garbage that comes in lumps of
// tens to hundreds of MiB at random moments climbs in steps of that size.
const restLine = 1.0 / 8

// restBack is back (see analyze) read on the floors at rest: the steepest pace at
// which an excursion of theirs longer than fastBuckets rose to where it stood when it
// gave back (by sig, to within sig/2 of where it rose from). At rest, a collector's
// garbage piles up and goes as it does on every floor; the load that lifts the floors
// of the buckets without a moment at rest, and gives back when it ends, does not lift
// these (a server busy four samples in five showed such excursions of 436 MiB/min,
// steeper than the half of a 798 MiB/min leak the pace test leaves: vram_eval -load,
// fast_leak seed 83, flagged by the short rule after 8.5 minutes).
func (e *Engine) restBack(xs []float64, restPt func(int) (float64, float64, bool), sig float64) float64 {
	rx, ry := e.sc.qa[:0], e.sc.qb[:0]
	for i := range xs {
		if x, r, ok := restPt(i); ok {
			rx, ry = append(rx, x), append(ry, r)
		}
	}
	e.sc.qa, e.sc.qb = rx, ry
	back := 0.0
	for j := 1; j < len(rx); j++ {
		// From the first floor at rest read, wherever the window starts (with the counts,
		// x_gc_sawtooth_wide seed 25's second ramp, at the first's pace, paged for 7.5
		// minutes, x_gc_sawtooth_long seed 55's for 13, each past the rules' five): a ramp
		// cut by the window's start still rose at its pace, and this only holds a run at
		// rest back.
		k, _, gave := gaveBack(ry, j, sig, true)
		if gave && rx[j]-rx[k] > fastBuckets && rx[j-1] > rx[k] {
			back = math.Max(back, (ry[j-1]-ry[k])/(rx[j-1]-rx[k]))
		}
	}
	return back
}

// gaveBack reads ys[j] as where an excursion came back to: walking back over the points
// above it by more than sig/2, k is the first not (the level the excursion rose from;
// -1 where the series stood above it from its first point) and top the highest of them;
// gave, that it stood sig or more above ys[j]. With fromFirst the series' first point
// is the level where none is lower: a collection may come back below where the process
// stood before its first request, and then its first ramp was no excursion at all, and
// its next one, as long as two short windows, paged (gpu-e2e's gc_sawtooth loop on an
// H100, round 30: a trough 3 MiB under the first floor, sig/2 of 2 MiB, `leak` for 54 s
// at sawtooth-trace.yml's settings). analyze asks for it only where the window reaches
// the process's first bucket.
func gaveBack(ys []float64, j int, sig float64, fromFirst bool) (k, top int, gave bool) {
	hi := math.Inf(-1)
	for k = j - 1; k >= 0 && ys[k] > ys[j]+sig/2; k-- {
		if ys[k] > hi {
			hi, top = ys[k], k
		}
	}
	if k < 0 && fromFirst {
		k = 0
	}
	return k, top, hi-ys[j] >= sig
}

// clearance says how a fast rise cleared what load could explain (see fastRule).
type clearance uint8

const (
	clearNone clearance = iota
	clearLoad           // it went on past roomyBuckets and lifted the floor by more than the requests take
	clearRest           // the client's counts show it kept its moments with no request in flight
	clearIdle           // it went on past roomyBuckets and kept its moments at rest (not for a young process, see track)
)

// fastRise is what fastRule read of the newest buckets (see fastRule).
type fastRise struct {
	fast         bool
	rate         float64
	cont, rigid  bool
	pair         bool
	clear        clearance
	even, rested bool
	chance       float64
}

// restKept is the share of the quiet window's moments at rest a fast rise's buckets must
// keep to be clear of load by the client's counts (see fastRule): half. A leak leaves
// the load as it was (the same share, give or take chance); load that lifts the floor
// takes them all.
const restKept = 0.5

// stretched says whether the buckets of the newest half of the short window spread wider
// than the older buckets whose spreads the history holds (held buckets in all, two short
// windows: the one and a half before the newest half reach back before a load's climb): their
// median spread (less a steady rise's drift, see spreadAt) above the older ones' upper
// quartile by more than the noise and a quarter of the older ones' interquartile range.
//
// A server that is never idle lifts its floor by the least load in flight, and the same
// load stretches its buckets: with requests of sizes up to a peak, the floor rises by the
// least of them and the spread by the rest, more than the floor itself. A leak shifts a
// bucket's samples up as a whole and leaves the spreads as they were (the fast rule's
// rigid test, on the newest buckets against the quiet window before them). The short
// rule must not start growth on a stretched rise: a load ramp that climbs for minutes and
// holds fits a robust line over the short window until it falls back (load_ramp).
//
// The margin: against the upper quartile alone (4σ of the floors is nothing next to what
// requests of heavy-tailed sizes do to a bucket's spread), 1 of 100 1 MiB/min leaks
// (leak_alloc_1mib) was held past 10 minutes; a quarter of the interquartile range keeps
// every leak class within a second of its delays, while half of it let 5 instead of 2 of
// 100 load ramps page, one of it 8 (measured on seeds 1–100 with the spreads of one short
// window and a few buckets held, docs/leak-detection.md).
func (e *Engine) stretched(xs []float64, spreadAt func(int) (float64, bool), sigma float64, ns, held int64) bool {
	n := len(xs)
	nh := float64(ns / 2)
	pre, in := e.sc.bx[:0], e.sc.by[:0]
	for i := n - 1; i >= 0 && xs[i] > -float64(held); i-- {
		sp, ok := spreadAt(i)
		if !ok {
			continue
		}
		if xs[i] > -nh {
			in = append(in, sp)
		} else {
			pre = append(pre, sp)
		}
	}
	e.sc.bx, e.sc.by = pre, in
	if len(in) < minPoints || len(pre) < minPoints {
		return false
	}
	uq := upperQuartile(pre) // sorts pre
	lq := pre[(len(pre)-1)/4]
	return median(in) > uq+math.Max(4*sigma, (uq-lq)/4)
}

// slowing says whether the floors (x, y) rise ever slower: a robust line through the
// newer half of them rises at less than steadyPace of one through the older half, which
// rises. A cache with a budget that fills after the warm-up (tensors kept for reuse, up
// to a size) fills fast at first and ever slower as it nears its budget, over tens of
// minutes, and fits a clean line over any short window (cache_fill_smooth: 1 − e^(−t/τ)
// rises over a 10-minute window at e^(−5/τ) of its pace in the older half, below
// steadyPace for τ up to 22 minutes, whatever the budget); a leak keeps its pace, and
// one that began within the window rises faster in the newer half, not slower.
func (s *scratch) slowing(x, y []float64, sig, sigma float64) bool {
	// The rise starts at its foot: the newest point still within sig of the lowest.
	mn := slices.Min(y)
	foot := 0
	for i := range y {
		if y[i] <= mn+sig {
			foot = i
		}
	}
	// From the bucket after the foot's: the rise's first bucket holds only part of it
	// (it began somewhere in that bucket), which would read as a slower older half.
	if s.slower(x[min(foot+1, len(x)):], y[min(foot+1, len(y)):], sigma) {
		return true
	}
	// And over the whole span, from before the foot: where the floors' noise (σ, and so
	// sig) is large next to a slow fill's rise per bucket, as on a cache filled in
	// steps, the foot lies minutes into a rise that began before the span and cuts its
	// steepest part off the older half. Taking the whole span only adds slower floors
	// to the older half where a rise began within it, so it never makes a leak's rise,
	// which keeps its pace from its onset, read as slowing.
	return foot > 0 && s.slower(x, y, sigma)
}

// slower says whether a robust line through the newer half of the floors (x, y) rises at
// less than steadyPace of one through the older half, which rises, by more than what
// noise does to two slopes.
func (s *scratch) slower(x, y []float64, sigma float64) bool {
	n := len(x)
	if n < 2*slowingPoints {
		return false
	}
	older := s.repeatedMedian(x[:n/2], y[:n/2])
	newer := s.repeatedMedian(x[n/2:], y[n/2:])
	// Each half's slope has a standard error of about σ·√(12/(m³−m)) for m floors a
	// bucket apart (1.2 times that for a robust slope), their difference √2 times that;
	// it must exceed two of those.
	m := float64(n / 2)
	se := 1.2 * math.Sqrt2 * sigma * math.Sqrt(12/(m*m*m-m))
	if older > 0 && newer < steadyPace*older && older-newer > 2*se {
		return true
	}
	// Only where these slopes agree that the pace fell by a tenth (bendAgree): a step at
	// the foot that the robust line keeps (two buckets of a step, a leak's first partial
	// bucket) leaves them level, and would bend the parabola.
	return older > 0 && newer < bendAgree*older && s.bends(x, y, sigma)
}

// bendAgree is how far the halves' robust slopes must say a rise slowed for bends to
// judge it.
const bendAgree = 0.9

// bends says whether a least-squares parabola through the floors (x, y) that lie near
// their robust line rises, at the middle of the newer half, at less than bendPace of
// its pace at the middle of the older half, by more than two standard errors of that
// difference. It uses every floor where the halves' robust slopes use half each, so
// it reads a fill's bend where the small steps a cache fills in make those slopes
// scatter; and only the floors near the robust line, so that a step at the rise's foot
// (pools kept at a first request, then a leak) does not bend it.
func (s *scratch) bends(x, y []float64, sigma float64) bool {
	slope, icpt, spread := s.robustLine(x, y)
	scale := math.Max(spread, sigma)
	qx, qy := grow(&s.qx, 0), grow(&s.qy, 0)
	for i := range x {
		if math.Abs(y[i]-slope*x[i]-icpt) <= 3*scale {
			qx, qy = append(qx, x[i]), append(qy, y[i])
		}
	}
	s.qx, s.qy = qx, qy
	return len(qx) >= 2*slowingPoints && parabolaSlows(qx, qy, sigma)
}

// parabolaSlows is bends' test on the floors (x, y) it kept.
func parabolaSlows(x, y []float64, sigma float64) bool {
	n := float64(len(x))
	var mx float64
	for _, v := range x {
		mx += v
	}
	mx /= n
	// Orthogonal polynomials in z = x − mean: 1, z, z² − k0 − k1·z.
	var s2, s3 float64
	for _, v := range x {
		z := v - mx
		s2 += z * z
		s3 += z * z * z
	}
	if s2 == 0 {
		return false
	}
	k0, k1 := s2/n, s3/s2
	var sy, szy, sqy, sqq float64
	for i, v := range x {
		z := v - mx
		q := z*z - k0 - k1*z
		sy += y[i]
		szy += z * y[i]
		sqy += q * y[i]
		sqq += q * q
	}
	if sqq <= 0 {
		return false
	}
	c := sqy / sqq
	b := szy/s2 - c*k1
	h := len(x) / 2
	zo, zn := 0.0, 0.0
	for i, v := range x {
		if i < h {
			zo += v - mx
		} else {
			zn += v - mx
		}
	}
	zo, zn = zo/float64(h), zn/float64(len(x)-h)
	older, newer := b+2*c*zo, b+2*c*zn
	// The floors' scatter about the parabola, if more than σ: a fill in large steps
	// scatters by tens of MiB where its changes bucket to bucket vary by one.
	a, b1, rss := sy/n, szy/s2, 0.0
	for i, v := range x {
		z := v - mx
		r := y[i] - a - b1*z - c*(z*z-k0-k1*z)
		rss += r * r
	}
	scatter := math.Max(sigma, math.Sqrt(rss/(n-3)))
	se := 2 * (zn - zo) * scatter / math.Sqrt(sqq)
	return older > 0 && newer < bendPace*older && older-newer > 2*se
}

// bendPace is the share of the older half's pace under which bends calls a rise slowing.
// Nearer 1 than steadyPace: the parabola's two paces come from every floor at once, and
// its standard error from their scatter about it, so a leak whose pace wobbles (steps at
// random, a pace that follows the traffic) scatters and is not read as bending, where
// the halves' slopes needed the wider margin for their own scatter. Measured over seeds
// 1–300 against 0.8 (steadyPace): x_cache_fill_slow 35 → 20 false verdicts,
// x_cache_fill_mid 13 → 11; cache_fill_smooth_leak 29m46s → 31m08s median; the leaks that
// step at random, follow the traffic or come and go identical.
const bendPace = 0.85

// slowingPoints is the fewest floors in each half of a rise for slowing to judge it.
const slowingPoints = 3

// recentScatter is σ (1.4826·MAD/√2) of the newest k bucket-to-bucket changes of ps, or
// +Inf unless the newest k+1 floors are consecutive: a line's floors climb by about the
// same step each bucket, a floor that jumps (the least load in flight under saturation)
// does not.
func recentScatter(xs, ps []float64, k int, buf *[]float64) float64 {
	n := len(xs)
	rd := grow(buf, 0)
	for i := n - 1; i > 0 && len(rd) < k && xs[i]-xs[i-1] == 1; i-- {
		rd = append(rd, ps[i]-ps[i-1])
	}
	*buf = rd
	if len(rd) < k {
		return math.Inf(1)
	}
	md := median(rd)
	for i := range rd {
		rd[i] = math.Abs(rd[i] - md)
	}
	return 1.4826 * median(rd) / math.Sqrt2
}

// slidingMin writes into env the minimum of ys over the points whose x lies within w
// of each point's x (w = 0: ys itself), with a monotone deque: O(n).
func slidingMin(xs, ys []float64, w int64, env []float64, dq *[]int) {
	if w <= 0 {
		copy(env, ys)
		return
	}
	// The deque's head moves instead of its front being resliced away, so the buffer
	// keeps its capacity for the next close (see plateaus, which shares it).
	q, head := (*dq)[:0], 0
	for i := range xs {
		for len(q) > head && ys[q[len(q)-1]] >= ys[i] {
			q = q[:len(q)-1]
		}
		q = append(q, i)
		for xs[q[head]] < xs[i]-float64(w) {
			head++
		}
		env[i] = ys[q[head]]
	}
	*dq = q[:0]
}

// plateaus marks the windows of w buckets over which the floors (xs, ys) stayed within
// tol of each other, a level the series held (not a ramp's stretch nor a burst's top):
// pc[i+1] counts those that end at or before point i. It returns held, the highest
// such level (a window's least floor) that a later floor fell below by more than tol,
// -Inf where none did: a cache cleared and filled again climbs back to it, a leak
// passes every level it held.
func plateaus(xs, ys []float64, w int64, tol float64, qmin, qmax *[]int, pc []int) (held float64) {
	best := math.Inf(-1)
	held = best
	// Monotone queues of point indices, their heads at ql and qh: popping from the front
	// by moving a head, not by reslicing, keeps the buffers' capacity for the next close
	// (a resliced front loses it, and the next append allocates).
	lo, hi := (*qmin)[:0], (*qmax)[:0]
	ql, qh := 0, 0
	pc[0] = 0
	for i := range xs {
		if ys[i] < best-tol {
			held = math.Max(held, best)
		}
		for len(lo) > ql && ys[lo[len(lo)-1]] >= ys[i] {
			lo = lo[:len(lo)-1]
		}
		for len(hi) > qh && ys[hi[len(hi)-1]] <= ys[i] {
			hi = hi[:len(hi)-1]
		}
		lo, hi = append(lo, i), append(hi, i)
		for xs[lo[ql]] <= xs[i]-float64(w) {
			ql++
		}
		for xs[hi[qh]] <= xs[i]-float64(w) {
			qh++
		}
		pc[i+1] = pc[i]
		if xs[i]-xs[0] >= float64(w-1) && ys[hi[qh]]-ys[lo[ql]] <= tol {
			best = math.Max(best, ys[lo[ql]])
			pc[i+1]++
		}
	}
	*qmin, *qmax = lo[:0], hi[:0]
	return held
}

// heldBetween says whether a plateau of w buckets (see plateaus) lies wholly after point
// k (-1: before the first) and ends before point j.
func heldBetween(xs []float64, pc []int, w int64, k, j int) bool {
	from := xs[0] - 1
	if k >= 0 {
		from = xs[k]
	}
	i0, _ := slices.BinarySearch(xs, from+float64(w))
	return i0 < j && pc[j] > pc[i0]
}

// blocks aggregates (xs, ys) into at most maxPoints blocks of equal bucket width, each
// the minimum of its floors at the block's mean x: the lower envelope at a coarser
// scale, which keeps the fits of long windows cheap (O(maxPoints²)) and robust to
// bursts shorter than a block.
func blocks(xs, ys []float64, maxPoints int64, bxBuf, byBuf *[]float64) ([]float64, []float64) {
	n := len(xs)
	if n == 0 {
		return nil, nil
	}
	span := int64(xs[n-1]-xs[0]) + 1
	width := (span + maxPoints - 1) / maxPoints
	if width <= 1 {
		bx, by := grow(bxBuf, n), grow(byBuf, n)
		copy(bx, xs)
		copy(by, ys)
		return bx, by
	}
	bx, by := (*bxBuf)[:0], (*byBuf)[:0]
	end := xs[n-1]
	i := n - 1
	// Blocks are aligned on the newest bucket, so the newest block is always whole;
	// written newest first, then reversed.
	for i >= 0 {
		lo := end - float64(width)
		mn, sx, k := math.Inf(1), 0.0, 0
		for i >= 0 && xs[i] > lo {
			mn = math.Min(mn, ys[i])
			sx += xs[i]
			k++
			i--
		}
		if k > 0 {
			bx, by = append(bx, sx/float64(k)), append(by, mn)
		}
		end = lo
	}
	slices.Reverse(bx)
	slices.Reverse(by)
	*bxBuf, *byBuf = bx, by
	return bx, by
}

// heldFor is how many of the newest buckets lastRise does not yet take as held: a
// quarter of a short window (at least one). A server busy for a few buckets in a row
// raises their floors together, and counted as held such a run made a leak that had
// stopped 17 minutes before rise again (vram_eval, leak_stops seeds 99 and 43: one
// bucket, then four).
func heldFor(ns int64) int64 { return max(ns/4, 1) }

// standstill is how a series' floors have stood still (see lastRise): stall, the
// buckets the level they hold has stood within sig of where it is known to stand; gap,
// the longest it stood still before, between two rises.
type standstill struct{ stall, gap int64 }

// stopped says whether a long-window line f (slope per bucket) through those floors is
// the past of a rise that has stopped: it rises at minRate (bytes per bucket) or more,
// a pace the short window resolves, and the floors have stood still for longer than
// twice their longest pause, twice what f's own pace takes to rise by sig, and
// fastBuckets. Below minRate a stop is not told from the noise within a short window.
func (s standstill) stopped(f fitResult, sig, minRate float64) bool {
	if !f.ok || f.slope < minRate {
		return false
	}
	return s.stall > max(2*s.gap, fastBuckets, int64(math.Ceil(2*sig/f.slope)))
}

// lastRise reads what the floors (x, y) have held: at each bucket the least floor from
// it to the newest, which memory given back later (a burst, a collector's garbage)
// does not lift and a leak lifts for good. The floors of the newest recent buckets
// have held only themselves (a few raised buckets among them, moments never idle, are
// not yet a rise), so the level the series is known to hold is that of the newest
// floor before them. stall is how many buckets, up to that floor, the held level has
// stood within tol of it; gap the longest it stood still before, between two ratchet
// highs by tol (see highs). A leak at a steady pace holds a new high every tol/pace
// buckets; a staircase one at each step, waiting as long as its steps are rare; one
// that has stopped, none since. Before the first high nothing has risen yet: that wait
// (the quiet stretch before an onset) is not one of the rise's. x may skip buckets
// (the floors at rest are sparse: a stretch without one proves nothing, and does not
// count as standing still); held is scratch of len(y).
func lastRise(x, y, held []float64, tol float64, recent int64) standstill {
	n := len(x)
	now := n - 1
	for now >= 0 && x[now] > x[n-1]-float64(recent) {
		now--
	}
	if now < 0 {
		return standstill{}
	}
	held[n-1] = y[n-1]
	for i := n - 2; i >= 0; i-- {
		held[i] = math.Min(y[i], held[i+1])
	}
	k := now
	for k > 0 && held[k-1] >= held[now]-tol {
		k--
	}
	var gap int64
	level, last, seen := held[0], x[0], false
	for i := 1; i < k; i++ {
		if held[i] > level+tol {
			if seen {
				gap = max(gap, int64(x[i]-last))
			}
			level, last, seen = held[i], x[i], true
		}
	}
	if seen {
		gap = max(gap, int64(x[k]-last))
	}
	return standstill{stall: int64(x[now] - x[k]), gap: gap}
}

// decelerates reports whether the newer half of (x, y) rises at less than half the pace
// of its older half: a cache that fills to a budget slows down as it fills, a leak does
// not. Each half's pace is read two ways, and either slowing by half counts:
//   - its repeated-median slope, which a few busy points do not move;
//   - its rise from end to end (the median of its first third to that of its last): the
//     older half rose by sig or more, and by more than twice the newer half's rise (at
//     the older half's span) plus sig. A fill that began part way into the older half
//     leaves most of that half level before it, and the repeated median reads the fill's
//     steep points as outliers of that level: its slope was 0, and a cache of 7.5 GiB
//     that filled in twenty minutes, then crept 0.7 GiB more over the next 35 under a
//     collector's sawtooth, fitted the long window's line at 0.87 and paged on the slow
//     rule for 20 minutes (x_gc_sawtooth_cache_fill seed 12, and seeds 2 and 16
//     likewise). A leak that began in the older half rises more in the newer one, which
//     has it throughout.
func (s *scratch) decelerates(x, y []float64, sig float64) bool {
	h := len(x) / 2
	if h < minPoints/2+1 {
		return false
	}
	older := s.repeatedMedian(x[:h], y[:h])
	newer := s.repeatedMedian(x[h:], y[h:])
	if older > 0 && newer < older/2 {
		return true
	}
	ro, so := endRise(x[:h], y[:h])
	rn, sn := endRise(x[h:], y[h:])
	if ro < sig || so <= 0 || sn <= 0 {
		return false
	}
	// The newer half's rise at the older half's span, under half the older's by more
	// than the noise: a leak's halves differ by the noise alone.
	return rn*so/sn < (ro-sig)/2
}

// endRise is how far y rose from its first third to its last (the median of each, so one
// busy point does not move it), and the span of x between the thirds' middles.
func endRise(x, y []float64) (rise, span float64) {
	k := max(1, len(y)/3)
	n := len(y)
	rise = medianSmall(y[n-k:]) - medianSmall(y[:k])
	return rise, (x[n-1]+x[n-k])/2 - (x[k-1]+x[0])/2
}

// medianSmall is the median of v without reordering v, on a copy that stays on the
// stack: decelerates runs at every close where the slow rule could apply, on the long
// window's blocks (at most longBlocks), which the caller still reads. A longer v is
// copied to the heap rather than cut short.
func medianSmall(v []float64) float64 {
	var buf [longBlocks]float64
	if len(v) > len(buf) {
		return median(slices.Clone(v))
	}
	return median(buf[:copy(buf[:], v)])
}

// signCritical is the smallest number of rises among n changes that a fair coin
// reaches with probability below 1 % (one-sided binomial test), from a table made once.
func (e *Engine) signCritical(n int) int {
	if n < len(e.signCrit) {
		return e.signCrit[n]
	}
	return signCritical(n)
}

func signCritical(n int) int { return signCriticalAt(n, 0.01) }

// signCriticalAt is the smallest number of rises among n changes that a fair coin
// reaches with probability below alpha.
func signCriticalAt(n int, alpha float64) int {
	// P(X ≥ k) for X ~ Binomial(n, ½), summed from the top.
	p, tail := math.Pow(0.5, float64(n)), 0.0
	coef := 1.0
	for k := n; k >= 0; k-- {
		if k < n {
			coef = coef * float64(k+1) / float64(n-k)
		}
		if tail+coef*p >= alpha {
			return k + 1
		}
		tail += coef * p
	}
	return 0
}

// upperQuartile is the 75th percentile of v (nearest rank), which it reorders.
func upperQuartile(v []float64) float64 {
	slices.Sort(v)
	return v[(3*(len(v)-1)+2)/4]
}

// sawCycles is what the series showed of a collector's sawtooth: ramps that rose from a
// level for minutes and were given back at once, down to it (a
// gen-2 collection frees the garbage of a whole cycle in one go). A burst of load
// rises and falls over minutes; a busy server's floor wanders by a few times its noise.
type sawCycles struct {
	last      int     // index of the newest trough after a give-back (only once hi > 0)
	drop      int     // index of the newest floor after any fall by sig, cycle or not
	lo, hi    float64 // the slowest and the steepest ramp's pace (bytes per bucket)
	top, long float64 // the highest ramp's height and the longest one's length (buckets)
	level     float64 // the lowest trough a ramp came back to
}

// sawReach bounds how much higher and how much longer than the largest ramp given back a
// rise from the last trough may go on and still be taken for the next: a collector's
// cycle is drawn anew each time, from 3 to 25 minutes on the servers the evaluation
// imitates (vram_eval -stress, x_gc_sawtooth_wide), so eight; past that it is judged
// as any rise. Unbounded (and counting any ramp of more than fastBuckets), a leak that
// began at a trough at the ramps' pace waited 5 minutes longer (x_fast_leak_wide's
// slowest seed, 12m19s → 17m18s).
const sawReach = 8

// add records the excursion that rose from ps[k] (the trough before, where a leak lifted
// this one: see analyze), topped at ps[top] and came back to ps[j], if it is a
// sawtooth's ramp: given back within two buckets of its top (the
// point fitted is the lesser of two floors, so a drop shows over two), after rising for
// more than roomyBuckets (a burst's rise, as the fast rule has it). A busy server's
// floor (85–95 % busy, 64 MiB of jitter) wanders up and back over two or three
// minutes, as if it were a small collector's cycle; counted, a leak that began at such a
// trough at such a pace was held 8 minutes longer (busy_leak seed 65).
//
// What it gave back, not what it rose by, is the cycle's garbage, and where it came
// back to is its trough: a process's first cycle rises from the floor it had before its
// first request (the model alone, 40 MiB below the trough of every cycle after on the
// H200 run, gpu-e2e phase 3), which would read as a steeper first ramp and a lower
// level than any trough since.
func (s *sawCycles) add(j, k, top int, xs, ps []float64) bool {
	height, length := ps[top]-ps[j], xs[top]-xs[k]
	if xs[j]-xs[top] > 2 || length <= roomyBuckets || !gradual(k, top, xs, ps) {
		return false
	}
	pace := height / length
	if lv, at, ok := rampLevel(top, k, xs, ps); ok {
		height, pace = lv-ps[j], (lv-ps[j])/(at-xs[k])
	}
	if s.hi == 0 {
		s.lo, s.level = pace, ps[j]
	}
	s.last = j
	s.lo, s.hi = math.Min(s.lo, pace), math.Max(s.hi, pace)
	s.top, s.long = math.Max(s.top, height), math.Max(s.long, length)
	s.level = math.Min(s.level, ps[j])
	return true
}

// rampLevel is where a ramp from ps[k] stood at its end ps[i], read robustly: the
// median of its last three points, and where that median is read (the middle one's x).
// ok only where those three lie within the ramp, one bucket apart.
func rampLevel(i, k int, xs, ps []float64) (level, at float64, ok bool) {
	if i-2 <= k || xs[i]-xs[i-2] != 2 {
		return 0, 0, false
	}
	a, b, c := ps[i-2], ps[i-1], ps[i]
	return math.Max(math.Min(a, b), math.Min(math.Max(a, b), c)), xs[i-1], true
}

// gradual says whether the floors rose from ps[k] to ps[top] over more than one bucket:
// no bucket's rise more than gradualStep of the whole. A collector's garbage piles up
// with the requests, so its ramp climbs over its length (in lumps at most, x_gc_lumpy:
// up to 200 MiB at once); a cache at capacity that swaps an item for a larger one
// climbs in one bucket and holds until the next swap takes some back, and read as a
// collector's cycle, its swaps' levels are troughs that rise (x_adapter_churn_unattributed:
// 30 of 100 paged by the troughs' rule, docs/leak-detection.md, round 22).
func gradual(k, top int, xs, ps []float64) bool {
	steepest := 0.0
	for i := k + 1; i <= top; i++ {
		if xs[i]-xs[i-1] == 1 {
			steepest = math.Max(steepest, ps[i]-ps[i-1])
		}
	}
	return steepest <= gradualStep*(ps[top]-ps[k])
}

// gradualStep is the most of a collector's ramp one bucket may rise (see gradual):
// three quarters. Measured on 100 seeds of -stress (round 22): at a half, the lumpy
// collector's leak waited longer (p90 41m36s → 48m53s) and 6 more leaks under a swapping
// cache were missed, for one more walk kept quiet.
const gradualStep = 0.75

// ramp says whether the newest floors are the next ramp of the sawtooth: the troughs
// have not risen (the last within sig of the lowest trough: a leak under
// a sawtooth lifts them, and is judged on them by the envelope), nothing fell by sig
// since (a collection part way up a leak gives back less than it rose: the next
// trough is higher, and no cycle's; held from the trough before, gc_sawtooth_rising_floor
// seed 24 paged 17 minutes later), the rise began at the
// last trough (its foot, the newest floor within sig of the lowest since, in the
// rise's first quarter or its first fastBuckets), climbs at between half the slowest
// and twice the steepest of the ramps' paces (steadyRise: a leak under it adds its own
// pace), and has not gone on sawReach times higher or longer than the largest.
//
// The long window shows no net growth of a sawtooth; a ramp longer than the ones before
// it outlasts the envelope's width (see analyze), and without this each such cycle
// paged (x_gc_sawtooth_wide: 50 of 100 traces; 41 with it, see docs/leak-detection.md).
func (s *sawCycles) ramp(xs, ps []float64, sig float64) bool {
	n := len(xs)
	if s.hi == 0 || s.last >= n-1 {
		return false
	}
	j := s.last
	if ps[j] > s.level+sig || s.drop > j {
		return false
	}
	mn := slices.Min(ps[j:])
	foot := j
	for i := j; i < n; i++ {
		if ps[i] <= mn+sig {
			foot = i
		}
	}
	d := xs[n-1] - xs[j]
	rise := ps[n-1] - ps[j]
	if xs[foot]-xs[j] > math.Max(fastBuckets, d/4) || rise <= 0 {
		return false
	}
	pace := rise / d
	return pace >= s.lo/steadyRise && pace <= steadyRise*s.hi && rise <= sawReach*s.top && d <= sawReach*s.long
}

// slowRises is the slow rule's line (see track): the long window's envelope rises at
// rate (bytes per second; b the bucket's seconds) or more with R² fit, by more than
// sigLong, without decelerating, and its newest quarter still rises at rate/2. Shared by
// the rule and by analyze, which reads the loud floors' test only where it holds.
func (v *view) slowRises(b, rate, fit float64) bool {
	f := v.envLong
	return f.ok && f.slope/b >= rate && f.r2 >= fit && f.rise >= v.sigLong && !v.decel && v.recent.ok && v.recent.slope/b >= rate/2
}

// ownNoise measures f, a fit of ys, against the scatter of ys about its own line
// (bounded by a MiB and by sigma, one floor's σ): its new highs, and the sig its rise
// must clear, which it returns.
func (e *Engine) ownNoise(f fitResult, ys []float64, sigma float64) (fitResult, float64) {
	s := math.Min(math.Max(f.spread, sigmaMin), sigma)
	f.highs = highs(ys, 2*s)
	return f, e.sigOf(s)
}

// sigOf is the smallest rise that counts on points of noise sigma: 4σ, and never below
// MinRate over a short window.
func (e *Engine) sigOf(sigma float64) float64 {
	return math.Max(4*sigma, e.cfg.MinRate*e.cfg.ShortWindow.Seconds())
}

// noteTrough records where the cycle that came back at ps[j] came back to (see
// sawCycles.add), as an index of the long window's floors: the least floor within two
// buckets of its drop (a drop shows over two, the point fitted being the lesser of two
// floors). One drop may register on two consecutive floors, which are one collection.
func noteTrough(tr []int, j int, xs, ps []float64) []int {
	t := j
	for i := j + 1; i < len(xs) && xs[i]-xs[j] <= 2; i++ {
		if ps[i] < ps[t] {
			t = i
		}
	}
	if m := len(tr); m > 0 && xs[tr[m-1]] >= xs[j]-2 {
		if ps[t] < ps[tr[m-1]] {
			tr[m-1] = t
		}
		return tr
	}
	return append(tr, t)
}

// troughRise is what a collector's troughs say of the memory that stays: a leak under a
// sawtooth lifts the floor every collection comes back to, garbage does not.
type troughRise struct {
	read   bool // the troughs speak for the present (see risingTroughs)
	rising bool // the newest three troughs each rose by sig over the one before
	held   bool // the newest rose by sig/2 over the one before (growth goes on)
	// halted: stopped since a rise by sig, with every trough after it no higher than
	// the one before (the rules that read the lagging envelope or the long window must
	// not take up the rise they still hold).
	halted bool
	// slowing: the newest trough rose over the one before at less than steadyPace of
	// the pace the one before rose at over its own, by more than the noise of those
	// troughs could make of two paces: the memory that stays grows ever slower.
	slowing bool
	slope   float64 // bytes per bucket, over the rise read
	// filling: over the span read (see troughsSlow), the troughs in its newer half rose
	// at under fillPace of the pace of those in its older half, by more than their
	// noise: the memory that stays grows ever slower, a cache filling to its budget.
	filling bool
}

// stopped: the newest trough came back no higher than the one before (by sig/2): the
// memory that stays has not grown over the last cycle.
func (r troughRise) stopped() bool { return r.read && !r.held }

// risingTroughs reads the newest troughs of a collector's sawtooth (indices of the
// floors, oldest first; see noteTrough), each where the floor stayed from then on (kept,
// below): rising when the newest three each rose above the one before by sig, the two
// newest since the warm-up (x ≥ since); held when the newest two still rise by sig/2;
// slowing when the newest rose at under steadyPace of the pace of the one before, by
// more than sig over each gap (what the troughs' noise, sig/2 each, can make of two
// paces): a leak lifts every trough at its pace, a cache that fills on such a server
// ever less, and three troughs in a row each up by sig were its fill (vram_eval
// -stress, x_gc_sawtooth_cache_fill: 79 → 74 of 100 false verdicts, no leak slower but
// x_adapter_churn_leak's median, 61m05s → 62m39s); filling when those from x ≥ from on
// rise ever slower (see troughsSlow).
// after is scratch of len(ps).
func risingTroughs(tr []int, xs, ps, after []float64, sig, since, from float64, saw *sawCycles) troughRise {
	m, n := len(tr), len(xs)
	// The troughs read are stale where, since the newest, the floor fell by sig with no
	// cycle registered (collections go on that come back higher than the ramp before
	// reaches back to: a leak steeper than the garbage lifts each trough above it), or
	// rose more than steadyRise times higher or longer than any ramp the sawtooth gave
	// back (a leak steeper still, whose collections do not even fall: a 600 MiB/min leak
	// under 5–60 MiB/min of garbage, vram_eval -stress x_gc_sawtooth_fast_leak seed 17).
	if m == 0 || saw.drop > tr[m-1]+2 || ps[n-1]-ps[tr[m-1]] > steadyRise*saw.top || xs[n-1]-xs[tr[m-1]] > steadyRise*saw.long {
		return troughRise{}
	}
	// The newest trough two buckets old at least: a drop still under way shows on two
	// floors, the lower one not yet closed. Until then the troughs before it say.
	if xs[n-1]-xs[tr[m-1]] < 2 {
		m--
	}
	if m < 2 {
		return troughRise{}
	}
	// Kept: no floor after the trough fell back below it by sig/2. A collection the
	// cycles did not register (one whose drop came more than two buckets after its
	// top) that went lower is a trough too, and the rise is not one. Read on the
	// floors' suffix minimum, from the oldest trough read on.
	after[n-1] = math.Inf(1)
	for i := n - 2; i >= tr[0]; i-- {
		after[i] = math.Min(ps[i+1], after[i+1])
	}
	kept := func(t int) bool { return after[t] >= ps[t]-sig/2 }
	t3, t2 := tr[m-1], tr[m-2]
	if !kept(t3) || !kept(t2) {
		return troughRise{}
	}
	// Troughs that stepped down as well as up since the warm-up are no collector's over
	// memory that stays: a cache at capacity swapping items of different sizes.
	tu, td := 0, 0
	for k := 1; k < m; k++ {
		if xs[tr[k-1]] < since {
			continue
		}
		switch d := ps[tr[k]] - ps[tr[k-1]]; {
		case d >= sig:
			tu++
		case d <= -sig:
			td++
		}
	}
	if bothWays(tu, td) {
		return troughRise{}
	}
	up := ps[t3] - ps[t2]
	r := troughRise{read: true, held: up >= sig/2, slope: up / (xs[t3] - xs[t2])}
	if m >= 3 {
		t1 := tr[m-3]
		r.rising = xs[t2] >= since && up >= sig && ps[t2]-ps[t1] >= sig && kept(t1)
		if kept(t1) {
			d1, d2 := xs[t2]-xs[t1], xs[t3]-xs[t2]
			older, newer := (ps[t2]-ps[t1])/d1, up/d2
			r.slowing = older > 0 && newer < steadyPace*older && older-newer > sig/d1+sig/d2
		}
		if r.rising {
			r.slope = (ps[t3] - ps[t1]) / (xs[t3] - xs[t1])
		}
	}
	r.filling = troughsSlow(tr[:m], xs, ps, sig, from, kept)
	// Halted: the newest troughs came back no higher than the one before them, each, since
	// one that rose by sig: a rise that stopped, however many collections ago.
	for k := m - 1; !r.held && k >= 1 && kept(tr[k-1]); k-- {
		if d := ps[tr[k]] - ps[tr[k-1]]; d >= sig/2 {
			r.halted = d >= sig
			break
		}
	}
	return r
}

// troughsSlow says whether the kept troughs tr (oldest first) from x ≥ from on, and the
// one before, rise ever slower: split where the span they cover is most nearly halved,
// the newer half rose at under fillPace of the older half's pace, which rose, by more
// than sig over each half (what the troughs' noise can make of two paces, as slowing's
// test of the newest pair). That test of the newest two gaps alone misses the tail of a
// fill: where a cache's fill slows to a few MiB a cycle, each gap differs from the next
// by less than the noise, while the troughs over the span still show the pace falling
// by half or more (x_gc_sawtooth_cache_fill seed 18: troughs up 156, 39 and 21 MiB over
// 27, 24 and 15 buckets, `leak` for 24 minutes at 2.85 MiB/min on the envelope, which
// the trough before the span still holds up). A leak keeps its pace from its onset: a
// span with its onset inside has a slower older half, not a faster one.
func troughsSlow(tr []int, xs, ps []float64, sig, from float64, kept func(int) bool) bool {
	i := len(tr)
	for i > 0 && xs[tr[i-1]] >= from && kept(tr[i-1]) {
		i--
	}
	// And the trough before the span: the envelope at the span's start is the least
	// floor of the cycle before it, which came back to that trough.
	if i > 0 && kept(tr[i-1]) {
		i--
	}
	tr = tr[i:]
	m := len(tr)
	if m < 3 {
		return false
	}
	x0, xn := xs[tr[0]], xs[tr[m-1]]
	mid := 1
	for k := 2; k < m-1; k++ {
		if math.Abs(xs[tr[k]]-(x0+xn)/2) < math.Abs(xs[tr[mid]]-(x0+xn)/2) {
			mid = k
		}
	}
	d1, d2 := xs[tr[mid]]-x0, xn-xs[tr[mid]]
	older, newer := (ps[tr[mid]]-ps[tr[0]])/d1, (ps[tr[m-1]]-ps[tr[mid]])/d2
	return older > 0 && newer < fillPace*older && older-newer > sig/d1+sig/d2
}

// fillPace is the share of the older half's pace under which troughsSlow calls the
// troughs a fill's: a half. A cache's fill, 1 − e^(−t/τ), halves its pace every 0.7 τ,
// and the halves of a span of two short windows or more lie 10 minutes apart or more;
// a leak that follows a fill under the sawtooth is held while the fill's pace in the
// older half is more than twice its own, where at steadyPace it was held until the
// older half came within a quarter of it (measured on 100 seeds of -stress,
// x_gc_sawtooth_cache_fill_leak: median 26m32s → 27m52s at steadyPace, 27m43s at a
// half, for the same 8 look-alikes kept quiet).
const fillPace = 0.5

// twoWay says whether the floors ps stepped both ways: sharp net steps (changes of sig/2
// or more, each within jumpGap buckets of the one before, spanning jumpGap buckets at
// most, whose sum is sig or more either way), at least one up and one down, and the ups
// not so many more than the downs that chance would rarely give as many (see bothWays).
// A cache held at capacity that evicts one item for another of a different size walks
// at random between its bounds, and a run of swaps that each grew is a staircase as steep
// as a leak's (x_adapter_churn: 44 of 100 paged, docs/leak-detection.md, round 21). A
// leak never steps down; an eviction and the load that follows it within jumpGap buckets
// are one step of their net size. Only sharp steps: a collector's ramps are gradual, and
// a noisy floor's ramp passes sig/2 in runs of buckets whose net would count as a step up
// beside every collection's step down (gc_sawtooth_rising_floor seeds 33 and 86 flagged
// 33 and 27 minutes later without the span bound).
//
// A step up whose floors went sig or more below where they stood before it (an
// eviction's dip before the load that outgrew it) stands for a step down in that test
// where there is none: the process gave memory back, which a leak never does, and a
// cache that swaps shows it at every swap whose eviction the floors caught. Below the
// floor before the step, not any fall within it: a busy bucket that comes back before
// a leak's step falls as far (suite/leak_step_16mib seed 92 flagged 5 minutes later on
// such a fall of 90 MiB). Counted as a step down outright, every run of swaps would be
// two-way however long; standing in, a run of up to four swaps that grew, each with its
// dip, is held while five or more are not (x_adapter_churn seed 2: two swaps of +775 and
// +587 MiB in ten minutes paged for ten minutes; TestCacheChurnAtCapacity's swaps that
// only grew are still flagged).
func twoWay(xs, ps []float64, sig float64) bool {
	const jumpGap = 3
	ups, downs, dips := 0, 0, 0
	net, first, last, open := 0.0, 0.0, 0.0, false
	low := 0.0 // the open step's lowest point below the floor before it
	closeStep := func() {
		sharp := last-first <= jumpGap
		switch {
		case sharp && net >= sig:
			ups++
			if low <= -sig {
				dips++
			}
		case sharp && net <= -sig:
			downs++
		}
		net, open, low = 0, false, 0
	}
	for i := 1; i < len(xs); i++ {
		if open && xs[i]-last > jumpGap {
			closeStep()
		}
		if xs[i]-xs[i-1] != 1 {
			continue
		}
		if d := ps[i] - ps[i-1]; math.Abs(d) >= sig/2 {
			if !open {
				first = xs[i]
			}
			net, last, open = net+d, xs[i], true
			low = math.Min(low, net)
		}
	}
	// A step still open at the newest bucket is not judged: an eviction whose load may
	// yet come is no step down.
	if downs == 0 && dips > 0 {
		return ups < signCriticalAt(ups, 0.05) // a dip is counted only with its step up
	}
	return bothWays(ups, downs)
}

// longStep is how many sig a step of the floors must be, up or down, for the slow rule's
// test of floors that stepped both ways (see track).
const longStep = 4

// bothWays: at least one step each way, and the steps up not so many more than those
// down that a fair coin would give as many more than one time in twenty (one down
// against seven ups is a leak's staircase with a dip; one against three is a walk).
func bothWays(ups, downs int) bool {
	return downs > 0 && ups > 0 && ups < signCriticalAt(ups+downs, 0.05)
}

// lateGoes says whether idleCol's newest bucket may still have risen within itself: the
// least of its samples in the later half of their span does not stand level with the
// least in the earlier half, within a quarter of what the fast rate puts between them
// (see history.late), where both halves had samples spanning half a bucket or more
// (less is not read). The urgent fast rule pages on three floors that rose steeply, each
// its bucket's least sample, which is the bucket's first where the memory rises: a load
// lifts the floor of the bucket after it ended as much as a leak's. Weights reloaded
// beside the old in under a minute (x_model_reload: 1–16 GiB in 10–60 s) lift three
// floors in a row at gigabytes a minute, the third a bucket that stands still; a leak's
// later half stands higher by half the bucket's rise. A later half that stands lower
// says nothing: the earlier half's samples were all mid-request (a busy server; four of
// 100 fast_leak_near_full pages came 30–60 s later, each sampled every 10 s, when such
// buckets were read as standing still), or the load recedes.
func lateGoes(h *history, fastRate float64) bool {
	if h.lateSpan < h.bucket/2 {
		return true
	}
	q := fastRate * h.lateSpan.Seconds() / 8
	return h.lateRise >= q || h.lateRise <= -q
}

// noisier is how many times the long window's noise the floors over the judged window
// must show, bucket to bucket, to be read as the least load in flight (see analyze's
// noisy). Measured on 100 seeds: at 2, busy_leak (85–95 % busy, floors jittered by up to
// 64 MiB, where no exact line stands) waited longer on 6 seeds (13m17s → 14m11s at the
// median); at 3 on 2, and load_diurnal's false verdicts 6 → 0 either way.
const noisier = 3

// noisyLong says whether the floors (xs, fs) over the long window (nl buckets) are the
// least load in flight where the slow rule would read them: the buckets' own floors
// over the newest quarter jump from bucket to bucket by noisier times what they did
// over the quietest quarter (at least sigmaMin), and no exact line under them rises at
// rate (bytes a bucket) or more (see exactFit). The slow rule judges the envelope over
// two hours, and a day's traffic that climbs into saturation for an hour lifts it as
// smoothly as a slow leak; its floor is then drawn anew from the load at every bucket
// and jumps by hundreds of MiB where the quiet hours' moved by a few (load_diurnal
// sampled every 10 s: 16 MiB before the traffic, 200–500 under it). A leak leaves the
// floors' noise as it was, and a server busy all along is as noisy in every quarter.
//
// The buckets' own floors, not the pairs analyze fits: a pair's least repeats a floor,
// a third of the changes are then exactly nought, and their MAD swings threefold from
// quarter to quarter on a server that is busy all along. Not for the short rule's test
// of noisy floors, whose reference is the whole long window's noise: against the
// quietest quarter it held leaks under a cache at capacity swapping adapters, whose
// churn began after a quiet start (vram_eval -stress, x_adapter_churn_leak seeds 66 and
// 92, flagged 15 and 22 minutes after their onset, never; x_gc_sawtooth_leak_stops seed
// 42 and x_leak_per_request seed 12 likewise), for one load_diurnal page it spared.
func (s *analysisScratch) noisyLong(xs, fs []float64, nl int64, rate, sigma float64) bool {
	if newest, quiet := s.quarterNoise(xs, fs, nl); newest <= noisier*math.Max(quiet, sigmaMin) {
		return false
	}
	ex := s.exactFit(xs, fs, nl, sigma)
	return !ex.ok || ex.slope < rate
}

// quarterNoise is diffSigma of ys over the newest quarter of the long window (nl
// buckets) and over its quietest quarter (+Inf where none holds minPoints floors).
func (s *analysisScratch) quarterNoise(xs, ys []float64, nl int64) (newest, quiet float64) {
	q := float64(nl / 4)
	quiet = math.Inf(1)
	if len(xs) == 0 || q < float64(minPoints) {
		return 0, quiet
	}
	for end := xs[len(xs)-1]; end > xs[0]; end -= q {
		lo, hi := len(xs), len(xs)
		for lo > 0 && xs[lo-1] > end-q {
			lo--
		}
		for hi > lo && xs[hi-1] > end {
			hi--
		}
		if hi-lo < minPoints {
			continue
		}
		d := diffSigma(xs[lo:hi], ys[lo:hi], &s.d)
		if hi == len(xs) {
			newest = d
		}
		quiet = math.Min(quiet, d)
	}
	return newest, quiet
}

// diffSigma is one floor's σ from the robust spread of bucket-to-bucket changes of ps
// (1.4826·MAD/√2 under Gaussian noise; a line's constant slope and a staircase's rare
// steps do not inflate it), 0 with fewer than two changes; d is scratch.
func diffSigma(xs, ps []float64, d *[]float64) float64 {
	c := (*d)[:0]
	for i := 1; i < len(xs); i++ {
		if xs[i]-xs[i-1] == 1 {
			c = append(c, ps[i]-ps[i-1])
		}
	}
	*d = c
	if len(c) < 2 {
		return 0
	}
	md := median(c)
	for i := range c {
		c[i] = math.Abs(c[i] - md)
	}
	return 1.4826 * median(c) / math.Sqrt2
}
