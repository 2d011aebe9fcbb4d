package eval

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/vram-exporter/vram_exporter/leak/trend"
)

// Seeds returns n seeds for the class sweep: 1, 2, …, n. Each class draws its own
// parameters from (seed, class name), so the same seed means different shapes in
// different classes.
func Seeds(n int) []uint64 { return SeedsFrom(1, n) }

// SeedsFrom returns n seeds from first on: first, first+1, …. A held-out check reads a
// range no one has looked at while changing the detector (seeds 1–300 have been read
// seed by seed), so that its figures say how the method does on shapes it was not
// adjusted to.
func SeedsFrom(first uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = first + uint64(i)
	}
	return out
}

// seedSpan names a sweep's seeds: "100 seeds", or "100 seeds, 1001–1100" where they
// do not start at 1 (the seeds are consecutive, see SeedsFrom).
func seedSpan(seeds []uint64) string {
	if len(seeds) == 0 || seeds[0] == 1 {
		return fmt.Sprintf("%d seeds", len(seeds))
	}
	return fmt.Sprintf("%d seeds, %d–%d", len(seeds), seeds[0], seeds[len(seeds)-1])
}

// Target is the detection delay the issue asks for at a leak's rate: ≥ 100 MiB/min
// within 2 minutes, ≥ 1 MiB/min within 10 minutes, slower ones within the 2-hour long
// window.
func Target(rateMiBPerMin float64) time.Duration {
	switch {
	case rateMiBPerMin >= 100:
		return 2 * time.Minute
	case rateMiBPerMin >= 1:
		return 10 * time.Minute
	}
	return 2 * time.Hour
}

// ClassResult sums one class over its seeds.
type ClassResult struct {
	Class  Class
	Traces int
	// FalseAlarms counts traces with an alert (leak or unattributed_growth) on a
	// look-alike or before a twin's onset; Forecasts traces with a GPU exhaustion
	// forecast there. Baseline: the PromQL rule at its best committed-suite setting.
	FalseAlarms, BaselineFalseAlarms, Forecasts int
	FalseAlarmSeeds                             []uint64 // the first few, to replay
	// Leaks: detection delays from the onset, ours and the baseline's; Missed counts
	// leaks never flagged; OverTarget those flagged later than Target (or missed).
	Delays, BaselineDelays []time.Duration
	Missed, BaselineMissed int
	OverTarget             int
	SlowSeeds, MissedSeeds []uint64
	// Stops: on leaks that stop, each seed and how long after the stop nothing alerted
	// any more (-1: still alerting at the end); see SteadyAfter and NeverSteady.
	Stops []SeedDelay
	// Leads: how long before the out-of-memory error the GPU forecast first appeared;
	// NoLead counts OOMs without a forecast before them.
	Leads  []time.Duration
	NoLead int
	// Fired: where the shipped rules fire (Outcome.FiredFalse, FiredDelay): look-alike
	// traces (or twins before the onset) they fired on, and the leaks' delays to their
	// first firing; NeverFired counts leaks they never fired on.
	Fired       int
	FiredDelays []time.Duration
	NeverFired  int
}

// SweepOptions configure Sweep.
type SweepOptions struct {
	Seeds   []uint64
	Config  trend.Config // the suite's settings (Label.Trend overrides them per trace)
	Setting Setting      // the baseline's setting, scaled for short-scale traces
	Keep    func(Class) bool
	Workers int     // 0: GOMAXPROCS
	Classes []Class // nil: Classes()
	// Load: every trace's client reports its requests in flight (Spec.ReportsLoad).
	Load bool
}

// Sweep generates every class with every seed, in memory, and scores our engine (and
// the baseline at opts.Setting) on each trace, through the same replay the report uses.
func Sweep(opts SweepOptions) ([]ClassResult, error) {
	all := opts.Classes
	if all == nil {
		all = Classes()
	}
	var classes []Class
	for _, c := range all {
		if opts.Keep == nil || opts.Keep(c) {
			classes = append(classes, c)
		}
	}
	type job struct{ ci, si int }
	type res struct {
		ci, si int
		ld     loaded
		base   Outcome
		err    error
	}
	jobs := make(chan job)
	results := make(chan res)
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				s := classes[j.ci].Make(opts.Seeds[j.si])
				s.ReportsLoad = opts.Load
				var buf bytes.Buffer
				r := res{ci: j.ci, si: j.si}
				if err := Generate(s, &buf); err != nil {
					r.err = err
					results <- r
					continue
				}
				l := s.Label()
				cfg, err := l.Trend.Apply(opts.Config)
				if err != nil {
					r.err = fmt.Errorf("class %s: %w", classes[j.ci].Name, err)
					results <- r
					continue
				}
				r.ld, r.err = loadData(buf.Bytes(), l, cfg)
				if r.err == nil && opts.Setting.Window > 0 {
					scale := float64(cfg.ShortWindow) / float64(opts.Config.ShortWindow)
					sc := func(d time.Duration) time.Duration { return time.Duration(float64(d) * scale).Round(time.Second) }
					set := Setting{Window: sc(opts.Setting.Window), Theta: opts.Setting.Theta, For: sc(opts.Setting.For)}
					r.base = baseline(r.ld, set, sc(ruleInterval))
				}
				results <- r
			}
		}()
	}
	go func() {
		for ci := range classes {
			for si := range opts.Seeds {
				jobs <- job{ci, si}
			}
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	out := make([]ClassResult, len(classes))
	for i, c := range classes {
		out[i].Class = c
	}
	var firstErr error
	type scored struct {
		si   int
		ld   loaded
		base Outcome
	}
	per := make([][]scored, len(classes))
	for r := range results {
		if r.err != nil {
			if firstErr == nil {
				firstErr = r.err
			}
			continue
		}
		per[r.ci] = append(per[r.ci], scored{r.si, r.ld, r.base})
	}
	if firstErr != nil {
		return nil, firstErr
	}
	for ci := range classes {
		// Seed order, so the lists of seeds and the medians do not depend on scheduling.
		slices.SortFunc(per[ci], func(a, b scored) int { return a.si - b.si })
		cr := &out[ci]
		for _, sc := range per[ci] {
			seed := opts.Seeds[sc.si]
			cr.add(seed, sc.ld.label, sc.ld.ours, sc.base)
		}
	}
	return out, nil
}

func (cr *ClassResult) add(seed uint64, l Label, o, base Outcome) {
	cr.Traces++
	if o.FalseAlarm {
		cr.FalseAlarms++
		if len(cr.FalseAlarmSeeds) < 5 {
			cr.FalseAlarmSeeds = append(cr.FalseAlarmSeeds, seed)
		}
	}
	if base.FalseAlarm {
		cr.BaselineFalseAlarms++
	}
	if o.ForecastFalse {
		cr.Forecasts++
	}
	if o.FiredFalse {
		cr.Fired++
	}
	if !l.Leak {
		return
	}
	if o.FiredDelay >= 0 {
		cr.FiredDelays = append(cr.FiredDelays, o.FiredDelay)
	} else {
		cr.NeverFired++
	}
	if o.Detected {
		cr.Delays = append(cr.Delays, o.Delay)
	} else {
		cr.Missed++
		if len(cr.MissedSeeds) < 5 {
			cr.MissedSeeds = append(cr.MissedSeeds, seed)
		}
	}
	if !o.Detected || o.Delay > Target(l.RateMiBPerMin) {
		cr.OverTarget++
		if len(cr.SlowSeeds) < 5 {
			cr.SlowSeeds = append(cr.SlowSeeds, seed)
		}
	}
	if base.Detected {
		cr.BaselineDelays = append(cr.BaselineDelays, base.Delay)
	} else {
		cr.BaselineMissed++
	}
	if l.StopSeconds > 0 && o.Detected {
		cr.Stops = append(cr.Stops, SeedDelay{seed, o.SteadyAfter})
	}
	if l.OOM {
		if o.ForecastAt >= 0 && o.ForecastAt < o.OOMAt {
			cr.Leads = append(cr.Leads, o.OOMAt-o.ForecastAt)
		} else {
			cr.NoLead++
		}
	}
}

// SeedDelay is one seed's delay, -1 for never.
type SeedDelay struct {
	Seed  uint64
	Delay time.Duration
}

// SteadyAfter lists, over the leaks that stop and became steady, how long after the stop
// nothing alerted any more.
func (cr *ClassResult) SteadyAfter() []time.Duration {
	var out []time.Duration
	for _, x := range cr.Stops {
		if x.Delay >= 0 {
			out = append(out, x.Delay)
		}
	}
	return out
}

// NeverSteady counts the leaks that stop still alerting at the end.
func (cr *ClassResult) NeverSteady() int { return len(cr.Stops) - len(cr.SteadyAfter()) }

// latest lists the n seeds of the longest delays (never first), longest first.
func latest(sd []SeedDelay, n int) []uint64 {
	s := slices.Clone(sd)
	key := func(x SeedDelay) time.Duration {
		if x.Delay < 0 {
			return time.Duration(math.MaxInt64)
		}
		return x.Delay
	}
	slices.SortStableFunc(s, func(a, b SeedDelay) int { return cmp.Compare(key(b), key(a)) })
	var out []uint64
	for _, x := range s[:min(n, len(s))] {
		out = append(out, x.Seed)
	}
	return out
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return -1
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q * float64(len(s)-1))
	return s[i]
}

// WriteSweep prints the sweep as two Markdown tables (look-alikes, then leaks), the
// form docs/leak-detection.md quotes.
func WriteSweep(w io.Writer, rs []ClassResult, seeds []uint64) error {
	fmt.Fprintf(w, "Look-alikes (%s each): traces with a false leak/unattributed_growth, ours and the baseline's; traces the shipped rules fire on (the verdict held for VRAMProcessLeak's or VRAMUnattributedGrowth's `for:`); traces with a GPU exhaustion forecast\n\n", seedSpan(seeds))
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| class\t false alarms\t baseline\t rule fired\t forecasts\t first seeds\t")
	fmt.Fprintln(tw, "|---\t---\t---\t---\t---\t---\t")
	for _, r := range rs {
		if r.Class.Leak {
			continue
		}
		fmt.Fprintf(tw, "| %s\t %d/%d\t %d\t %d\t %d\t %s\t\n", r.Class.Name, r.FalseAlarms, r.Traces, r.BaselineFalseAlarms, r.Fired, r.Forecasts, seedList(r.FalseAlarmSeeds))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nLeaks (%s each): false alarms before the onset; delay from the onset (median, 90th percentile, max); flagged later than the target or missed; the baseline; after a stop, time to no alert (median/max); forecast lead before the OOM (min/median); the shipped rules' first firing: before the onset, delay median (never fired)\n\n", seedSpan(seeds))
	tw = tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| class\t early alarms\t delay median / p90 / max\t missed\t over target\t baseline delay median (missed)\t steady after stop\t forecast lead\t rule fired: early, median (never)\t slow seeds\t")
	fmt.Fprintln(tw, "|---\t---\t---\t---\t---\t---\t---\t---\t---\t---\t")
	for _, r := range rs {
		if !r.Class.Leak {
			continue
		}
		stop, lead := "", ""
		if len(r.Stops) > 0 {
			steady := r.SteadyAfter()
			stop = fmt.Sprintf("%s / %s", fmtDur(quantile(steady, 0.5)), fmtDur(quantile(steady, 1)))
			if never := r.NeverSteady(); never > 0 {
				stop += fmt.Sprintf(" (%d never)", never)
			}
			stop += " (latest " + seedList(latest(r.Stops, 3)) + ")"
		}
		if len(r.Leads) > 0 || r.NoLead > 0 {
			lead = fmt.Sprintf("%s / %s", fmtDur(quantile(r.Leads, 0)), fmtDur(quantile(r.Leads, 0.5)))
			if r.NoLead > 0 {
				lead += fmt.Sprintf(" (%d none)", r.NoLead)
			}
		}
		seeds := seedList(r.SlowSeeds)
		if len(r.MissedSeeds) > 0 {
			seeds += " (missed " + seedList(r.MissedSeeds) + ")"
		}
		fired := fmt.Sprintf("%d, %s (%d)", r.Fired, fmtDur(quantile(r.FiredDelays, 0.5)), r.NeverFired)
		fmt.Fprintf(tw, "| %s\t %d/%d\t %s / %s / %s\t %d\t %d\t %s (%d)\t %s\t %s\t %s\t %s\t\n", r.Class.Name, r.FalseAlarms, r.Traces,
			fmtDur(quantile(r.Delays, 0.5)), fmtDur(quantile(r.Delays, 0.9)), fmtDur(quantile(r.Delays, 1)),
			r.Missed, r.OverTarget, fmtDur(quantile(r.BaselineDelays, 0.5)), r.BaselineMissed, stop, lead, fired, seeds)
	}
	return tw.Flush()
}

func seedList(s []uint64) string {
	var parts []string
	for _, v := range s {
		parts = append(parts, fmt.Sprint(v))
	}
	return strings.Join(parts, " ")
}

// ShowClass replays one class's trace for one seed and prints its verdict changes (and
// GPU forecast lines) as a table: the way to see why a seed of the sweep scored as it did.
// load has the client report its requests in flight (SweepOptions.Load).
func ShowClass(name string, seed uint64, load bool, cfg trend.Config, w io.Writer) error {
	c, ok := classNamed(name)
	if !ok {
		return fmt.Errorf("no class called %q; `vram_eval -seeds 1` lists the classes, `-stress -seeds 1` those outside the built ranges", name)
	}
	s := c.Make(seed)
	s.ReportsLoad = load
	var buf bytes.Buffer
	if err := Generate(s, &buf); err != nil {
		return err
	}
	l := s.Label()
	tcfg, err := l.Trend.Apply(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s seed %d: %s; onset %s, rate %.3g MiB/min, stop %s, cadence %s\n", name, seed, c.Note,
		fmtDur(time.Duration(l.OnsetSeconds*float64(time.Second))), l.RateMiBPerMin,
		fmtDur(time.Duration(l.StopSeconds*float64(time.Second))), fmtDur(s.Cadence))
	return showBytes(buf.Bytes(), tcfg, w)
}

// classNamed is the class, built or outside the built ranges (Stress), called name.
func classNamed(name string) (Class, bool) {
	all := append(Classes(), Stress()...)
	if i := slices.IndexFunc(all, func(c Class) bool { return c.Name == name }); i >= 0 {
		return all[i], true
	}
	return Class{}, false
}
