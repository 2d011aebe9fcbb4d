package eval

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vram-exporter/vram_exporter/leak/replay"
	"github.com/vram-exporter/vram_exporter/leak/trace"
	"github.com/vram-exporter/vram_exporter/leak/trend"
)

// LabelsFile is the name of the labels file in the testdata directory.
const LabelsFile = "labels.json"

// Labels is the content of LabelsFile.
type Labels struct {
	Traces []Label `json:"traces"`
}

// WriteSuite writes every synthetic trace and the labels file to dir, keeping the
// labels of real traces (File under real/) that are already there.
func WriteSuite(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating the testdata directory: %w", err)
	}
	var labels Labels
	for _, s := range Suite() {
		var buf bytes.Buffer
		// A zero gzip header (no name, no time) keeps the bytes identical run to run.
		zw := gzip.NewWriter(&buf)
		if err := Generate(s, zw); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return fmt.Errorf("compressing %s: %w", s.Name, err)
		}
		l := s.Label()
		if err := os.WriteFile(filepath.Join(dir, l.File), buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("writing trace %s: %w", s.Name, err)
		}
		labels.Traces = append(labels.Traces, l)
	}
	if old, err := ReadLabels(dir); err == nil {
		for _, l := range old.Traces {
			if strings.HasPrefix(l.File, "real/") {
				labels.Traces = append(labels.Traces, l)
			}
		}
	}
	b, err := json.MarshalIndent(labels, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding labels: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, LabelsFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing labels: %w", err)
	}
	return nil
}

// ReadLabels reads the labels file of dir.
func ReadLabels(dir string) (Labels, error) {
	var l Labels
	b, err := os.ReadFile(filepath.Join(dir, LabelsFile))
	if err != nil {
		return l, fmt.Errorf("reading labels (run `go run ./cmd/vram_eval -generate` to create them): %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return l, fmt.Errorf("decoding %s: %w", LabelsFile, err)
	}
	return l, nil
}

// Show replays the labelled trace called name through the detector and prints its
// verdict changes as a table: the way to see why a trace scored as it did. The label's
// own settings (Label.Trend), if any, override cfg, as in Evaluate.
func Show(dir, name string, cfg trend.Config, w io.Writer) error {
	labels, err := ReadLabels(dir)
	if err != nil {
		return err
	}
	for _, l := range labels.Traces {
		if l.Name != name {
			continue
		}
		tcfg, err := l.Trend.Apply(cfg)
		if err != nil {
			return fmt.Errorf("trace %s: %w", name, err)
		}
		rc, err := open(filepath.Join(dir, l.File))
		if err != nil {
			return fmt.Errorf("opening trace %s: %w", name, err)
		}
		defer rc.Close()
		_, err = replay.Run(rc, w, tcfg, replay.FormatTable)
		return err
	}
	return fmt.Errorf("no trace called %q in %s", name, filepath.Join(dir, LabelsFile))
}

func showBytes(data []byte, cfg trend.Config, w io.Writer) error {
	_, err := replay.Run(bytes.NewReader(data), w, cfg, replay.FormatTable)
	return err
}

// open returns a reader over a trace file, decompressing .gz files.
func open(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(path, ".gz") {
		return f, nil
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("decompressing %s: %w", path, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{zr, f}, nil
}

// Outcome is one method's result on one trace.
type Outcome struct {
	// FalseAlarm is the first alert on a non-leak trace, or before a leak's onset.
	FalseAlarm    bool
	FalseAlarmAt  time.Duration // from the trace start
	Detected      bool
	Delay         time.Duration // first alert at or after onset, minus onset
	FirstVerdicts string        // ours: the alerting verdict

	// Ours only. ForecastFalse: a GPU exhaustion forecast on a trace without a leak, or
	// before its onset; ForecastAt: the first one at or after the onset (-1: none).
	ForecastFalse bool
	ForecastAt    time.Duration
	// SteadyAfter is, on a leak that stops (Label.StopSeconds), how long after the stop
	// no process alerted any more (-1: never; 0: none alerted at the stop).
	SteadyAfter time.Duration
	// OOMAt is the out-of-memory error on a Label.OOM trace: the main process's last
	// sample, from the trace start.
	OOMAt time.Duration
	// Ours only: what the shipped alert rules make of the verdicts, a verdict held as
	// long as its rule's `for:` (AlertFor). A verdict is not yet an alert: on-call hears
	// of the rule, and the baseline's figures count its own `for:` too. FiredFalse: the
	// rule fired on a look-alike or before a leak's onset (FiredFalseAt from the trace
	// start); FiredDelay: its first firing at or after the onset, minus the onset (-1:
	// none).
	FiredFalse   bool
	FiredFalseAt time.Duration
	FiredDelay   time.Duration
}

// AlertFor is how long the shipped rules (deploy/prometheus/vram_exporter.rules.yml) want
// each alerting verdict held before they fire: VRAMProcessLeak and
// VRAMUnattributedGrowth. TestAlertForMatchesRules holds them to the file.
var AlertFor = map[trend.Verdict]time.Duration{
	trend.Leak:               5 * time.Minute,
	trend.UnattributedGrowth: 30 * time.Minute,
}

// firings turns one trace's verdict changes into the alerts the rules would fire: per
// series, the verdict it holds and since when; a verdict held for its AlertFor fires at
// since + AlertFor. The `for:` scales with the short window, as the rules' own
// thresholds do at the scaled settings of short traces.
type firings struct {
	scale float64
	held  map[seriesKey]heldVerdict
	fired []time.Duration
}

type heldVerdict struct {
	v     trend.Verdict
	since time.Duration
}

func newFirings(cfg trend.Config) *firings {
	return &firings{
		scale: float64(cfg.ShortWindow) / float64(trend.DefaultConfig().ShortWindow),
		held:  map[seriesKey]heldVerdict{},
	}
}

// end ends h at at, noting a firing if it was held long enough.
func (p *firings) end(h heldVerdict, at time.Duration) {
	f, ok := AlertFor[h.v]
	if !ok {
		return
	}
	if f = time.Duration(float64(f) * p.scale); at-h.since >= f {
		p.fired = append(p.fired, h.since+f)
	}
}

func (p *firings) change(k seriesKey, v trend.Verdict, at time.Duration) {
	h, ok := p.held[k]
	if ok && h.v == v {
		return // a new reason, the same verdict: the rule's series stays at 1
	}
	if ok {
		p.end(h, at)
	}
	p.held[k] = heldVerdict{v, at}
}

// score closes every series at the trace's end and fills o's Fired fields.
func (p *firings) score(o *Outcome, end time.Duration, leak bool, onset time.Duration) {
	for _, h := range p.held {
		p.end(h, end)
	}
	o.FiredDelay = -1
	for _, t := range p.fired {
		if !leak || t < onset {
			if !o.FiredFalse || t < o.FiredFalseAt {
				o.FiredFalse, o.FiredFalseAt = true, t
			}
			continue
		}
		if o.FiredDelay < 0 || t-onset < o.FiredDelay {
			o.FiredDelay = t - onset
		}
	}
}

// TraceResult is one trace's outcome for both methods.
type TraceResult struct {
	Label    Label
	Ours     Outcome
	Baseline Outcome // at the baseline's chosen setting
	Skipped  string  // why a labelled trace was not scored (missing real file)
}

// RealResult is one recorded trace (File under real/), scored apart from the synthetic
// suite: with its own detector settings (Label.Trend), outside the baseline sweep and
// the headline scores, which its minutes-long span would distort.
type RealResult struct {
	Label  Label
	Config trend.Config // the settings it was scored with
	Ours   Outcome
	// Final is the last verdict of the labelled process (of any process when PID is 0).
	Final trend.Verdict
	// Baseline is the baseline's best zero-false-alarm setting on the synthetic suite,
	// its window, `for` and evaluation interval shrunk by Scale (Config.ShortWindow over
	// the suite's short window), so it judges on the same time scale as ours.
	BaselineSetting  Setting
	BaselineInterval time.Duration
	Baseline         Outcome
	Scale            float64
	Skipped          string
}

// IsReal reports whether l is a recorded trace (File under real/) rather than one the
// generator writes.
func (l Label) IsReal() bool { return strings.HasPrefix(l.File, "real/") }

// Setting is one point of the baseline's grid: alert when deriv(used[Window]) > Theta
// (MiB/min), held for For (PromQL's `for:`).
type Setting struct {
	Window time.Duration
	Theta  float64
	For    time.Duration
}

func (s Setting) String() string {
	return fmt.Sprintf("deriv(used[%s]) > %g MiB/min for %s", fmtDur(s.Window), s.Theta, fmtDur(s.For))
}

// Score sums one method's outcomes over the suite.
type Score struct {
	Leaks, NonLeaks int
	TP, FalseAlarms int // FalseAlarms: traces with a false alarm, leak or not
	FPNonLeak       int // non-leak traces with any alert
	Precision       float64
	Recall          float64
	FPRate          float64       // FPNonLeak / NonLeaks
	MedianDelay     time.Duration // over detected leaks; -1 when none
	Delays          []time.Duration
}

// Report is the whole evaluation.
type Report struct {
	Config   trend.Config
	Traces   []TraceResult // the synthetic suite: the headline scores
	Real     []RealResult  // recorded traces, reported on their own
	Ours     Score
	Baseline Score
	Best     Setting
	// Grid holds every baseline setting with zero false alarms, best first.
	ZeroFP []GridPoint
	// BothDetected is the median delay of each method over the leaks both detect.
	BothDetectedOurs, BothDetectedBaseline time.Duration
	BothDetectedN                          int
}

// GridPoint is one baseline setting's score.
type GridPoint struct {
	Setting Setting
	Score   Score
}

// BaselineGrid is the grid the baseline is swept over.
func BaselineGrid() []Setting {
	var out []Setting
	for _, w := range []time.Duration{5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour} {
		for _, th := range []float64{0.25, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000} {
			for _, f := range []time.Duration{0, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute} {
				out = append(out, Setting{Window: w, Theta: th, For: f})
			}
		}
	}
	return out
}

// ruleInterval is how often the baseline's alert rule is evaluated (a common Prometheus
// evaluation interval).
const ruleInterval = 30 * time.Second

type seriesKey struct {
	pid  uint32
	uuid string
}

type rawSample struct {
	t    time.Duration
	used float64
}

// loaded is one trace, replayed through our engine, with the raw used samples the
// baseline needs.
type loaded struct {
	label Label
	ours  Outcome
	final trend.Verdict // the last verdict of the labelled process
	raw   map[seriesKey][]rawSample
}

// Evaluate scores every labelled trace in dir with cfg and the baseline grid.
func Evaluate(dir string, cfg trend.Config) (Report, error) {
	rep := Report{Config: cfg}
	labels, err := ReadLabels(dir)
	if err != nil {
		return rep, err
	}
	var traces, real []loaded
	var realCfg []trend.Config
	for _, l := range labels.Traces {
		tcfg, err := l.Trend.Apply(cfg)
		if err != nil {
			return rep, fmt.Errorf("trace %s: %w", l.Name, err)
		}
		ld, err := load(filepath.Join(dir, l.File), l, tcfg)
		if errors.Is(err, os.ErrNotExist) && l.IsReal() {
			rep.Real = append(rep.Real, RealResult{Label: l, Config: tcfg, Skipped: "file not present"})
			continue
		}
		if err != nil {
			return rep, fmt.Errorf("trace %s: %w", l.Name, err)
		}
		if l.IsReal() {
			real, realCfg = append(real, ld), append(realCfg, tcfg)
			continue
		}
		traces = append(traces, ld)
	}

	// Sweep the baseline grid; keep the settings with no false alarm at all.
	for _, s := range BaselineGrid() {
		outs := make([]Outcome, len(traces))
		for i, tr := range traces {
			outs[i] = baseline(tr, s, ruleInterval)
		}
		sc := score(traces, outs)
		if sc.FalseAlarms == 0 {
			rep.ZeroFP = append(rep.ZeroFP, GridPoint{Setting: s, Score: sc})
		}
	}
	slices.SortStableFunc(rep.ZeroFP, func(a, b GridPoint) int {
		if a.Score.TP != b.Score.TP {
			return b.Score.TP - a.Score.TP
		}
		return cmpDelay(a.Score.MedianDelay, b.Score.MedianDelay)
	})
	var bestOuts []Outcome
	if len(rep.ZeroFP) > 0 {
		rep.Best = rep.ZeroFP[0].Setting
		for _, tr := range traces {
			bestOuts = append(bestOuts, baseline(tr, rep.Best, ruleInterval))
		}
	} else {
		bestOuts = make([]Outcome, len(traces))
	}

	ours := make([]Outcome, len(traces))
	for i, tr := range traces {
		ours[i] = tr.ours
	}
	rep.Ours = score(traces, ours)
	rep.Baseline = score(traces, bestOuts)
	var bo, bb []time.Duration
	for i, tr := range traces {
		rep.Traces = append(rep.Traces, TraceResult{Label: tr.label, Ours: ours[i], Baseline: bestOuts[i]})
		if ours[i].Detected && bestOuts[i].Detected {
			bo, bb = append(bo, ours[i].Delay), append(bb, bestOuts[i].Delay)
		}
	}
	rep.BothDetectedN = len(bo)
	rep.BothDetectedOurs, rep.BothDetectedBaseline = median(bo), median(bb)

	for i, tr := range real {
		rr := RealResult{Label: tr.label, Config: realCfg[i], Ours: tr.ours, Final: tr.final}
		rr.Scale = float64(rr.Config.ShortWindow) / float64(cfg.ShortWindow)
		if len(rep.ZeroFP) > 0 {
			sc := func(d time.Duration) time.Duration {
				return time.Duration(float64(d) * rr.Scale).Round(time.Second)
			}
			rr.BaselineSetting = Setting{Window: sc(rep.Best.Window), Theta: rep.Best.Theta, For: sc(rep.Best.For)}
			rr.BaselineInterval = sc(ruleInterval)
			rr.Baseline = baseline(tr, rr.BaselineSetting, rr.BaselineInterval)
		}
		rep.Real = append(rep.Real, rr)
	}
	return rep, nil
}

func cmpDelay(a, b time.Duration) int {
	if a < 0 {
		a = math.MaxInt64
	}
	if b < 0 {
		b = math.MaxInt64
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// alerting is the set of verdicts that page: growth that is not a cache.
func alerting(v trend.Verdict) bool { return v == trend.Leak || v == trend.UnattributedGrowth }

func load(path string, l Label, cfg trend.Config) (loaded, error) {
	rc, err := open(path)
	if err != nil {
		return loaded{label: l}, err
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, rc); err != nil {
		return loaded{label: l}, fmt.Errorf("reading %s: %w", path, err)
	}
	return loadData(buf.Bytes(), l, cfg)
}

// mainPID is the process every synthetic trace is about (neighbours have other PIDs).
const mainPID = 4242

// loadData replays one trace's bytes through the engine and keeps its raw used samples.
func loadData(data []byte, l Label, cfg trend.Config) (loaded, error) {
	ld := loaded{label: l, raw: map[seriesKey][]rawSample{}}
	ld.ours.ForecastAt, ld.ours.SteadyAfter = -1, -1

	// The trace's first record is its time origin; the onset is relative to it.
	var origin, end time.Time
	var lastMain time.Time
	r := trace.NewReader(bytes.NewReader(data))
	for {
		rec, err := r.Next()
		if err != nil {
			break
		}
		var t time.Time
		if rec.Process != nil {
			t = rec.Process.T
		} else {
			t = rec.GPU.T
		}
		if origin.IsZero() || t.Before(origin) {
			origin = t
		}
		if t.After(end) {
			end = t
		}
		if p := rec.Process; p != nil && p.HasUsed && (l.PID == 0 || l.PID == p.Key.PID) {
			k := seriesKey{p.Key.PID, p.Key.UUID}
			ld.raw[k] = append(ld.raw[k], rawSample{t: p.T.Sub(origin), used: p.Used})
		}
		if p := rec.Process; p != nil && p.Key.PID == mainPID && p.T.After(lastMain) {
			lastMain = p.T
		}
	}
	if l.OOM {
		ld.ours.OOMAt = lastMain.Sub(origin)
	}
	onset := time.Duration(l.OnsetSeconds * float64(time.Second))
	stop := time.Duration(l.StopSeconds * float64(time.Second))
	var first *time.Duration
	var firstVerdict trend.Verdict
	alertingNow := map[seriesKey]bool{}
	fr := newFirings(cfg)
	stopSeen := false
	_, err := replay.Watch(bytes.NewReader(data), cfg, func(c replay.Change) {
		if l.PID != 0 && c.PID != l.PID {
			return
		}
		at := c.T.Sub(origin)
		if l.StopSeconds > 0 && !stopSeen && at >= stop {
			// The first change at or after the stop: was anything alerting just before it?
			stopSeen = true
			if countTrue(alertingNow) == 0 && ld.ours.Detected {
				ld.ours.SteadyAfter = 0
			}
		}
		alertingNow[seriesKey{c.PID, c.UUID}] = alerting(c.Verdict)
		fr.change(seriesKey{c.PID, c.UUID}, c.Verdict, at)
		if stopSeen && alerting(c.Verdict) {
			// Alerting again after the stop: steady only once nothing alerts any more
			// (a verdict taken up again by another rule is not steady).
			ld.ours.SteadyAfter = -1
		}
		if stopSeen && ld.ours.SteadyAfter < 0 && ld.ours.Detected && countTrue(alertingNow) == 0 {
			ld.ours.SteadyAfter = at - stop
		}
		ld.final = c.Verdict
		if !alerting(c.Verdict) {
			return
		}
		if first == nil {
			first, firstVerdict = &at, c.Verdict
		}
		if !l.Leak || at < onset {
			if !ld.ours.FalseAlarm {
				ld.ours.FalseAlarm, ld.ours.FalseAlarmAt = true, at
			}
			return
		}
		if !ld.ours.Detected {
			ld.ours.Detected, ld.ours.Delay = true, at-onset
			ld.ours.FirstVerdicts = string(c.Verdict)
		}
	}, func(g replay.GPUChange) {
		if !g.Valid {
			return
		}
		at := g.T.Sub(origin)
		if !l.Leak || at < onset {
			ld.ours.ForecastFalse = true
			return
		}
		if ld.ours.ForecastAt < 0 {
			ld.ours.ForecastAt = at
		}
	})
	if err != nil {
		return ld, err
	}
	if l.StopSeconds > 0 && !stopSeen && ld.ours.Detected && countTrue(alertingNow) == 0 {
		ld.ours.SteadyAfter = 0
	}
	fr.score(&ld.ours, end.Sub(origin), l.Leak, onset)
	if ld.ours.FirstVerdicts == "" && first != nil {
		ld.ours.FirstVerdicts = string(firstVerdict)
	}
	return ld, nil
}

func countTrue(m map[seriesKey]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}

// baseline runs `deriv(used[W]) > θ for F` over every process series of a trace:
// least-squares slope of the raw used samples in (t−W, t], evaluated every interval.
func baseline(tr loaded, s Setting, interval time.Duration) Outcome {
	var o Outcome
	onset := time.Duration(tr.label.OnsetSeconds * float64(time.Second))
	theta := s.Theta * trend.MiBPerMinute
	for _, samples := range tr.raw {
		if len(samples) == 0 {
			continue
		}
		var n, sx, sy, sxx, sxy float64
		lo, hi := 0, 0
		var pendingSince time.Duration = -1
		end := samples[len(samples)-1].t
		for t := interval; t <= end; t += interval {
			for hi < len(samples) && samples[hi].t <= t {
				x, y := samples[hi].t.Seconds(), samples[hi].used
				n, sx, sy, sxx, sxy = n+1, sx+x, sy+y, sxx+x*x, sxy+x*y
				hi++
			}
			for lo < hi && samples[lo].t <= t-s.Window {
				x, y := samples[lo].t.Seconds(), samples[lo].used
				n, sx, sy, sxx, sxy = n-1, sx-x, sy-y, sxx-x*x, sxy-x*y
				lo++
			}
			firing := false
			if n >= 2 {
				// Centre x on t so the sums stay well conditioned.
				d := n*sxx - sx*sx
				if d > 1e-9*n*n {
					slope := (n*sxy - sx*sy) / d
					firing = slope > theta
				}
			}
			if !firing {
				pendingSince = -1
				continue
			}
			if pendingSince < 0 {
				pendingSince = t
			}
			if t-pendingSince < s.For {
				continue
			}
			if !tr.label.Leak || t < onset {
				if !o.FalseAlarm || t < o.FalseAlarmAt {
					o.FalseAlarm, o.FalseAlarmAt = true, t
				}
				continue
			}
			if !o.Detected || t-onset < o.Delay {
				o.Detected, o.Delay = true, t-onset
			}
			break
		}
	}
	return o
}

func score(traces []loaded, outs []Outcome) Score {
	var sc Score
	for i, tr := range traces {
		o := outs[i]
		if o.FalseAlarm {
			sc.FalseAlarms++
		}
		if tr.label.Leak {
			sc.Leaks++
			if o.Detected {
				sc.TP++
				sc.Delays = append(sc.Delays, o.Delay)
			}
		} else {
			sc.NonLeaks++
			if o.FalseAlarm {
				sc.FPNonLeak++
			}
		}
	}
	if sc.TP+sc.FalseAlarms > 0 {
		sc.Precision = float64(sc.TP) / float64(sc.TP+sc.FalseAlarms)
	}
	if sc.Leaks > 0 {
		sc.Recall = float64(sc.TP) / float64(sc.Leaks)
	}
	if sc.NonLeaks > 0 {
		sc.FPRate = float64(sc.FPNonLeak) / float64(sc.NonLeaks)
	}
	sc.MedianDelay = median(sc.Delays)
	return sc
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return -1
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtDur(d time.Duration) string {
	if d < 0 {
		return "—"
	}
	d = d.Round(time.Second)
	switch {
	case d == 0:
		return "0s"
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d < time.Minute:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dm%02ds", d/time.Minute, (d%time.Minute)/time.Second)
}

func outcomeCell(l Label, o Outcome) string {
	var parts []string
	if o.Detected {
		parts = append(parts, "flagged after "+fmtDur(o.Delay))
	} else if l.Leak {
		parts = append(parts, "missed")
	}
	if o.FalseAlarm {
		parts = append(parts, "FALSE ALARM at "+fmtDur(o.FalseAlarmAt))
	}
	if len(parts) == 0 {
		return "quiet"
	}
	return strings.Join(parts, "; ")
}

// Write prints the report as Markdown tables (pasted into docs/leak-detection.md).
func (r Report) Write(w io.Writer) error {
	c := r.Config
	maxWarm := "six warm-ups"
	if c.MaxWarmUp > 0 {
		maxWarm = fmtDur(c.MaxWarmUp)
	}
	fmt.Fprintf(w, "Engine config: bucket %s, short window %s, long window %s, warm-up %s (at most %s), min rate %.3g MiB/min, fast rate %.3g MiB/min, slow rate %.3g MiB/min, min fit %.2f, min duration %s\n",
		fmtDur(c.Bucket), fmtDur(c.ShortWindow), fmtDur(c.LongWindow), fmtDur(c.WarmUp), maxWarm, c.MinRate/trend.MiBPerMinute,
		c.FastRate/trend.MiBPerMinute, c.SlowRate/trend.MiBPerMinute, c.MinFit, fmtDur(c.MinDuration))
	if len(r.ZeroFP) > 0 {
		fmt.Fprintf(w, "Baseline (best of %d settings with zero false alarms out of %d swept): %s\n\n", len(r.ZeroFP), len(BaselineGrid()), r.Best)
	} else {
		fmt.Fprintf(w, "Baseline: none of the %d settings swept is free of false alarms\n\n", len(BaselineGrid()))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| trace\t leak\t onset\t rate MiB/min\t ours\t verdict\t baseline\t")
	fmt.Fprintln(tw, "|---\t---\t---\t---\t---\t---\t---\t")
	for _, t := range r.Traces {
		l := t.Label
		leak, onset, rate := "no", "", ""
		if l.Leak {
			leak, onset, rate = "yes", fmtDur(time.Duration(l.OnsetSeconds*float64(time.Second))), fmt.Sprintf("%g", l.RateMiBPerMin)
		}
		if t.Skipped != "" {
			fmt.Fprintf(tw, "| %s\t %s\t %s\t %s\t skipped: %s\t \t \t\n", l.Name, leak, onset, rate, t.Skipped)
			continue
		}
		fmt.Fprintf(tw, "| %s\t %s\t %s\t %s\t %s\t %s\t %s\t\n", l.Name, leak, onset, rate,
			outcomeCell(l, t.Ours), t.Ours.FirstVerdicts, outcomeCell(l, t.Baseline))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| method\t precision\t recall\t false-positive rate\t false alarms\t median delay\t")
	fmt.Fprintln(tw, "|---\t---\t---\t---\t---\t---\t")
	for _, m := range []struct {
		name string
		s    Score
	}{{"vram_exporter trend", r.Ours}, {"baseline " + r.Best.String(), r.Baseline}} {
		fmt.Fprintf(tw, "| %s\t %.2f\t %.2f (%d/%d)\t %.2f (%d/%d)\t %d\t %s\t\n", m.name, m.s.Precision, m.s.Recall, m.s.TP, m.s.Leaks,
			m.s.FPRate, m.s.FPNonLeak, m.s.NonLeaks, m.s.FalseAlarms, fmtDur(m.s.MedianDelay))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nOn the %d leaks both detect: median delay ours %s, baseline %s.\n", r.BothDetectedN,
		fmtDur(r.BothDetectedOurs), fmtDur(r.BothDetectedBaseline))
	r.writeReal(w)
	return nil
}

// settings is a compact rendering of a config, for the real-trace table.
func settings(c trend.Config) string {
	s := fmt.Sprintf("bucket %s, windows %s/%s, warm-up %s, %.3g MiB/min, fit %.2f", fmtDur(c.Bucket), fmtDur(c.ShortWindow),
		fmtDur(c.LongWindow), fmtDur(c.WarmUp), c.MinRate/trend.MiBPerMinute, c.MinFit)
	if c.MinDuration > 0 {
		s += ", for " + fmtDur(c.MinDuration)
	}
	return s
}

// writeReal prints the recorded traces, scored apart from the suite.
func (r Report) writeReal(w io.Writer) {
	if len(r.Real) == 0 {
		return
	}
	fmt.Fprintf(w, "\nRecorded traces (scored apart: not in the baseline sweep nor in the scores above)\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| trace\t pid\t truth\t settings\t ours\t verdict\t final\t baseline, same scale\t")
	fmt.Fprintln(tw, "|---\t---\t---\t---\t---\t---\t---\t---\t")
	var scaled []string
	for _, t := range r.Real {
		l := t.Label
		truth := "no leak"
		if l.Leak {
			truth = fmt.Sprintf("leak from %s", fmtDur(time.Duration(l.OnsetSeconds*float64(time.Second))))
			if l.RateMiBPerMin > 0 {
				truth += fmt.Sprintf(", ≈ %g MiB/min", l.RateMiBPerMin)
			}
		}
		pid := "any"
		if l.PID != 0 {
			pid = fmt.Sprint(l.PID)
		}
		if t.Skipped != "" {
			fmt.Fprintf(tw, "| %s\t %s\t %s\t %s\t skipped: %s\t \t \t \t\n", l.Name, pid, truth, settings(t.Config), t.Skipped)
			continue
		}
		base := "—"
		if t.BaselineSetting.Window > 0 {
			base = outcomeCell(l, t.Baseline)
			d := fmt.Sprintf("%s (every %s)", t.BaselineSetting, fmtDur(t.BaselineInterval))
			if !slices.Contains(scaled, d) {
				scaled = append(scaled, d)
			}
		}
		fmt.Fprintf(tw, "| %s\t %s\t %s\t %s\t %s\t %s\t %s\t %s\t\n", l.Name, pid, truth, settings(t.Config),
			outcomeCell(l, t.Ours), t.Ours.FirstVerdicts, t.Final, base)
	}
	tw.Flush()
	for _, d := range scaled {
		fmt.Fprintf(w, "\nBaseline, same scale: the best setting above with its window, for and evaluation interval shrunk like the short window: %s.\n", d)
	}
}
