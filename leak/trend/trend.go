// Package trend is the leak detector's arithmetic: it turns evenly spaced memory
// samples per (pid, GPU UUID) and per GPU into growth slopes, fit quality, a verdict
// (leak, cache growth, growth outside the allocator, steady, warming up) and a forecast
// of when a GPU runs out of memory.
//
// It is pure: no I/O, no clock, no goroutines. Time comes in with each sample, so the
// daemon, the replay command and the evaluation suite all drive the same code. An
// Engine is not safe for concurrent use; its one caller (the join loop, or replay)
// serialises calls.
//
// Method, in short (docs/leak-detection.md has the evidence): each series is reduced to
// the floor (minimum) of each bucket, so the request sawtooth vanishes; a least-squares
// line over a short and a long window of floors gives a slope and R²; a series is
// "growing" when the slope is at least MinRate with R² at least MinFit (a fast leak may
// show it sooner on the newest half of the short window), and a verdict needs growth
// sustained for MinDuration after the warm-up.
package trend

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/vram-exporter/vram_exporter/api"
)

// Config holds the detector's thresholds. DefaultConfig's values are the ones the
// evaluation suite justifies (docs/leak-detection.md).
type Config struct {
	// Bucket is the width of the buckets whose floor (minimum) is fitted.
	Bucket time.Duration
	// ShortWindow and LongWindow are the spans of the two least-squares fits. The long
	// window also bounds the memory kept per series (LongWindow/Bucket floors).
	ShortWindow time.Duration
	LongWindow  time.Duration
	// WarmUp is how long after a series first appears its verdict is warming_up: model
	// loading, first-shape kernels and the allocator cache all grow then, legitimately.
	WarmUp time.Duration
	// MinRate is the slope, in bytes per second, below which growth is ignored.
	MinRate float64
	// MinFit is the R² (0..1) a slope needs to count as growth rather than steps/noise.
	MinFit float64
	// MinDuration is how long growth must persist before a leak-type verdict.
	MinDuration time.Duration
	// MaxKeys bounds the (pid, uuid) histories held at once: a new key beyond it is not
	// tracked (TryObserve says so, Refused counts it) until Sweep makes room.
	MaxKeys int
}

// DefaultMaxKeys is MaxKeys' default. A history costs about 12 KB (README, "What it
// costs"), so the bound is some 25 MB at the worst; a node has a few hundred GPU
// processes at most (a few dozen per GPU under MPS).
const DefaultMaxKeys = 2048

// MiBPerMinute is one MiB per minute in bytes per second, the unit people think in.
const MiBPerMinute = api.MiBPerMinute

// DefaultConfig returns the defaults measured on the evaluation suite
// (docs/leak-detection.md): a 10-minute short window catches every leak ≥ 1 MiB/min
// within 10 minutes of onset (15 minutes took 11–13); MinFit 0.85 rather than 0.8 is
// what keeps a slowly creeping cache, seen through NVML alone, from passing as a leak;
// MinRate 0.5 MiB/min so that a 1 MiB/min leak clears it before the window is full of
// it; MinDuration 0 because R² already demands growth across most of the window, and
// every extra minute was a minute of delay with no false alarm removed.
func DefaultConfig() Config {
	return Config{
		Bucket:      30 * time.Second,
		ShortWindow: 10 * time.Minute,
		LongWindow:  2 * time.Hour,
		WarmUp:      10 * time.Minute,
		MinRate:     0.5 * MiBPerMinute,
		MinFit:      0.85,
		MinDuration: 0,
		MaxKeys:     DefaultMaxKeys,
	}
}

// maxBuckets bounds LongWindow/Bucket, and so the memory per series.
const maxBuckets = 100_000

// minPoints is how many floors a window needs before its slope means anything.
const minPoints = 5

// MinWindowBuckets is the fewest buckets Check accepts in a window, for help texts.
const MinWindowBuckets = minPoints

// The fast window: the newest fastFraction of the short window, fitted alongside it
// from its own running sums. A leak that rises fast draws a clean line long before the
// short window is full of it (a hockey stick in the short window only reaches MinFit
// once about two thirds of the window is line), so growth may also start on the fast
// window when its slope is at least fastRateFactor × MinRate, its fit carries the same
// evidence as MinFit does on the short window (fastFit), and the short window agrees at
// the hysteresis level (slope ≥ MinRate, R² ≥ MinFit − 0.2). Slow leaks and staircases
// still need the short or the long window. Measured (docs/leak-detection.md): the median
// detection delay drops from 6m30s to 5m15s with no false alarm, and fractions from 0.3
// to 0.6 of the short window, at rate factors 1 to 8, raise none either. Costs one more
// set of running sums per series. Variables only so that the sensitivity test can sweep
// them.
var (
	fastFraction   = 0.5
	fastRateFactor = 2.0
)

// usedOnlyMinHighs is how many new highs (floors above every older floor of the
// window) the used floor of a process that pushes no allocator stats needs, in the window
// whose fit qualified, before it may start growing. Such a series is NVML's used bytes:
// the allocator cache's high-water mark, which creeps up in rare steps as rarer, larger
// requests arrive long after the warm-up. Least squares cannot tell two steps from a
// line at MinFit 0.85: the best two-step staircase of 20 floors scores R² 0.889, three
// steps 0.94. Measured on 20 other seeds of the suite (docs/leak-detection.md): 3 halves
// the false alarms on used-only traces without slowing the used-only leak; 4 removes
// more but doubles the number of used-only leaks flagged later than 15 minutes.
var usedOnlyMinHighs int64 = 3

// fastFit is the R² the fast window needs to carry the same evidence as fit does on the
// short window: the same t statistic of the slope, t² = (n−2)·R²/(1−R²), from fewer
// points. With the defaults (20 and 10 floors) MinFit 0.85 becomes 0.927; without it, a
// fast window of 8 floors fitted the 64 MiB floor jitter of heavy_noise at R² 0.85.
func (e *Engine) fastFit(fit float64) float64 {
	nf := float64(fastBuckets(e.cfg))
	if fit >= 1 || nf <= 2 {
		return fit
	}
	ns := float64(e.cfg.ShortWindow / e.cfg.Bucket)
	q := fit / (1 - fit) * (ns - 2) / (nf - 2)
	return q / (1 + q)
}

// fastBuckets is the fast window's length in buckets, 0 when it would be too short to
// fit or no shorter than the short window.
func fastBuckets(cfg Config) int64 {
	short := int64(cfg.ShortWindow / cfg.Bucket)
	n := int64(float64(short) * fastFraction)
	if n < minPoints || n >= short {
		return 0
	}
	return n
}

// Check reports every setting of c the engine cannot run with, one call per problem.
// field is the Config field's name; problem says what is wrong and what to use without
// naming the field, so a caller that reads the settings from elsewhere (package config's
// YAML keys and flags) can name the key the user wrote. These are the only rules the
// engine's settings have: NewEngine, Validate and --config.check all apply them.
func (c Config) Check(report func(field, problem string)) {
	def := DefaultConfig()
	if c.Bucket <= 0 {
		report("Bucket", fmt.Sprintf("%s is out of range; use a positive duration like %q", fmtDuration(c.Bucket), fmtDuration(def.Bucket)))
	} else {
		// The engine keeps whole buckets, so a window between two multiples would be
		// cut short without a word; and one of fewer than minPoints floors never yields
		// a slope.
		window := func(field string, w time.Duration) bool {
			least := minPoints * c.Bucket
			switch lo := w / c.Bucket * c.Bucket; {
			case lo <= 0:
				report(field, fmt.Sprintf("%s is not a positive multiple of the bucket (%s); use a multiple like %s", fmtDuration(w), fmtDuration(c.Bucket), fmtDuration(least)))
			case lo != w:
				report(field, fmt.Sprintf("%s is not a multiple of the bucket (%s); use %s or %s", fmtDuration(w), fmtDuration(c.Bucket), fmtDuration(lo), fmtDuration(lo+c.Bucket)))
			case w < least:
				report(field, fmt.Sprintf("%s is shorter than %d buckets of %s; use at least %s", fmtDuration(w), minPoints, fmtDuration(c.Bucket), fmtDuration(least)))
			default:
				return true
			}
			return false
		}
		shortOK := window("ShortWindow", c.ShortWindow)
		longOK := window("LongWindow", c.LongWindow)
		switch {
		case shortOK && longOK && c.LongWindow <= c.ShortWindow:
			// An equal long window repeats the short fit and never adds evidence.
			report("LongWindow", fmt.Sprintf("%s is not longer than the short window (%s); make it longer than the short window", fmtDuration(c.LongWindow), fmtDuration(c.ShortWindow)))
		case longOK && c.LongWindow/c.Bucket > maxBuckets:
			report("LongWindow", fmt.Sprintf("%s holds more than %d buckets of %s, the most kept per series; use a wider bucket or a shorter window", fmtDuration(c.LongWindow), maxBuckets, fmtDuration(c.Bucket)))
		}
	}
	if c.WarmUp < 0 {
		report("WarmUp", fmt.Sprintf("%s is negative; use 0 to turn warm-up off, or a duration like %q", fmtDuration(c.WarmUp), fmtDuration(def.WarmUp)))
	}
	switch {
	case !(c.MinRate > 0):
		report("MinRate", fmt.Sprintf("%g bytes per second would call any growth a leak; use a positive rate, like %.0f (about the default, 0.5 MiB per minute)", c.MinRate, def.MinRate))
	case math.IsInf(c.MinRate, 0):
		report("MinRate", fmt.Sprintf("%g bytes per second would never call growth a leak; use a finite rate, like %.0f (about the default, 0.5 MiB per minute)", c.MinRate, def.MinRate))
	}
	if !(c.MinFit >= 0 && c.MinFit <= 1) {
		report("MinFit", fmt.Sprintf("%g is out of range; use 0 to 1", c.MinFit))
	}
	if c.MinDuration < 0 {
		report("MinDuration", fmt.Sprintf("%s is negative; use 0 (the default) or a duration like \"5m\"", fmtDuration(c.MinDuration)))
	}
	if c.MaxKeys < 1 {
		report("MaxKeys", fmt.Sprintf("%d is out of range; use at least 1, like %d", c.MaxKeys, DefaultMaxKeys))
	}
}

// Validate reports every problem Check finds, each prefixed with its field, or nil.
func (c Config) Validate() error {
	var errs []error
	c.Check(func(field, problem string) {
		errs = append(errs, fmt.Errorf("trend: %s: %s", field, problem))
	})
	return errors.Join(errs...)
}

// fmtDuration prints durations the way people write them ("2h", "1m30s"), not
// time.Duration's "2h0m0s", because Check's problems end up in front of users.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// Key identifies a process on a GPU. Start (the process start time in clock ticks, from
// /proc/PID/stat) tells a reused PID from the process that had it before; 0 if unknown.
type Key struct {
	PID   uint32
	Start uint64
	UUID  string
}

// Sample is one joined observation of a process on a GPU. Unattributed memory is derived
// as Used − Reserved when both are present; Reserved is the sum over top-level pools.
type Sample struct {
	Key                                Key
	T                                  time.Time
	Used, Allocated, Reserved          float64
	HasUsed, HasAllocated, HasReserved bool
}

// GPUSample is one observation of a whole GPU.
type GPUSample struct {
	UUID        string
	T           time.Time
	Used, Total float64
}

// Verdict is what the detector concludes about one (pid, uuid). The words are the wire
// contract's (package api), so the JSON API, /metrics and triage cannot drift from them.
type Verdict = api.Verdict

const (
	// Leak: the allocated floor rises steadily (or, for a process that pushes no
	// allocator stats, the used floor does).
	Leak = api.VerdictLeak
	// CacheGrowth: reserved rises while allocated is flat: the allocator's cache is
	// growing, normal while it plateaus.
	CacheGrowth = api.VerdictCacheGrowth
	// UnattributedGrowth: memory outside the allocator (used − reserved) rises while
	// allocated is flat: NCCL communicators, workspaces, raw allocations.
	UnattributedGrowth = api.VerdictUnattributedGrowth
	// Steady: nothing rises faster than MinRate with a good fit.
	Steady = api.VerdictSteady
	// WarmingUp: the process is younger than WarmUp; no judgement yet.
	WarmingUp = api.VerdictWarmingUp
)

// Verdicts lists every verdict in a stable order, for exporting one 1 and the rest 0.
func Verdicts() []Verdict { return api.Verdicts() }

// Series names, as exported in the series label.
const (
	SeriesAllocated    = api.SeriesAllocated
	SeriesReserved     = api.SeriesReserved
	SeriesUsed         = api.SeriesUsed
	SeriesUnattributed = api.SeriesUnattributed
)

// Window names, as exported in the window label.
const (
	WindowShort = api.WindowShort
	WindowLong  = api.WindowLong
)

// Growth is the fitted slope of one series over one window.
type Growth struct {
	Series         string
	Window         string
	BytesPerSecond float64
	Fit            float64 // R², 0..1
	// Valid is false until the window holds enough floors for a slope to mean anything.
	Valid bool
}

// Result is the current state of one (pid, uuid). Growth is shared and must not be
// modified; the engine replaces it rather than writing into it.
type Result struct {
	Verdict Verdict
	Since   time.Time // when this verdict began
	Growth  []Growth
	Reason  string // one short sentence: why this verdict
}

// GPUResult is the current state of one GPU. ExhaustionValid is false (and the
// exhaustion metric absent) until the GPU has been observed for WarmUp, and then unless
// its used floor is growing by the rules a process's series follows (slope ≥ MinRate
// with R² ≥ MinFit on the short, fast or long window, kept with hysteresis): a forecast
// from a warm-up step, a flat or a noisy series would be a random number.
type GPUResult struct {
	Growth            []Growth // series "used"
	ExhaustionSeconds float64
	ExhaustionValid   bool
}

// column indices of a process history
const (
	colAllocated = iota
	colReserved
	colUsed
	colUnattributed
	numCols
)

var colNames = [numCols]string{SeriesAllocated, SeriesReserved, SeriesUsed, SeriesUnattributed}

type procKey struct {
	pid  uint32
	uuid string
}

// growth state of one column: hysteresis so that a step-like leak whose fit wobbles
// around MinFit is not re-armed (and its MinDuration restarted) on every wobble.
type growState struct {
	growing bool
	since   time.Time
	slope   float64 // bytes/s, of the window that qualified
	fit     float64
	span    int64 // buckets of the window that qualified
}

type process struct {
	start       uint64
	first, last time.Time
	h           *history
	grow        [numCols]growState
	res         Result
}

type gpu struct {
	first, last time.Time
	h           *history
	used, total float64
	growth      []Growth
	grow        growState
}

// Engine holds the histories of every (pid, uuid) and every GPU.
type Engine struct {
	cfg   Config
	procs map[procKey]*process
	gpus  map[string]*gpu
	vals  [numCols]float64 // scratch, so Observe does not allocate
	// refused counts samples of new keys not tracked because MaxKeys were held.
	refused uint64
}

// NewEngine validates cfg and returns an empty engine.
func NewEngine(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg, procs: map[procKey]*process{}, gpus: map[string]*gpu{}}, nil
}

// Config returns the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// Observe folds one sample in and returns the (pid, uuid)'s current result. Verdicts
// change only when a bucket closes, so most calls only update a minimum. A sample of a
// new key while MaxKeys are held gets a zero Result; TryObserve tells it apart.
func (e *Engine) Observe(s Sample) Result {
	r, _ := e.TryObserve(s)
	return r
}

// Refused is how many samples of new keys were not tracked because MaxKeys histories
// were held, since the engine was made.
func (e *Engine) Refused() uint64 { return e.refused }

// TryObserve is Observe that reports false, and keeps nothing, for a sample of a new
// key while MaxKeys are held.
func (e *Engine) TryObserve(s Sample) (Result, bool) {
	k := procKey{s.Key.PID, s.Key.UUID}
	p := e.procs[k]
	if p == nil && len(e.procs) >= e.cfg.MaxKeys {
		e.refused++
		return Result{}, false
	}
	if p != nil && s.Key.Start != 0 && p.start != 0 && p.start != s.Key.Start {
		// A reused PID is a different process: its history would fake a jump. A start of
		// 0 is "unknown" (procfs could not be read, e.g. while the process exits), never a
		// new process.
		p.h.reset()
		*p = process{h: p.h}
	}
	if p != nil && p.start == 0 {
		p.start = s.Key.Start
	}
	if p == nil {
		p = &process{h: newHistory(e.cfg, numCols)}
		e.procs[k] = p
	}
	if p.first.IsZero() {
		p.start, p.first = s.Key.Start, s.T
		p.res = Result{Verdict: WarmingUp, Since: s.T, Reason: e.warmUpReason(0)}
	}
	if s.T.After(p.last) {
		p.last = s.T
	}
	nan := math.NaN()
	v := &e.vals
	v[colAllocated], v[colReserved], v[colUsed], v[colUnattributed] = nan, nan, nan, nan
	if s.HasAllocated {
		v[colAllocated] = s.Allocated
	}
	if s.HasReserved {
		v[colReserved] = s.Reserved
	}
	if s.HasUsed {
		v[colUsed] = s.Used
	}
	if s.HasUsed && s.HasReserved {
		v[colUnattributed] = s.Used - s.Reserved
	}
	if b, closed := p.h.add(s.T, v[:]); closed {
		e.judge(p, p.h.bucketEnd(b))
	}
	return p.res, true
}

// Result returns the current result of a (pid, uuid). A Key.Start of 0 matches any
// process on that PID.
func (e *Engine) Result(k Key) (Result, bool) {
	p := e.procs[procKey{k.PID, k.UUID}]
	if p == nil || (k.Start != 0 && k.Start != p.start) {
		return Result{}, false
	}
	return p.res, true
}

// ObserveGPU folds one GPU sample in and returns the GPU's current result.
func (e *Engine) ObserveGPU(s GPUSample) GPUResult {
	g := e.gpus[s.UUID]
	if g == nil {
		g = &gpu{first: s.T, h: newHistory(e.cfg, 1)}
		e.gpus[s.UUID] = g
	}
	if s.T.After(g.last) {
		g.last = s.T
	}
	g.used, g.total = s.Used, s.Total
	e.vals[0] = s.Used
	if b, closed := g.h.add(s.T, e.vals[:1]); closed {
		e.judgeGPU(g, g.h.bucketEnd(b))
	}
	return e.gpuResult(g)
}

// GPU returns the current result of a GPU.
func (e *Engine) GPU(uuid string) (GPUResult, bool) {
	g := e.gpus[uuid]
	if g == nil {
		return GPUResult{}, false
	}
	return e.gpuResult(g), true
}

// judgeGPU recomputes a GPU's growth at the close of a bucket. The used series is
// tracked like a process's (the same windows, thresholds and hysteresis), after the
// same warm-up: a GPU whose servers are filling their caches grows in steps for the
// first minutes, and a forecast from those steps would page on every deployment.
func (e *Engine) judgeGPU(g *gpu, now time.Time) {
	short, long := e.growth(g.h, 0, SeriesUsed, WindowShort), e.growth(g.h, 0, SeriesUsed, WindowLong)
	g.growth = []Growth{short, long}
	if now.Sub(g.first) < e.cfg.WarmUp {
		g.grow = growState{}
		return
	}
	var fast Growth
	if g.h.fast != nil {
		fast = e.fit(g.h, &g.h.fast[0])
	}
	e.track(&g.grow, g.h.short[0].n >= minPoints, short, fast, long, g.h.longSpan(0), now)
}

// gpuResult forecasts exhaustion while the GPU's used floor is growing (after the
// warm-up, by the process rules: see judgeGPU), at the slope of the window that
// qualified (short, fast or long).
func (e *Engine) gpuResult(g *gpu) GPUResult {
	r := GPUResult{Growth: g.growth}
	if gr := &g.grow; gr.growing && gr.slope > 0 && g.total > 0 {
		r.ExhaustionSeconds = math.Max(g.total-g.used, 0) / gr.slope
		r.ExhaustionValid = true
	}
	return r
}

// Sweep forgets every process and GPU not observed for idle before now: the process is
// gone, and its memory must not grow without bound.
func (e *Engine) Sweep(now time.Time, idle time.Duration) {
	cut := now.Add(-idle)
	for k, p := range e.procs {
		if p.last.Before(cut) {
			delete(e.procs, k)
		}
	}
	for k, g := range e.gpus {
		if g.last.Before(cut) {
			delete(e.gpus, k)
		}
	}
}

// Len reports how many (pid, uuid) and GPU histories the engine holds.
func (e *Engine) Len() (processes, gpus int) { return len(e.procs), len(e.gpus) }

func (e *Engine) growth(h *history, c int, series, window string) Growth {
	w := &h.short[c]
	if window == WindowLong {
		w = &h.long[c]
	}
	g := e.fit(h, w)
	g.Series, g.Window = series, window
	return g
}

// fit is the slope in bytes per second and the R² of one window's sums.
func (e *Engine) fit(h *history, w *lsq) Growth {
	slope, fit := w.fit()
	return Growth{BytesPerSecond: slope / h.bucket.Seconds(), Fit: fit, Valid: w.n >= minPoints}
}

// judge recomputes a process's growth and verdict at the close of a bucket.
func (e *Engine) judge(p *process, now time.Time) {
	cfg := &e.cfg
	var present [numCols]bool
	growth := make([]Growth, 0, 2*numCols)
	var short, long, fast [numCols]Growth
	for c := range numCols {
		present[c] = p.h.short[c].n >= minPoints
		if p.h.long[c].n == 0 {
			continue
		}
		short[c] = e.growth(p.h, c, colNames[c], WindowShort)
		long[c] = e.growth(p.h, c, colNames[c], WindowLong)
		if p.h.fast != nil {
			fast[c] = e.fit(p.h, &p.h.fast[c])
		}
		growth = append(growth, short[c], long[c])
	}

	age := now.Sub(p.first)
	if age < cfg.WarmUp {
		// Growth is not tracked during warm-up: the warm-up's own steps would otherwise
		// arm the growth state and carry it past the end of the warm-up.
		p.grow = [numCols]growState{}
		e.setVerdict(p, now, WarmingUp, e.warmUpReason(age), growth)
		return
	}

	for c := range numCols {
		wasGrowing := p.grow[c].growing
		e.track(&p.grow[c], present[c], short[c], fast[c], long[c], p.h.longSpan(c), now)
		if c == colUsed && !present[colAllocated] && !wasGrowing && p.grow[c].growing &&
			p.h.highs(c, p.grow[c].span) < usedOnlyMinHighs {
			// NVML's view of a process without allocator stats: the caching allocator's
			// high-water mark steps up now and then as rarer, larger requests arrive, and
			// two steps in a window reach R² 0.889. Growth must be made of at least
			// usedOnlyMinHighs new highs of the window that qualified.
			p.grow[c] = growState{}
		}
	}
	sustained := func(c int) bool {
		g := &p.grow[c]
		return present[c] && g.growing && now.Sub(g.since) >= cfg.MinDuration
	}
	allocFlat := !p.grow[colAllocated].growing

	var v Verdict
	var reason string
	switch {
	case present[colAllocated] && sustained(colAllocated):
		v, reason = Leak, growthReason("allocated floor", p.grow[colAllocated], now)
	case !present[colAllocated] && sustained(colUsed):
		v, reason = Leak, growthReason("used floor", p.grow[colUsed], now)+"; the process pushes no allocator stats, so this is NVML's view"
	case allocFlat && sustained(colUnattributed):
		v, reason = UnattributedGrowth, growthReason("memory outside the allocator (used − reserved)", p.grow[colUnattributed], now)+" while allocated is flat"
	case allocFlat && sustained(colReserved):
		v, reason = CacheGrowth, growthReason("reserved", p.grow[colReserved], now)+" while allocated is flat: the allocator cache is growing, normal if it plateaus"
	default:
		v, reason = Steady, fmt.Sprintf("no floor rising faster than %.2g MiB/min with fit ≥ %.2g",
			cfg.MinRate/MiBPerMinute, cfg.MinFit)
		if cfg.MinDuration > 0 {
			reason += " for " + cfg.MinDuration.String()
		}
	}
	e.setVerdict(p, now, v, reason, growth)
}

// track updates one column's growth state. A series starts growing when either window
// shows slope ≥ MinRate with R² ≥ MinFit (the long window only once it spans two short
// windows, so it adds evidence rather than repeating the short one), or the fast window
// shows slope ≥ fastRateFactor × MinRate with R² ≥ fastFit(MinFit) while the short window
// agrees at the relaxed level; it keeps growing while the slopes stay above half of that
// and R² above MinFit − 0.2 (fastFit of that on the fast window).
func (e *Engine) track(g *growState, present bool, short, fast, long Growth, longSpan time.Duration, now time.Time) {
	cfg := &e.cfg
	qual := func(gr Growth, rate, fit float64) bool {
		return gr.Valid && gr.BytesPerSecond >= rate && gr.Fit >= fit
	}
	longOK := longSpan >= 2*cfg.ShortWindow
	if !present {
		*g = growState{}
		return
	}
	rate, fit := cfg.MinRate, cfg.MinFit
	if g.growing {
		rate, fit = cfg.MinRate/2, cfg.MinFit-0.2
	}
	var best Growth
	span := int64(cfg.ShortWindow / cfg.Bucket)
	switch {
	case qual(short, rate, fit):
		best = short
	case qual(fast, fastRateFactor*rate, e.fastFit(fit)) && (g.growing || qual(short, rate, fit-0.2)):
		// The short window must agree at the level that keeps a growing series growing:
		// five minutes of floors can line up by chance in heavy noise (measured on other
		// seeds of heavy_noise, at R² 0.94–0.97), the ten minutes around them do not.
		best, span = fast, fastBuckets(*cfg)
	case longOK && qual(long, rate, fit):
		best, span = long, int64(longSpan/cfg.Bucket)+1
	default:
		*g = growState{}
		return
	}
	if !g.growing {
		g.growing, g.since = true, now
	}
	g.slope, g.fit, g.span = best.BytesPerSecond, best.Fit, span
}

func growthReason(what string, g growState, now time.Time) string {
	r := fmt.Sprintf("%s rising %.3g MiB/min (fit %.2f)", what, g.slope/MiBPerMinute, g.fit)
	if d := now.Sub(g.since).Round(time.Second); d > 0 {
		return r + " for " + d.String()
	}
	return r + ", just detected"
}

func (e *Engine) warmUpReason(age time.Duration) string {
	return fmt.Sprintf("first seen %s ago; verdicts start after the %s warm-up", age.Round(time.Second), e.cfg.WarmUp)
}

func (e *Engine) setVerdict(p *process, now time.Time, v Verdict, reason string, growth []Growth) {
	since := p.res.Since
	if v != p.res.Verdict {
		since = now
	}
	p.res = Result{Verdict: v, Since: since, Growth: growth, Reason: reason}
}
