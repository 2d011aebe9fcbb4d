package eval

import (
	"bytes"
	"errors"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vram-exporter/vram_exporter/leak/trace"
	"github.com/vram-exporter/vram_exporter/leak/trend"
)

// bound is what a class of the sweep is held to: for look-alikes, nothing (no alert,
// no forecast, ever); for leaks, how many seeds may be missed or flagged later than the
// issue's target (Target), and the slowest delay allowed. The numbers are the ones
// measured over 100 seeds (docs/leak-detection.md, "After"), so a change that makes the
// detector worse on any class fails here; where a class misses the target the
// doc says why.
type bound struct {
	missed, over int           // of 100 seeds; scaled to the seeds swept
	max          time.Duration // slowest detection
}

var sweepBounds = map[string]bound{
	"stair_adapters_unbounded":     {0, 100, 50 * time.Minute},
	"stair_trt_contexts_unbounded": {0, 100, 105 * time.Minute},
	"stair_kernels_unbounded":      {0, 100, 50 * time.Minute},
	"stair_used_only_unbounded":    {1, 100, 70 * time.Minute},
	"gc_sawtooth_rising_floor":     {0, 100, 112 * time.Minute},
	"saturated_burst_leak":         {0, 25, 25 * time.Minute},
	// Scaled settings, leaks from minute 3–8: most start while the process is young,
	// where a steep rise waits half a short window more (round 7, trend's youngHold).
	"cuda_context_short_leak": {0, 45, 4 * time.Minute},
	"used_only_creep_leak":    {42, 100, 150 * time.Minute},
	"fast_leak_near_full":     {0, 10, 5 * time.Minute},
	"cache_fill_smooth_leak":  {0, 92, 60 * time.Minute},
	// Round 14's slow rule, which starts only on a newest quarter that rises by sig, no
	// longer takes two of these busy floors' noise for it, 1h29m after their onsets.
	"busy_leak": {4, 75, 115 * time.Minute},
	// A leak under a day's traffic (round 6): one that starts as the server stops being
	// idle is held by the test of idle moments until they come back or leave the long
	// window, often after the 3-hour trace (docs/leak-detection.md, round 6). Round 14
	// took 13 more that had been flagged on the look-alike's own evidence (the climb, or
	// the slow rule on a peak's noise), all but two of them over 30 minutes late.
	"load_diurnal_leak":        {35, 57, 150 * time.Minute},
	"busy_leak_used_only":      {10, 100, 140 * time.Minute},
	"fast_leak":                {0, 100, 20 * time.Minute},
	"slow_leak":                {0, 0, time.Hour},
	"leak_stops":               {0, 1, 10 * time.Minute},
	"suite/leak_alloc_0.25mib": {0, 0, 50 * time.Minute},
	"suite/leak_alloc_1mib":    {0, 0, 10 * time.Minute},
	"suite/leak_alloc_10mib":   {0, 0, 10 * time.Minute},
	"suite/leak_alloc_100mib":  {0, 100, 8 * time.Minute},
	// A smooth rise ends the warm-up a whole short window after it (round 15; half a
	// window, 16m30s at most, before): 20m–23m30s over 100 seeds.
	"suite/leak_from_start_12mib":   {0, 100, 24 * time.Minute},
	"suite/leak_used_only_10mib":    {0, 90, 45 * time.Minute},
	"suite/leak_step_16mib":         {0, 2, 20 * time.Minute},
	"suite/leak_step_2mib":          {0, 100, 50 * time.Minute},
	"suite/leak_unattributed_20mib": {0, 0, 6 * time.Minute},
}

// knownFalseAlarms are the look-alike classes that still page, with what was measured
// over 100 seeds (docs/leak-detection.md, "What remains weak"): issue 12 asks for none,
// and these are where the detector falls short of that. Every other class must stay at
// 0; these must not get worse.
var knownFalseAlarms = map[string]int{
	// A saturated burst near a full GPU whose floor ramps in even steps and whose
	// requests' spread does not widen: the fast rule cannot tell it from a steep leak
	// (was 75 %; 24 of 100 until the history held the spreads of two short windows, 22
	// until the urgent fast rule asked for an even rise, 16 until the short rule left
	// rises that go ever slower alone, 14 until the urgent rule asked for idle moments in
	// the ramp where the quiet window had them, 13 until that test took the exact chance
	// of none at rest, round 9, 12 until it took the chance of as few as the run kept and
	// an urgent page waited a bucket where that chance was 1 in 10, round 24).
	"saturated_burst_near_full": 6,
	// (load_diurnal, a day's traffic climbing into saturation, paged on 91 of 100 before
	// round 6's test of idle moments, 18 after it, 7 after round 14's exact count, 6 after
	// round 25's bends, and on none since round 32 held floors that jump with the load,
	// trend's noisy: held to 0 as every class not listed.)
	// A cache with a budget filling smoothly after the warm-up at 50–1400 MiB/min at
	// first (added in round 5): on a roomy GPU the fast rule pages before the fill has
	// slowed measurably where τ is 8 minutes or more (39 of 100 before the test of
	// slowing rises, 15 until a young process's steep rise waited half a short window
	// more, round 7; 2 until round 25 read the bend of a fill in small steps, trend's
	// bends); its twin's early alarms were the same fills.
	"cache_fill_smooth": 1,
}

// TestSweep runs every class of the sweep with a few seeds (VRAM_SWEEP=N for N, as
// docs/leak-detection.md does with 100) and asserts what issue 12 asks: no look-alike
// raises leak or unattributed_growth or a GPU forecast, no twin alerts before its onset,
// a leak that stops is steady again within a short window, every out-of-memory error
// has a forecast before it; and each leak class stays within the delays measured.
func TestSweep(t *testing.T) {
	n := 2
	if v := os.Getenv("VRAM_SWEEP"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("VRAM_SWEEP=%q: want a number of seeds", v)
		}
	} else if testing.Short() {
		n = 1
	}
	cfg := trend.DefaultConfig()
	rs, err := Sweep(SweepOptions{Seeds: Seeds(n), Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	if err := WriteSweep(&buf, rs, Seeds(n)); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + buf.String())
	// A count measured over 100 seeds, for n seeds: a class measured at 0 must stay at 0;
	// others are only held to their rate on a sweep large enough to estimate it.
	scale := func(k int) int {
		switch {
		case k == 0:
			return 0
		case n < 50:
			return n
		}
		return (k*n*12 + 999) / 1000
	}
	for _, r := range rs {
		name := r.Class.Name
		if known := knownFalseAlarms[name]; r.FalseAlarms > scale(known) {
			t.Errorf("%s: %d of %d traces alert before a leak (seeds %v), measured %d of 100", name, r.FalseAlarms, r.Traces, r.FalseAlarmSeeds, known)
		}
		if !r.Class.Leak {
			if r.Forecasts > scale(knownFalseAlarms[name]) {
				t.Errorf("%s: a GPU exhaustion forecast on %d of %d look-alikes", name, r.Forecasts, r.Traces)
			}
			continue
		}
		b, ok := sweepBounds[name]
		if !ok {
			t.Errorf("%s: no bound measured for this leak class", name)
			continue
		}
		if r.Missed > scale(b.missed) {
			t.Errorf("%s: %d of %d missed (seeds %v), measured at most %d of 100", name, r.Missed, r.Traces, r.MissedSeeds, b.missed)
		}
		if r.OverTarget > scale(b.over) {
			t.Errorf("%s: %d of %d later than the target (seeds %v), measured at most %d of 100", name, r.OverTarget, r.Traces, r.SlowSeeds, b.over)
		}
		if m := quantile(r.Delays, 1); m > b.max {
			t.Errorf("%s: slowest detection %s, measured at most %s", name, fmtDur(m), fmtDur(b.max))
		}
		if r.NeverSteady() > 0 || quantile(r.SteadyAfter(), 1) > cfg.ShortWindow {
			t.Errorf("%s: steady again %s after the leak stopped (%d never), want within the short window", name, fmtDur(quantile(r.SteadyAfter(), 1)), r.NeverSteady())
		}
		if r.NoLead > 0 || (len(r.Leads) > 0 && quantile(r.Leads, 0) < time.Minute) {
			t.Errorf("%s: forecast lead before the out-of-memory error %s at the least (%d without), want a minute or more", name, fmtDur(quantile(r.Leads, 0)), r.NoLead)
		}
	}
}

// TestSaturatedBurstIdleGone: a saturated burst near a full GPU (seed 12 of its class)
// whose floor ramps as steeply, as rigidly and as evenly as a fast leak's once paged by
// the urgent fast rule; none of its ramp's samples comes back to the floor, where the
// quiet window's idle moments said several would, so it is load (trend's idleGone) and
// stays quiet. Round 5's detector paged on it.
func TestSaturatedBurstIdleGone(t *testing.T) {
	if r := sweepOne(t, "saturated_burst_near_full", 12); r.FalseAlarms != 0 || r.Forecasts != 0 {
		t.Errorf("saturated_burst_near_full seed 12: %d false alarms, %d forecasts, want none", r.FalseAlarms, r.Forecasts)
	}
}

// TestAdapterChurnWalks: a cache of adapters held at capacity, one evicted for another
// of a different size every few minutes, walks at random (round 21's probes). Before
// trend's twoWay the short rule took a run of swaps that each grew for a leak
// (x_adapter_churn_ranks seed 7, 84 MiB/min at 51 minutes; seed 15 at 67): the floors
// stepped down as well as up. The rule of a collector's troughs took the levels a swap
// held until the next for a collector's ramps, and the dips of swaps outside the
// allocator for collections coming back ever higher (x_adapter_churn_unattributed seeds
// 15 and 17, round 21's code; seed 2 before round 21, whose troughs stepped down as
// well as up, pages again since round 22: of its swaps' levels only those that climbed
// in two swaps are ramps, and their troughs only rose): a ramp climbs over its length
// (trend's gradual). And where the walk's newest swaps all grew, each eviction's dip
// below the floor before it is the memory given back that a leak never gives (round 24:
// x_adapter_churn seed 2, two swaps of +775 and +587 MiB in ten minutes; _ranks seed 4;
// _unattributed seed 8). Quiet.
func TestAdapterChurnWalks(t *testing.T) {
	quietSeeds(t, "x_adapter_churn", 2)
	quietSeeds(t, "x_adapter_churn_ranks", 4, 7, 15)
	quietSeeds(t, "x_adapter_churn_unattributed", 8, 15, 17)
}

// TestCacheRefill: a cache cleared part way through the process's life and filled again
// in steps to the level it held before (round 39's probes). Before, engines outside the
// allocator rebuilt one by one paged as they came back (x_cache_refill_unattributed seeds
// 9, 17, 22, 26 and 68), and the fall from the level held read as a give-back as wide as
// the level was long, which hid a leak after the clear for an hour or more
// (x_cache_refill_leak seeds 1, 3, 5, 6 and 7, and the same seeds of
// x_cache_refill_unattributed_leak, never flagged). Quiet, and flagged. And a refill of
// adapters loaded close together, which climbs as a steep line, waits for the level it
// comes back to as steps do (x_cache_refill_leak seed 10004, held out: paged at 312
// MiB/min before its leak's onset where every line was let through).
func TestCacheRefill(t *testing.T) {
	quietSeeds(t, "x_cache_refill_unattributed", 9, 17, 22, 26, 68)
	if r := sweepOne(t, "x_cache_refill_leak", 10004); r.FalseAlarms > 0 || r.Missed > 0 {
		t.Errorf("x_cache_refill_leak seed 10004: %d early alarms, %d missed; want flagged after its onset only", r.FalseAlarms, r.Missed)
	}
	for _, class := range []string{"x_cache_refill_leak", "x_cache_refill_unattributed_leak"} {
		r := sweepLoad(t, class, []uint64{1, 3, 5, 6, 7}, false)
		if r.Missed > 0 || r.FalseAlarms > 0 || quantile(r.Delays, 1) > 30*time.Minute {
			t.Errorf("%s seeds 1 3 5 6 7: %d missed (seeds %v), %d early, slowest %s; want all flagged within 30 minutes of the onset",
				class, r.Missed, r.MissedSeeds, r.FalseAlarms, fmtDur(quantile(r.Delays, 1)))
		}
	}
}

// TestNearFullYoungStaircase: a leak of 238 MiB/min on a nearly full GPU, sampled every
// 10 s, whose floors climb unevenly (buckets of three samples, some with no idle
// moment) so that the fast rule never sees three rising buckets in a row; the short rule
// took it 12 minutes after a late warm-up's end, in probation, which held it until the
// out-of-memory error (fast_leak_near_full seed 10006, held out in round 39: never
// flagged, no forecast). Flagged with the forecast before the OOM.
func TestNearFullYoungStaircase(t *testing.T) {
	r := sweepOne(t, "fast_leak_near_full", 10006)
	if r.Missed > 0 || r.NoLead > 0 || len(r.Leads) == 0 || quantile(r.Leads, 0) < time.Minute {
		t.Errorf("fast_leak_near_full seed 10006: %d missed, forecast leads %v (%d without), want flagged and forecast a minute or more before the OOM", r.Missed, r.Leads, r.NoLead)
	}
}

// quietSeeds asserts that none of class's seeds raises a false leak or
// unattributed_growth verdict, without the client's counts.
func quietSeeds(t *testing.T, class string, seeds ...uint64) {
	t.Helper()
	if r := sweepLoad(t, class, seeds, false); r.FalseAlarms != 0 {
		t.Errorf("%s seeds %v: %d false alarms, want none", class, seeds, r.FalseAlarms)
	}
}

// TestStoppedLeakStaysSteady: leaks that stopped and were alerted on again, 5 to 17
// minutes after their stop, by the slow rule reading the long window's line (round 16's
// code: seed 84 until 21 min after the stop, 99 until 20 min; with the client's
// counts, seed 42 on and off for 47 min through the floors at rest). Steady within a
// short window of the stop, and for good.
func TestStoppedLeakStaysSteady(t *testing.T) {
	sw := trend.DefaultConfig().ShortWindow
	for _, tc := range []struct {
		seeds []uint64
		load  bool
	}{{[]uint64{84, 99}, false}, {[]uint64{42}, true}} {
		r := sweepLoad(t, "leak_stops", tc.seeds, tc.load)
		if r.NeverSteady() > 0 || len(r.SteadyAfter()) != len(tc.seeds) || quantile(r.SteadyAfter(), 1) > sw {
			t.Errorf("leak_stops seeds %v (counts %v): steady %v after the stop (%d alerting at the end), want within %s", tc.seeds, tc.load, r.SteadyAfter(), r.NeverSteady(), sw)
		}
	}
}

// sweepOne scores one seed of one class, at the default settings.
func sweepOne(t *testing.T, class string, seed uint64) ClassResult {
	t.Helper()
	return sweepLoad(t, class, []uint64{seed}, false)
}

// The stress classes are swept in place of Classes when asked, each named apart from
// them, and a seed of one can be shown like any class's. They are not held to the
// targets: they measure how far outside the built ranges the detector holds.
func TestStressClasses(t *testing.T) {
	names := map[string]bool{}
	for _, c := range Classes() {
		names[c.Name] = true
	}
	stress := Stress()
	for _, c := range stress {
		if names[c.Name] {
			t.Errorf("stress class %s shares its name with another class", c.Name)
		}
		names[c.Name] = true
	}
	rs, err := Sweep(SweepOptions{Seeds: []uint64{1}, Config: trend.DefaultConfig(), Classes: stress})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(stress) {
		t.Fatalf("swept %d classes, want the %d stress classes", len(rs), len(stress))
	}
	for i, r := range rs {
		if r.Class.Name != stress[i].Name || r.Traces != 1 {
			t.Errorf("result %d: %s with %d traces, want %s with 1", i, r.Class.Name, r.Traces, stress[i].Name)
		}
	}
	var buf bytes.Buffer
	if err := ShowClass(stress[0].Name, 1, false, trend.DefaultConfig(), &buf); err != nil || !strings.Contains(buf.String(), stress[0].Name+" seed 1") {
		t.Errorf("ShowClass(%s): %v\n%s", stress[0].Name, err, buf.String())
	}
	if err := ShowClass("no_such_class", 1, false, trend.DefaultConfig(), &buf); err == nil || !strings.Contains(err.Error(), "-stress") {
		t.Errorf("ShowClass of an unknown class: %v, want an error that says where the classes are listed", err)
	}
}

// TestYoungLeakNearFullNotHeld: seed 106 of fast_leak_near_full leaks 166 MiB/min from
// 20 minutes in, sampled every 10 s, while its process is young: the short rule starts
// growth on it, and the urgent fast rule cannot take over (its flushing cache keeps the
// floor from climbing rigidly and evenly). At the judged pace the GPU runs out within two
// short windows, so the young process's hold of a steep rise (trend's youngHold) must not
// apply: without that exception the GPU ran out unflagged.
func TestYoungLeakNearFullNotHeld(t *testing.T) {
	if r := sweepOne(t, "fast_leak_near_full", 106); r.Missed != 0 || r.NoLead != 0 {
		t.Errorf("fast_leak_near_full seed 106: %d missed, %d out-of-memory errors without a forecast before them, want none", r.Missed, r.NoLead)
	}
}

// TestLoadReported: where the client reports its requests in flight (its request()), a
// sample with none in flight is the process at rest. The look-alikes whose floor is load
// in flight page less (measured on seeds 1–100: load_diurnal 6 → 0 before round 32's
// noisy floors took those six without the counts too (on seeds 1001–1200 some still
// page without them: 1076, 1093 and 1132 below), 7 before round 25,
// 18 before round 14, long_generation 6 → 0 before round 19's confirmed roomy run made
// it 0 without them too, saturated_burst_near_full 6 → 1, 12 → 6 before round 24; held
// to that with VRAM_SWEEP=100), seeds that page without the signal stay quiet with it
// (load_diurnal seeds 1076, 1093 and 1132; 18, 25 and 79 until round 32; seed 38, which paged with the counts too unless the
// client's word that nothing was at rest counted on its own, until round 25's bends left
// it quiet without them; until round 14 the seeds were 12, 13 and 28, quiet without the
// counts since; saturated_burst_near_full's 4 and 11 until round 24), and a leak under a
// day's traffic that the lost idle moments would hold is found on the floors at rest, over two
// short windows (load_diurnal_leak seed 26) or the long window (seed 3): missed without
// them.
func TestLoadReported(t *testing.T) {
	for _, c := range []struct {
		class string
		seed  uint64
	}{{"load_diurnal", 1076}, {"load_diurnal", 1093}, {"load_diurnal", 1132}, {"saturated_burst_near_full", 23}, {"saturated_burst_near_full", 30}} {
		if r := sweepLoad(t, c.class, []uint64{c.seed}, false); r.FalseAlarms != 1 {
			t.Errorf("%s seed %d pages no more without the signal: pick another seed", c.class, c.seed)
		}
		if r := sweepLoad(t, c.class, []uint64{c.seed}, true); r.FalseAlarms != 0 {
			t.Errorf("%s seed %d with requests in flight reported: a false alarm", c.class, c.seed)
		}
	}
	for _, c := range []struct {
		seed uint64
		want string
	}{{26, "(fit 1.00) at the moments the client reported no request in flight"}, {3, "across the long window (fit 0.99) at the moments"}} {
		var buf bytes.Buffer
		if err := ShowClass("load_diurnal_leak", c.seed, true, trend.DefaultConfig(), &buf); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), c.want) {
			t.Errorf("load_diurnal_leak seed %d with requests in flight: the leak under the traffic was not found on the floors at rest (%q):\n%s", c.seed, c.want, buf.String())
		}
	}
	// A fast leak on a roomy GPU: within two minutes of its onset with the counts (its
	// buckets kept their moments at rest), after a longer run without them.
	for _, seed := range []uint64{2, 3} {
		without, with := sweepLoad(t, "fast_leak", []uint64{seed}, false), sweepLoad(t, "fast_leak", []uint64{seed}, true)
		if len(without.Delays) != 1 || without.Delays[0] <= 2*time.Minute {
			t.Errorf("fast_leak seed %d without the signal: delays %v, want one over 2 minutes: pick another seed", seed, without.Delays)
		}
		if len(with.Delays) != 1 || with.Delays[0] > 2*time.Minute {
			t.Errorf("fast_leak seed %d with requests in flight reported: delays %v, want one within 2 minutes", seed, with.Delays)
		}
	}
	if os.Getenv("VRAM_SWEEP") != "100" {
		return
	}
	for class, want := range map[string]int{"load_diurnal": 0, "long_generation": 0, "saturated_burst_near_full": 1} {
		if r := sweepLoad(t, class, Seeds(100), true); r.FalseAlarms > want {
			t.Errorf("%s with requests in flight reported: %d false alarms of 100, measured %d", class, r.FalseAlarms, want)
		}
	}
	if r := sweepLoad(t, "fast_leak", Seeds(100), true); median(r.Delays) > 2*time.Minute {
		t.Errorf("fast_leak with requests in flight reported: median delay %s, measured 1m44s", median(r.Delays))
	}
}

// TestFastRunAtRest: where the client counts its requests, a fast leak on a server
// seldom at rest pages on its floors at rest alone (trend's restRun): fast_leak seeds
// whose buckets without a moment at rest broke the fast rule's run, flagged by the short
// rule 7m27s–11m54s after their onset before it, within 4 minutes. What else rises at
// rest stays quiet: garbage in lumps at random moments whose floors at rest lined up
// across buckets (four of them page without the test of the newest bucket's own pace), weights
// reloaded in shards (4 and 21 page without the test that the rise goes on, 67 without
// the test of pace), a collector's next ramp (below).
func TestFastRunAtRest(t *testing.T) {
	r := sweepLoad(t, "fast_leak", []uint64{43, 62, 83, 94, 97}, true)
	if len(r.Delays) != 5 || quantile(r.Delays, 1) > 4*time.Minute {
		t.Errorf("fast_leak seeds 43, 62, 83, 94, 97 with requests in flight reported: delays %v, want each within 4 minutes", r.Delays)
	}
	for _, c := range []struct {
		class string
		seeds []uint64
	}{{"x_gc_lumpy", []uint64{7, 13, 55, 70, 87}}, {"x_model_reload", []uint64{4, 21, 67}}} {
		if r := sweepLoad(t, c.class, c.seeds, true); r.FalseAlarms != 0 {
			t.Errorf("%s seeds %v with requests in flight reported: %d false alarms, want none", c.class, c.seeds, r.FalseAlarms)
		}
	}
	// A collector whose first ramp, from the process's start, outlasts the warm-up: a
	// minute's verdict at its twentieth minute (the rule for a leak from the start),
	// which the rules do not fire on; its next ramp, at the first's pace, paged for 7.5
	// and 13 minutes where the floors at rest did not count the first as given back
	// (restBack).
	for _, c := range []struct {
		class string
		seed  uint64
	}{{"x_gc_sawtooth_long", 55}, {"x_gc_sawtooth_wide", 25}} {
		if r := sweepLoad(t, c.class, []uint64{c.seed}, true); r.Fired != 0 {
			t.Errorf("%s seed %d with requests in flight reported: the rules fired", c.class, c.seed)
		}
	}
}

// sweepLoad scores seeds of one class (built or stress) at the default settings, its
// client reporting its requests in flight or not.
func sweepLoad(t *testing.T, class string, seeds []uint64, load bool) ClassResult {
	t.Helper()
	rs, err := Sweep(SweepOptions{Seeds: seeds, Config: trend.DefaultConfig(), Load: load,
		Classes: append(Classes(), Stress()...), Keep: func(c Class) bool { return c.Name == class }})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Traces != len(seeds) {
		t.Fatalf("want %d traces of %s, got %+v", len(seeds), class, rs)
	}
	return rs[0]
}

// TestFirstTrafficCounted: a model left idle past its warm-up meets its first traffic,
// its client counting its requests from the first (x_first_traffic_late with the counts):
// the pools those requests create step its floor up at rest for a few minutes, which the
// short rule took for a leak on seeds 46 and 57 until counts that begin after the warm-up
// made the process young again (trend's newTraffic: its staircases on probation, its
// steep rises held). The leaking twin of each is still flagged.
func TestFirstTrafficCounted(t *testing.T) {
	seeds := []uint64{46, 57}
	if r := sweepLoad(t, "x_first_traffic_late", seeds, true); r.FalseAlarms != 0 {
		t.Errorf("x_first_traffic_late seeds %v with the counts: %d false alarms, want none", seeds, r.FalseAlarms)
	}
	if r := sweepLoad(t, "x_first_traffic_late_leak", seeds, true); r.Missed != 0 || len(r.Delays) != len(seeds) {
		t.Errorf("x_first_traffic_late_leak seeds %v with the counts: %d missed, delays %v, want each flagged", seeds, r.Missed, r.Delays)
	}
}

// inFlightField is a trace line's in_flight, to take out (a client that does not count).
var inFlightField = regexp.MustCompile(`,"in_flight":[0-9]+`)

// TestReportsLoadSameSamples: a Spec that reports its requests in flight writes the same
// samples, each pushed one from its first request with its count, and none is written
// without it.
func TestReportsLoadSameSamples(t *testing.T) {
	for _, c := range Classes() {
		if c.Name != "load_diurnal" && c.Name != "long_generation" {
			continue
		}
		s := c.Make(3)
		var plain, load bytes.Buffer
		if err := Generate(s, &plain); err != nil {
			t.Fatal(err)
		}
		s.ReportsLoad = true
		if err := Generate(s, &load); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(plain.String(), `"in_flight"`) {
			t.Fatalf("%s: in_flight written without ReportsLoad", c.Name)
		}
		re := inFlightField
		if re.ReplaceAllString(load.String(), "") != plain.String() {
			t.Errorf("%s: reporting the requests in flight changed the samples", c.Name)
		}
		// The client counts from its first request: every pushed sample from the first
		// with a count carries one, that first one with a request in flight (or the
		// day's traffic beginning, whose first requests the samples missed).
		out := load.String()
		first := re.FindStringIndex(out)
		if first == nil {
			t.Fatalf("%s: no count written with ReportsLoad", c.Name)
		}
		line := strings.LastIndexByte(out[:first[0]], '\n') + 1
		pushed := strings.Count(out[line:], `"allocated"`)
		counts := re.FindAllString(out, -1)
		if m := counts[0]; strings.HasSuffix(m, ":0") && s.Traffic == nil {
			t.Errorf("%s: counts began with none in flight (%s), before any request", c.Name, m)
		}
		idle := 0
		for _, m := range counts {
			if strings.HasSuffix(m, ":0") {
				idle++
			}
		}
		if len(counts) != pushed || idle == 0 || idle == pushed {
			t.Errorf("%s: %d counts for %d pushed samples, %d of them idle: want one each, some idle and some not", c.Name, len(counts), pushed, idle)
		}
	}
}

// TestDiurnalSparseQuiet: a day's traffic climbs until the server is never idle, its
// client not counting its requests (load_diurnal). On seeds 13, 43 and 50 (sampled every
// 10 s, quiet hours at rest a third of the time or less) no stretch of up to a short
// window was due enough returns to the floor to say the idle moments went, and load
// came back to a floor by chance under the loose count: the short or slow rule flagged
// the climb for 13 to 23 minutes. On seeds 62 and 92 the slow rule started on the climb
// under the long window while its newest quarter, the peak's floors, was noise. Each is
// quiet now (history's exact count, idle's longer stretches, track's slowStart).
func TestDiurnalSparseQuiet(t *testing.T) {
	quietSeeds(t, "load_diurnal", 13, 43, 50, 62, 92)
}

// TestSawtoothLeakTroughs: a leak under a collector's sawtooth is flagged on the troughs
// the collections come back to (trend's risingTroughs), not once the judged window's
// envelope, three cycles wide, has turned; and once it stops, the first collection that
// comes back no higher lets it go. Over seeds 1–20 (vram_eval -seeds 20):
// gc_sawtooth_rising_floor 31m02s median before, 21m39s with the troughs;
// x_gc_sawtooth_leak_stops steady 25m46s (median) after the stop before, 17m46s. The
// look-alike stays quiet.
func TestSawtoothLeakTroughs(t *testing.T) {
	seeds := Seeds(20)
	if r := sweepLoad(t, "gc_sawtooth", seeds, false); r.FalseAlarms != 0 {
		t.Errorf("gc_sawtooth: %d false alarms of %d", r.FalseAlarms, len(seeds))
	}
	r := sweepLoad(t, "gc_sawtooth_rising_floor", seeds, false)
	if r.Missed != 0 || median(r.Delays) > 25*time.Minute {
		t.Errorf("gc_sawtooth_rising_floor: %d missed, median delay %s; want none missed, within 25 minutes", r.Missed, median(r.Delays))
	}
	r = sweepLoad(t, "x_gc_sawtooth_leak_stops", seeds, false)
	if s := r.SteadyAfter(); len(s) < len(seeds)-2 || median(s) > 20*time.Minute {
		t.Errorf("x_gc_sawtooth_leak_stops: steady after the stop %v (median %s); want most seeds, the median within 20 minutes", s, median(s))
	}
}

// TestLongGenerationConfirmed: the six long_generation seeds of 100 that gave a one-bucket
// `leak` verdict on the roomy fast rule (round 18: a first generation longer than its
// run, freed within the next bucket) are quiet now that the run waits for the next
// bucket to confirm it (trend's confirmRoomy), and the fast leaks on a roomy GPU are
// still all flagged, within the bound TestSweep holds them to.
func TestLongGenerationConfirmed(t *testing.T) {
	if r := sweepLoad(t, "long_generation", []uint64{10, 30, 34, 36, 53, 67}, false); r.FalseAlarms != 0 {
		t.Errorf("long_generation: %d of 6 seeds paged, want none", r.FalseAlarms)
	}
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	r := sweepLoad(t, "fast_leak", seeds, false)
	if r.Missed != 0 || len(r.Delays) != len(seeds) || slices.Max(r.Delays) > sweepBounds["fast_leak"].max {
		t.Errorf("fast_leak seeds %v: %d missed, delays %v", seeds, r.Missed, r.Delays)
	}
}

// TestShortLineNotHeldForRun: where another rule sees a leak's rise at the same bucket
// close as the fast rule's run clear of load, or while that run still waits (the next
// bucket's confirmation, a young process's hold), the other rule pages then (round 23:
// cuda_context_short_leak seeds 1, 2, 7 and 27 paged 10 s later, 41, 59 and 97 40–50 s
// later, once the fast rule took runs that a bucket's idle phase had broken before).
func TestShortLineNotHeldForRun(t *testing.T) {
	for _, seed := range []uint64{1, 2, 7, 27, 41, 59, 97} {
		var buf bytes.Buffer
		if err := ShowClass("cuda_context_short_leak", seed, false, trend.DefaultConfig(), &buf); err != nil {
			t.Fatal(err)
		}
		first := ""
		for _, line := range strings.Split(buf.String(), "\n") {
			if f := strings.Fields(line); len(f) > 4 && f[4] == string(trend.Leak) {
				first = line
				break
			}
		}
		if !strings.Contains(first, "(fit ") || strings.Contains(first, "beyond what load explains") {
			t.Errorf("cuda_context_short_leak seed %d: first page %q, want another rule's line (fit …), not the run's later:\n%s", seed, first, buf.String())
		}
	}
}

// TestRunsAtRestNotClear: a cache that fills from a young process's first traffic keeps
// its moments at rest as a leak does; its run is not clear of load by them (round 23:
// x_cache_fill_slow seed 5 paged for two minutes when it was), only by a rise past what
// its requests take.
//
// Nor on a collector's sawtooth: garbage accrues at a steady pace, so once the pace is
// taken off every sample of a ramp is back at its floor (x_gc_sawtooth_threshold seed
// 18, a ramp of 539 MiB/min steeper than the ones before it, paged for three minutes).
// And a rule that takes a run's rise while the run waits (see
// TestShortLineNotHeldForRun) judges its youth from when the run began: x_cache_fill_slow
// seed 20's run began in the process's youth and was held; the short rule's line, begun
// a bucket after its youth, paged at once.
func TestRunsAtRestNotClear(t *testing.T) {
	quietSeeds(t, "x_cache_fill_slow", 5, 20)
	quietSeeds(t, "x_gc_sawtooth_threshold", 18)
}

// TestSaturatedNearFullSeeds: a saturated burst near a full GPU lifts its floor as
// steeply and evenly as a fast leak, and its buckets keep few of the quiet window's
// moments at rest: one or two out of tens (seeds 11, 63 and 88 paged on them while only
// none at all counted as the idle moments gone), or none out of the six samples three
// buckets hold when sampled every 10 s (seeds 4 and 29), which waits for more (restThin).
// The leaking twin pages before the GPU runs out on the same seeds.
func TestSaturatedNearFullSeeds(t *testing.T) {
	seeds := []uint64{4, 11, 29, 55, 63, 88}
	quietSeeds(t, "saturated_burst_near_full", seeds...)
	r := sweepLoad(t, "fast_leak_near_full", seeds, false)
	if r.Missed != 0 || len(r.Leads) != len(seeds) {
		t.Errorf("fast_leak_near_full seeds %v: %d missed, %d forecasts before the OOM, want none missed and all forecast", seeds, r.Missed, len(r.Leads))
	}
}

// TestNearFullLeakUnderLargerRequests: fast leaks near a full GPU whose run's buckets
// held larger requests than the quiet window before (seeds 6 and 23: 780–1,400 MiB on
// top of the floor against spreads of 143–503) fail the rigid test bucket after bucket
// and waited six minutes for the short rule; their buckets kept their moments at rest
// by the exact count, which near a full GPU stands in for the rigid test (round 24). Seed
// 2 failed it for one bucket and paged 30 s past its two minutes. All within the target.
func TestNearFullLeakUnderLargerRequests(t *testing.T) {
	seeds := []uint64{2, 6, 23}
	r := sweepLoad(t, "fast_leak_near_full", seeds, false)
	if r.Missed != 0 || r.OverTarget != 0 {
		t.Errorf("fast_leak_near_full seeds %v: %d missed, %d over target (delays %v), want none", seeds, r.Missed, r.OverTarget, r.Delays)
	}
}

// TestFillBendsSeeds: caches filling to a budget after the warm-up, fast at first and
// ever slower, that paged while the halves' robust slopes of their floors, scattered by
// the fill's small steps, read a pace ratio just over steadyPace (cache_fill_smooth
// seed 92 at 21m30s; x_cache_fill_mid seed 98; x_cache_fill_slow seeds 6, 8 and 13), and
// a day's traffic climbing into saturation whose climb slows as it nears its peak
// (load_diurnal seed 38). A parabola through all the floors near their robust line
// reads the bend (round 25, trend's bends); and fills slower than the built ones once
// their pace fell under bendPace, not steadyPace (x_cache_fill_slow seeds 11, 37, 64,
// 74, 96; x_cache_fill_mid seed 65). Quiet.
func TestFillBendsSeeds(t *testing.T) {
	quietSeeds(t, "cache_fill_smooth", 92)
	quietSeeds(t, "x_cache_fill_mid", 65, 98)
	quietSeeds(t, "x_cache_fill_slow", 6, 8, 11, 13, 37, 64, 74, 96)
	quietSeeds(t, "load_diurnal", 38)
}

// TestProbationEndsOnALine: a process that pushes nothing, its NVML used floor stepping
// up soon after a flat warm-up (stair_used_only seed 6087, held out in round 37): the short
// rule took the steps for a rise, a young process's staircase waited its probation of a
// short window, kept meanwhile at the hysteresis level (fit 0.80), and paged at its end
// for a minute. At probation's end the rise must still qualify as growth does to start.
func TestProbationEndsOnALine(t *testing.T) {
	quietSeeds(t, "stair_used_only", 6087)
}

// TestExcursionPaceAtGiveBack: a fast leak under a collector's sawtooth on a busy server
// must rise faster than the ramps the series gave back (trend's back) to page on a roomy
// GPU. Two busy buckets in a row part way up a ramp left one fitted point 350 MiB above
// it, and read as the ramp's top they made a pace of 139 MiB/min out of ramps of 11,
// which excused a leak of 279 MiB/min for the 30 minutes it ran (x_gc_sawtooth_fast_leak
// seed 13, missed until round 26 took the pace to where the ramp stood when it gave
// back). Flagged within 10 minutes now.
func TestExcursionPaceAtGiveBack(t *testing.T) {
	r := sweepLoad(t, "x_gc_sawtooth_fast_leak", []uint64{13}, false)
	if r.Missed != 0 || len(r.Delays) != 1 || r.Delays[0] > 10*time.Minute {
		t.Errorf("x_gc_sawtooth_fast_leak seed 13: %d missed, delays %v; want flagged within 10 minutes", r.Missed, r.Delays)
	}
}

// TestSteepPastSawtooth: a fast leak under a collector's sawtooth on a busy server, whose
// run of steep buckets the collections and the busy buckets keep breaking and whose
// troughs the leak outruns (a collection gives back less than the leak added since the
// trough before: no cycle), pages once the floors' own line over the short window rises
// more than twice as steeply as any ramp the sawtooth climbed (trend's steepSaw, round
// 27): seed 15, 322 MiB/min, never flagged before, within 10 minutes. Only where the
// floors rose in at least half the window's buckets: a cache at capacity swapping
// engines outside the allocator climbs as steeply in a staircase of a few large steps
// (x_adapter_churn_unattributed seed 19 paged on its line for four minutes). Nor where
// those floors rise ever slower: a cache filling on such a server outruns the ramps at
// first (x_gc_sawtooth_cache_fill seed 60, 444 then 125 MiB/min, paged at 22:30).
func TestSteepPastSawtooth(t *testing.T) {
	r := sweepLoad(t, "x_gc_sawtooth_fast_leak", []uint64{15}, false)
	if r.Missed != 0 || len(r.Delays) != 1 || r.Delays[0] > 10*time.Minute {
		t.Errorf("x_gc_sawtooth_fast_leak seed 15: %d missed, delays %v; want flagged within 10 minutes", r.Missed, r.Delays)
	}
	var buf bytes.Buffer
	if err := ShowClass("x_gc_sawtooth_fast_leak", 15, false, trend.DefaultConfig(), &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "more than twice as steeply as any ramp of the collector's sawtooth") {
		t.Errorf("x_gc_sawtooth_fast_leak seed 15: no verdict says it rose past the sawtooth's ramps:\n%s", buf.String())
	}
	quietSeeds(t, "x_adapter_churn_unattributed", 19)
	quietSeeds(t, "x_gc_sawtooth_cache_fill", 60)
}

// TestFillTailUnderSawtooth: a cache whose fill under a collector's sawtooth slows to a
// few MiB a cycle lifts each trough by less than the troughs' noise over the one before,
// and the envelope a cycle behind fits a line (x_gc_sawtooth_cache_fill seed 18: `leak`
// for 24 minutes at 2.85 MiB/min, 1h26m into the trace; seed 36, 10 MiB/min on the
// troughs, for 9 minutes). Over the span the envelope is judged on, the troughs' pace
// fell by more than half (trend's troughsSlow, round 36).
func TestFillTailUnderSawtooth(t *testing.T) {
	quietSeeds(t, "x_gc_sawtooth_cache_fill", 18, 36)
}

// TestRunConfirmedOverTwoBuckets: the fast rule's run clear of load on a roomy GPU must
// still rise at the next bucket's close (trend's confirmRoomy). On a server seldom idle
// a bucket without an idle moment holds its floor up by the least load in flight, and
// the bucket after it rises less than the leak's pace, or falls: read on that bucket
// alone, the leak was let go and its run broken (x_fast_leak_stops seeds 16 and 48,
// 100–1000 MiB/min that stops after 10–40 minutes, never flagged). Read over the newest
// two buckets together where the newest does not spread wider than the buckets before
// it (round 26), they page within 5 minutes. Without the spread's test a saturated
// burst's floor, the least load in flight, which fell in a bucket its load stretched,
// paged at that bucket (x_saturated_long seed 270).
func TestRunConfirmedOverTwoBuckets(t *testing.T) {
	seeds := []uint64{16, 48}
	r := sweepLoad(t, "x_fast_leak_stops", seeds, false)
	if r.Missed != 0 || len(r.Delays) != len(seeds) || slices.Max(r.Delays) > 5*time.Minute {
		t.Errorf("x_fast_leak_stops seeds %v: %d missed, delays %v; want all flagged within 5 minutes", seeds, r.Missed, r.Delays)
	}
	quietSeeds(t, "x_saturated_long", 270)
}

// TestRoomyRunSlowingTwice: once the roomy fast rule's run has paged, the test of
// slowing lets it go only at the second close in a row that reads it: so soon after the
// onset its halves hold a few floors each, and one bucket held up by a request tips it
// for that close alone (fast_leak seeds 73, 97 and 98 went `leak`, `steady` for 30–90 s,
// `leak`, restarting the rules' `for:`). Before the page it still ends the run at once:
// a fill's first steep minutes are such a run (ignored at any close while the run read
// clear of load, cache_fill_smooth seeds 1, 2, 6, 17 and 22 paged).
func TestRoomyRunSlowingTwice(t *testing.T) {
	for _, seed := range []uint64{73, 97, 98} {
		var buf bytes.Buffer
		if err := ShowClass("fast_leak", seed, false, trend.DefaultConfig(), &buf); err != nil {
			t.Fatal(err)
		}
		paged := false
		for _, line := range strings.Split(buf.String(), "\n") {
			f := strings.Fields(line)
			if len(f) < 5 || f[2] == "gpu" || !strings.HasPrefix(f[1], "+") {
				continue
			}
			if f[4] == string(trend.Leak) {
				paged = true
			} else if paged {
				t.Errorf("fast_leak seed %d: %s after its page, want `leak` to the end:\n%s", seed, f[4], buf.String())
				break
			}
		}
		if !paged {
			t.Errorf("fast_leak seed %d: never paged:\n%s", seed, buf.String())
		}
	}
	quietSeeds(t, "cache_fill_smooth", 1, 2, 6, 17, 22)
}

// TestSawtoothFillTroughsSlow: a cache that fills on a collector's server lifts each
// trough the collections come back to, and the troughs' rule took three in a row that
// each rose by sig for a leak (x_gc_sawtooth_cache_fill seed 4: troughs up 1,452 MiB
// over 28 buckets, then 195 over 20, paged at 41:00 for 18 minutes). The newest
// trough's rise at under steadyPace of the one before's pace, by more than the
// troughs' noise, is the memory that stays growing ever slower (trend's
// troughRise.slowing): quiet.
func TestSawtoothFillTroughsSlow(t *testing.T) {
	quietSeeds(t, "x_gc_sawtooth_cache_fill", 4)
}

// TestSawtoothFillSlowsSinceCollection: the fill's first minutes outrun the
// collector's ramps and the fast rule takes them, and the test of slowing, which reads
// the envelope (the troughs, a cycle behind), let it page (x_gc_sawtooth_cache_fill
// seed 3: 179 MiB/min at first, `leak` for 9 minutes). Read on the floors since the
// newest collection too, a clean ramp of garbage and fill, it slows: quiet.
func TestSawtoothFillSlowsSinceCollection(t *testing.T) {
	quietSeeds(t, "x_gc_sawtooth_cache_fill", 3)
}

// TestFillSlowingNotKeptOnFloors: a cache that fills on a collector's server outruns
// the ramps at first, and the fast rule takes its run (x_gc_sawtooth_cache_fill seeds
// 32, 50, 68 and 72). Growth on the floors' own line, or on a series whose floor fell
// within the short window (the collection before the fill began), was kept past the
// test of slowing while that line rose steeply: `leak` for 18, 11.5, 4.5 and 13.5
// minutes (seed 68 where the envelope's test said slowing too, and the ramp's was not
// read).
// Where the test read the floors since the newest collection (a clean ramp, not the
// lagging envelope), it ends such growth as it does every fast rise on a roomy GPU:
// quiet. A leak under a sawtooth whose wide envelope reads as slowing is still kept
// (x_gc_sawtooth_fast_leak seed 85 with the counts, 701 MiB/min, flagged after 6m32s:
// ended by the envelope's test, it went `steady` and `cache_growth` by turns and was
// flagged after 13m32s).
func TestFillSlowingNotKeptOnFloors(t *testing.T) {
	quietSeeds(t, "x_gc_sawtooth_cache_fill", 32, 50, 68, 72)
	if r := sweepLoad(t, "x_gc_sawtooth_fast_leak", []uint64{85}, true); len(r.Delays) != 1 || r.Delays[0] > 7*time.Minute {
		t.Errorf("x_gc_sawtooth_fast_leak seed 85 (counts): flagged after %v (missed %d), want within 7 minutes of the onset", r.Delays, r.Missed)
	}
}

// TestFloorsGrowthLetGo: growth that the fast rule took on such a fill (its first
// minutes outrun the collector's ramps) was kept for as long as the floors' own line
// over the short window rose at half the fast rate, which the sawtooth's ramps alone
// do once the cache is full (x_gc_sawtooth_cache_fill seed 45, 44 MiB/min ramps:
// `leak` from 26:00 to the trace's end), and by the judged window's relaxed line while
// the fill's tail still rose a MiB a minute (seeds 27, 54 and 81: 89 to 113 minutes).
// It is kept on the floors' line only while that line outruns twice the sawtooth's
// steepest ramp, as it had to to start, and the test of slowing lets it go otherwise,
// as it does every fast rise on a roomy GPU: each back to steady within 15 minutes.
func TestFloorsGrowthLetGo(t *testing.T) {
	for _, seed := range []uint64{27, 45, 54, 81} {
		if d := longestAlert(t, "x_gc_sawtooth_cache_fill", seed); d > 15*time.Minute {
			t.Errorf("x_gc_sawtooth_cache_fill seed %d: alerted for %s in a row, want at most 15 minutes", seed, d)
		}
	}
}

// longestAlert is the longest stretch for which one of class's processes held an
// alerting verdict (leak or unattributed_growth), without the client's counts; one
// still alerting at the trace's end counts to its last verdict change as a day.
func longestAlert(t *testing.T, class string, seed uint64) time.Duration {
	t.Helper()
	var buf bytes.Buffer
	if err := ShowClass(class, seed, false, trend.DefaultConfig(), &buf); err != nil {
		t.Fatal(err)
	}
	var longest time.Duration
	from := map[string]time.Time{}
	for _, line := range strings.Split(buf.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[2] == "gpu" {
			continue
		}
		at, err := time.Parse(time.RFC3339, f[0])
		if err != nil {
			continue
		}
		key := f[2] + " " + f[3]
		start, on := from[key]
		switch alert := f[4] == string(trend.Leak) || f[4] == string(trend.UnattributedGrowth); {
		case alert && !on:
			from[key] = at
		case !alert && on:
			longest = max(longest, at.Sub(start))
			delete(from, key)
		}
	}
	if len(from) > 0 {
		longest = 24 * time.Hour
	}
	return longest
}

// A held-out range names its seeds in the sweep's report, and starts where it was told.
func TestSeedsFromNamesItsRange(t *testing.T) {
	s := SeedsFrom(1001, 3)
	if len(s) != 3 || s[0] != 1001 || s[2] != 1003 {
		t.Fatalf("SeedsFrom(1001, 3) = %v, want [1001 1002 1003]", s)
	}
	if got, want := seedSpan(s), "3 seeds, 1001–1003"; got != want {
		t.Errorf("seedSpan = %q, want %q", got, want)
	}
	if got, want := seedSpan(Seeds(100)), "100 seeds"; got != want {
		t.Errorf("seedSpan(Seeds(100)) = %q, want %q", got, want)
	}
	var buf bytes.Buffer
	if err := WriteSweep(&buf, nil, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "Look-alikes (3 seeds, 1001–1003 each)") {
		t.Errorf("the report does not name the range:\n%s", buf.String())
	}
}

// TestHeldRequestBridged: seed 52 of x_requests_last_fast_leak_near_full leaks 582
// MiB/min from minute 40 on a nearly full GPU, under requests that last; one of 1.4 GiB,
// held for three minutes across the onset, fell onto the leak's line only when it ended.
// The fast rule bridges those buckets back to the quiet floor (trend's bridge): flagged
// within five minutes of the onset, the forecast minutes before the GPU runs out (without
// the bridge the short rule flagged it eight minutes in, the forecast as the GPU ran out).
func TestHeldRequestBridged(t *testing.T) {
	r := sweepOne(t, "x_requests_last_fast_leak_near_full", 52)
	if len(r.Delays) != 1 || r.Delays[0] > 5*time.Minute {
		t.Errorf("flagged after %v, want within 5 minutes of the onset", r.Delays)
	}
	if len(r.Leads) != 1 || r.Leads[0] < 2*time.Minute {
		t.Errorf("forecast %v before the OOM, want at least 2 minutes", r.Leads)
	}
}

// TestBridgeOnePace: seed 1129 of x_adapter_churn, its client counting its requests,
// swaps adapters at capacity; after an eviction two larger ones load in a row (floors up
// 43, 931 and 648 MiB a bucket). A bridge over the busy bucket before them read that as a
// leak's run from the quiet floor and paged for a bucket; a run bridged must rise at one
// pace from its landing, and this one stays quiet.
func TestBridgeOnePace(t *testing.T) {
	if r := sweepLoad(t, "x_adapter_churn", []uint64{1129}, true); r.FalseAlarms != 0 {
		t.Errorf("x_adapter_churn seed 1129 with the counts: %d false verdicts, want none", r.FalseAlarms)
	}
}

// TestHeldRequestLongBridged: seed 74 of x_requests_last_fast_leak_near_full leaks 195
// MiB/min from 30m33s, sampled every 2 s; a request held for six minutes from the onset
// hid the quiet floor behind it, and when it ended the floors fell onto the leak's line
// thirteen buckets after the rise began. A bridge walked back no further than six
// buckets and the process ran the GPU out unflagged, with no forecast; walked back a
// short window, it is flagged before the OOM, the forecast with it.
func TestHeldRequestLongBridged(t *testing.T) {
	r := sweepOne(t, "x_requests_last_fast_leak_near_full", 74)
	if r.Missed != 0 || len(r.Delays) != 1 || r.Delays[0] > 10*time.Minute {
		t.Errorf("flagged after %v (missed %d), want within 10 minutes of the onset", r.Delays, r.Missed)
	}
	if len(r.Leads) != 1 || r.Leads[0] < time.Minute {
		t.Errorf("forecast %v before the OOM, want at least a minute", r.Leads)
	}
}

// TestRequestJumpNotEven: seed 66 of x_requests_last_near_full, a healthy server on a GPU
// a few GiB from full, sampled every 10 s; a request arrived and filled: floors up 1,413,
// 285 and 154 MiB a bucket, then back. Three rises in a row at a pace that would fill the
// GPU soon paged for a bucket; a leak's first bucket rises by no more than twice the
// steeper of the two after it, so the urgent fast rule waits, and the bucket after falls.
func TestRequestJumpNotEven(t *testing.T) {
	if r := sweepOne(t, "x_requests_last_near_full", 66); r.FalseAlarms != 0 {
		t.Errorf("x_requests_last_near_full seed 66: %d false verdicts, want none", r.FalseAlarms)
	}
}

// TestNoisyFloorsHeld: seeds 25 and 66 of load_diurnal, sampled every few seconds by a
// client that does not count its requests: the day's traffic climbs until no bucket has
// an idle moment, and the floors, the least load in flight, jump from bucket to bucket by
// 14–23 times what they did over the long window, while their lower envelope climbs with
// the load at a fit of 0.85–0.9. The short rule paged on that line; floors that noisy,
// with no exact line under them that rises, are load (trend's noisy).
func TestNoisyFloorsHeld(t *testing.T) {
	if r := sweepLoad(t, "load_diurnal", []uint64{25, 66}, false); r.FalseAlarms != 0 {
		t.Errorf("load_diurnal seeds 25 and 66: %d false verdicts, want none", r.FalseAlarms)
	}
	// On-call sees the rise and why it does not page.
	var buf bytes.Buffer
	if err := ShowClass("load_diurnal", 25, false, trend.DefaultConfig(), &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "its floors jump from bucket to bucket") {
		t.Errorf("load_diurnal seed 25: no steady verdict said the floors jump with the load:\n%s", buf.String())
	}
}

// TestLoudFloorsHeld: held-out seeds of load_diurnal sampled every 10 s by a client
// that does not count its requests. Quiet for the first half hour (floors 16 MiB apart
// bucket to bucket), then the day's traffic climbs into saturation and the floors, the
// least load in flight, jump by 200–500 MiB. Over two hours the envelope of that climb
// fits the slow rule's line: `leak` for 4 to 27 minutes, the shipped rule fired on
// three. The long window's newest quarter against its quietest (trend's noisyLong) holds it.
func TestLoudFloorsHeld(t *testing.T) {
	quietSeeds(t, "load_diurnal", 1119, 1170, 1192, 1195)
	// On-call sees the long window's rise and why it does not page, not "nothing rising".
	if !slices.ContainsFunc(reasonsOf(t, "load_diurnal", 1119), func(r string) bool {
		return strings.Contains(r, "over the long window, but its newest quarter's floors jump")
	}) {
		t.Error("load_diurnal seed 1119: no steady verdict said the long window's newest floors jump with the load")
	}
}

// TestSlowRiseLostIdleSaid: load_diurnal seed 20 (no counts): the day's traffic takes
// the last idle moments and the long window's envelope, its climb, fits the slow rule's
// line; the rule holds it (trend's idleLostLong), and the steady verdict says so.
func TestSlowRiseLostIdleSaid(t *testing.T) {
	quietSeeds(t, "load_diurnal", 20)
	if !slices.ContainsFunc(reasonsOf(t, "load_diurnal", 20), func(r string) bool {
		return strings.Contains(r, "over the long window, but some stretch of it lost the idle moments")
	}) {
		t.Error("load_diurnal seed 20: no steady verdict said the long window's rise lost its idle moments")
	}
}

// reasonsOf replays class's trace for seed through a fresh engine at the default
// settings and returns the distinct reasons its processes' results gave at any close,
// not only where the verdict changed.
func reasonsOf(t *testing.T, class string, seed uint64) []string {
	t.Helper()
	c, ok := classNamed(class)
	if !ok {
		t.Fatalf("no class %s", class)
	}
	var buf bytes.Buffer
	if err := Generate(c.Make(seed), &buf); err != nil {
		t.Fatal(err)
	}
	eng, err := trend.NewEngine(trend.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	r := trace.NewReader(&buf)
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case rec.Process != nil:
			if res := eng.Observe(*rec.Process); !slices.Contains(out, res.Reason) {
				out = append(out, res.Reason)
			}
		case rec.GPU != nil:
			eng.ObserveGPU(*rec.GPU)
		}
	}
}

// TestNoisyFloorsExactLine: seed 42 of leak_stops, 22 MiB/min on a server sampled every
// 10 s whose busy buckets lift the floors by up to a GiB; its judged window is far
// noisier than the long window, but the buckets with an idle moment lie on the leak's
// line to a few MiB, so the short rule still takes it within ten minutes of its onset.
func TestNoisyFloorsExactLine(t *testing.T) {
	r := sweepOne(t, "leak_stops", 42)
	if len(r.Delays) != 1 || r.Delays[0] > 10*time.Minute {
		t.Errorf("flagged after %v (missed %d), want within 10 minutes of the onset", r.Delays, r.Missed)
	}
}

// TestSmallRequestsNotAtRest: load_diurnal seeds 2021 and 2026 (requests of 24–25 MiB,
// sampled every 1 and 5 s) paged for 10.5 and 4.5 minutes on a line through the least
// load in flight, which small requests and many samples make as exact as floors at rest,
// while the buckets that still had an idle moment lay under it at the floor (see
// trend's exactFit). Both stay quiet; round 35's probe x_load_diurnal_small pages less
// (35 → 16 of 100 on seeds 1–100, docs/leak-detection.md).
func TestSmallRequestsNotAtRest(t *testing.T) {
	if r := sweepLoad(t, "load_diurnal", []uint64{2021, 2026}, false); r.FalseAlarms != 0 {
		t.Errorf("load_diurnal seeds 2021 and 2026: %d paged, want none", r.FalseAlarms)
	}
}
