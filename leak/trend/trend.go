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
// the floor (minimum) of each bucket, so the request sawtooth vanishes. A process is
// warming up until its floors have stopped rising for a short window (or MaxWarmUp).
// Growth is a robust line (Siegel's repeated median, then least squares on its
// inliers) through the floors' lower envelope: the envelope is as wide as the longest
// rise the series has shown it gives back (a garbage collector's cycle, a burst), so a
// bounded sawtooth is judged on its troughs. A series grows when that line rises at
// MinRate or more with R² of MinFit and at least three new highs; or when its floor has
// risen in each of the last three buckets at FastRate or more over a quiet floor (where
// the client counts its requests, its floor at moments with none in flight, in each of
// the last three buckets that had one: load does not lift those); or,
// for very slow leaks, when the long window's envelope rises at SlowRate or more
// without slowing down; or, under a collector's sawtooth, when two collections in a row
// came back higher than the one before (its troughs: the memory that stays). Except near a full GPU, a rise that goes ever slower (a cache
// filling to its budget) is not growth; nor is a rise of a process whose samples no
// longer come back to its floor as they did while it had idle moments (a server never
// idle any more: its floor is the least load in flight), nor, for the line, slow and
// trough rules, a rise of floors that also stepped down sharply (a cache at capacity
// swapping items: a bounded random walk). Growth ends as soon as the
// judged window no longer shows it, and the long window's line does not take up again
// a rise whose floors have stopped (they hold still longer than they ever paused).
package trend

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/vram-exporter/vram_exporter/api"
	"github.com/vram-exporter/vram_exporter/internal/durfmt"
)

// Config holds the detector's thresholds. DefaultConfig's values are the ones the
// evaluation suite justifies (docs/leak-detection.md).
type Config struct {
	// Bucket is the width of the buckets whose floor (minimum) is fitted.
	Bucket time.Duration
	// ShortWindow and LongWindow are the spans of the two fits. The long window also
	// bounds the memory kept per series (LongWindow/Bucket floors).
	ShortWindow time.Duration
	LongWindow  time.Duration
	// WarmUp is the least time after a series first appears during which its verdict is
	// warming_up: model loading, first-shape kernels and the allocator cache all grow
	// then, legitimately. The warm-up then lasts until the floors have been flat for a
	// short window, at most MaxWarmUp.
	WarmUp time.Duration
	// MaxWarmUp bounds the warm-up: a process still filling after it is judged like any
	// other. (A smooth, steady rise ends the warm-up earlier: see docs/leak-detection.md.)
	// 0 means six warm-ups; it is never less than WarmUp.
	MaxWarmUp time.Duration
	// MinRate is the slope, in bytes per second, below which growth is ignored by the
	// short window.
	MinRate float64
	// FastRate is the rise per second, in each of three consecutive buckets over a quiet
	// floor, that is growth on its own (the fast rule: a steep leak flagged within two
	// minutes).
	FastRate float64
	// SlowRate is the slope the long window's envelope needs for a very slow leak, below
	// MinRate.
	SlowRate float64
	// MinFit is the R² (0..1) a slope needs to count as growth rather than steps/noise.
	MinFit float64
	// MinDuration is how long growth must persist before a leak-type verdict.
	MinDuration time.Duration
	// MaxKeys bounds the (pid, uuid) histories held at once: a new key beyond it is not
	// tracked (TryObserve says so, Refused counts it) until Sweep makes room.
	MaxKeys int
}

// DefaultMaxKeys is MaxKeys' default. A history costs about 16 KB, 18 KB where the client
// counts its requests in flight (README, "What it costs"), so the bound is some 36 MB at
// the worst; a node has a few hundred GPU processes at most (a few dozen per GPU under
// MPS).
const DefaultMaxKeys = 2048

// MiBPerMinute is one MiB per minute in bytes per second, the unit people think in.
const MiBPerMinute = api.MiBPerMinute

// DefaultConfig returns the defaults measured on the evaluation suite
// (docs/leak-detection.md): a 10-minute short window catches every leak ≥ 1 MiB/min
// within 10 minutes of onset; MinFit 0.85 keeps a staircase of two steps from passing as
// a line; MinRate 0.5 MiB/min so that a 1 MiB/min leak clears it before the window is
// full of it; MaxWarmUp 1 h because caches that fill in steps were seen to do so for up
// to half an hour after start (MaxWarmUp 0: six warm-ups); FastRate 50 MiB/min, half the 100 MiB/min that must be
// flagged within two minutes, so that bucket phase and noise do not push such a leak
// under it; SlowRate 0.2 MiB/min so that a 0.3 MiB/min leak (430 MiB a day) clears it
// within the long window; MinDuration 0 because the fits already demand growth across
// most of the window.
func DefaultConfig() Config {
	return Config{
		Bucket:      30 * time.Second,
		ShortWindow: 10 * time.Minute,
		LongWindow:  2 * time.Hour,
		WarmUp:      10 * time.Minute,
		MaxWarmUp:   0, // six warm-ups: 1 h
		MinRate:     0.5 * MiBPerMinute,
		FastRate:    50 * MiBPerMinute,
		SlowRate:    0.2 * MiBPerMinute,
		MinFit:      0.85,
		MinDuration: 0,
		MaxKeys:     DefaultMaxKeys,
	}
}

// maxBuckets bounds LongWindow/Bucket, and so the memory per series.
const maxBuckets = 100_000

// minPoints is how many floors a window needs before its slope means anything.
const minPoints = 5

// minHighs is how many new highs (rises above the last high by twice the noise) the
// judged window needs before its line counts: the best two-step staircase fits a line
// at R² 0.889, above MinFit, while three steps in a short window are a staircase that
// keeps going.
const minHighs = 3

// MinWindowBuckets is the fewest buckets Check accepts in a window, for help texts.
const MinWindowBuckets = minPoints

// maxWarmUp is the warm-up's bound in force: MaxWarmUp, or six warm-ups when it is 0,
// never less than WarmUp.
func (c Config) maxWarmUp() time.Duration {
	m := c.MaxWarmUp
	if m == 0 {
		m = warmUpsInMax * c.WarmUp
	}
	return max(m, c.WarmUp)
}

// smoothFrom is the age from which a smooth, steady rise may end the warm-up (a leak
// from the first request): a whole short window after WarmUp (20 min at the defaults),
// so that the window that judges it holds none of the warm-up's own growth, and a
// first ramp of a Python gen-2 collector that has not collected yet is not taken for a
// leak unless it outlasts that window too. Half a window after WarmUp (rounds 3 to 14)
// paged on the first ramp of a collector whose first cycle outlasts 15 minutes: 68 of
// 100 cycles of 14–25 minutes (38 fired the rule), 42 of 100 of 3–25 minutes
// (vram_eval -stress, x_gc_sawtooth_long and _wide; 27 and 14 with this), for a leak
// from the start flagged 5 minutes sooner (leak_from_start_12mib 15 → 20 min; a steep
// one near a full GPU ends the warm-up at once, see judge). At the settings scaled down
// for short traces (1 min, 2 min) it is 3 minutes: a fresh CUDA context has loaded its
// modules by then (520 → 680 MiB outside the allocator over two to three minutes on an
// H200).
func (c Config) smoothFrom() time.Duration {
	return c.WarmUp + c.ShortWindow
}

// warmUpsInMax is how many warm-ups the warm-up may last by default (MaxWarmUp 0): an
// hour at the defaults, which covers caches seen filling in steps for half an hour after
// start, and scaled with WarmUp so that settings scaled down for a short trace scale the
// bound too.
const warmUpsInMax = 6

// Check reports every setting of c the engine cannot run with, one call per problem.
// field is the Config field's name; problem says what is wrong and what to use without
// naming the field, so a caller that reads the settings from elsewhere (package config's
// YAML keys and flags) can name the key the user wrote. These are the only rules the
// engine's settings have: NewEngine, Validate and --config.check all apply them.
func (c Config) Check(report func(field, problem string)) {
	def := DefaultConfig()
	if c.Bucket <= 0 {
		report("Bucket", fmt.Sprintf("%s is out of range; use a positive duration like %q", durfmt.Format(c.Bucket), durfmt.Format(def.Bucket)))
	} else {
		// The engine keeps whole buckets, so a window between two multiples would be
		// cut short without a word; and one of fewer than minPoints floors never yields
		// a slope.
		window := func(field string, w time.Duration) bool {
			least := minPoints * c.Bucket
			switch lo := w / c.Bucket * c.Bucket; {
			case lo <= 0:
				report(field, fmt.Sprintf("%s is not a positive multiple of the bucket (%s); use a multiple like %s", durfmt.Format(w), durfmt.Format(c.Bucket), durfmt.Format(least)))
			case lo != w:
				report(field, fmt.Sprintf("%s is not a multiple of the bucket (%s); use %s or %s", durfmt.Format(w), durfmt.Format(c.Bucket), durfmt.Format(lo), durfmt.Format(lo+c.Bucket)))
			case w < least:
				report(field, fmt.Sprintf("%s is shorter than %d buckets of %s; use at least %s", durfmt.Format(w), minPoints, durfmt.Format(c.Bucket), durfmt.Format(least)))
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
			report("LongWindow", fmt.Sprintf("%s is not longer than the short window (%s); make it longer than the short window", durfmt.Format(c.LongWindow), durfmt.Format(c.ShortWindow)))
		case longOK && c.LongWindow/c.Bucket > maxBuckets:
			report("LongWindow", fmt.Sprintf("%s holds more than %d buckets of %s, the most kept per series; use a wider bucket or a shorter window", durfmt.Format(c.LongWindow), maxBuckets, durfmt.Format(c.Bucket)))
		}
	}
	if c.WarmUp < 0 {
		report("WarmUp", fmt.Sprintf("%s is negative; use 0 to turn warm-up off, or a duration like %q", durfmt.Format(c.WarmUp), durfmt.Format(def.WarmUp)))
	}
	if c.MaxWarmUp < 0 {
		report("MaxWarmUp", fmt.Sprintf("%s is negative; use 0 (the default: six warm-ups) or a duration like \"1h\"", durfmt.Format(c.MaxWarmUp)))
	}
	switch {
	case !(c.MinRate > 0):
		report("MinRate", fmt.Sprintf("%g bytes per second would call any growth a leak; use a positive rate, like %.0f (about the default, 0.5 MiB per minute)", c.MinRate, def.MinRate))
	case math.IsInf(c.MinRate, 0):
		report("MinRate", fmt.Sprintf("%g bytes per second would never call growth a leak; use a finite rate, like %.0f (about the default, 0.5 MiB per minute)", c.MinRate, def.MinRate))
	}
	if !(c.FastRate > 0) || math.IsInf(c.FastRate, 0) || (c.MinRate > 0 && c.FastRate < c.MinRate) {
		report("FastRate", fmt.Sprintf("%g bytes per second is out of range; use a finite rate no lower than the minimum rate, like %.0f (the default, 50 MiB per minute)", c.FastRate, def.FastRate))
	}
	if !(c.SlowRate > 0) || (c.MinRate > 0 && c.SlowRate > c.MinRate) {
		report("SlowRate", fmt.Sprintf("%g bytes per second is out of range; use a positive rate no higher than the minimum rate, like %.0f (the default, 0.2 MiB per minute)", c.SlowRate, def.SlowRate))
	}
	if !(c.MinFit >= 0 && c.MinFit <= 1) {
		report("MinFit", fmt.Sprintf("%g is out of range; use 0 to 1", c.MinFit))
	}
	if c.MinDuration < 0 {
		report("MinDuration", fmt.Sprintf("%s is negative; use 0 (the default) or a duration like \"5m\"", durfmt.Format(c.MinDuration)))
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
	// Repeat says Allocated and Reserved are those of a push already observed: the
	// daemon samples at every poll, the client pushes on its own clock. They count for
	// the floors, not as one more sample of the process at rest (see idle in analyze).
	Repeat bool
	// InFlight is how many requests the process had in flight when it read the pushed
	// allocator stats, if HasInFlight (the client's requests_in_flight, an opt-in). A
	// process with none in flight is at rest: its allocated bytes are then the floor a
	// leak grows, while with requests in flight they are the least load in flight, which
	// climbs with traffic (see history.add). Without it the idle moments are inferred.
	InFlight    uint32
	HasInFlight bool
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

// GPUResult is the current state of one GPU. The exhaustion forecast comes from what
// grows: while a process on the GPU has a leak or unattributed_growth verdict,
// ExhaustionSeconds is the memory left to it (the GPU's free bytes plus what the
// processes' allocator caches hold and can give back) over the sum of the growing
// processes' slopes. Otherwise ExhaustionValid is false and the exhaustion metric
// absent: a forecast from a warm-up step, a flushed cache or a sawtooth would be a
// random number. A GPU on which no process was ever seen is forecast from its own used
// floor, judged like a process that pushes nothing.
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

// rule says which rule started a column's growth; each keeps it differently.
type rule uint8

const (
	ruleNone rule = iota
	ruleShort
	ruleFast
	ruleSlow
	ruleTrough
)

// growState is one column's growth: which rule started it, when, and at what slope.
type growState struct {
	rule   rule
	since  time.Time
	slope  float64 // bytes/s
	fit    float64
	line   bool // it started as a line (most buckets rising), not a staircase
	early  bool // it started on the newest half of the short window (see track)
	roomy  bool // the fast rule started it on a rise clear of load, not on urgency
	steep  bool // it started at FastRate or faster (see youngHold)
	floors bool // the fast rule's, started on the floors' own line past a sawtooth (see analyze's steepSaw)
	rest   bool // it started on what the client said of its moments at rest (restFit; the fast rule's clearRest)
	// restRun: the fast rule's, started on the floors at rest alone (see analyze's restRun)
	restRun bool
	exact   bool // rest, but on the floors inferred at rest from their exactness (exactFit): the client does not count its requests
	// held is, while nothing grows, the pace (bytes per second) of a rise the short rule
	// would have started growth on but for the idle moments its process lost, or (saw)
	// for being the next ramp of the series' sawtooth; 0 if none.
	held float64
	saw  bool
	// long: held is the slow rule's rise over the long window (see track's slowRise),
	// not the short rule's.
	long bool
	// noisy: held for floors that jump with the load (analyze's noisy, or noisyLong
	// where long), not for idle moments counted lost.
	noisy bool
	// floor: where the floor stood when the fast rule started growth on a roomy GPU.
	floor float64
	// paged: it would have paged at an earlier close (see track); slowed: the test of
	// slowing held at the close before.
	paged, slowed bool
}

// smoothNoise bounds how much more the newest bucket-to-bucket changes may scatter
// than the floors' usual noise for a rise to start on half a window: a leak's floor
// rises by about the same step each bucket, a floor that jumps is something else.
const smoothNoise = 5

// earlyPersist is how many buckets a rise that qualified on the newest half of the
// short window must keep qualifying before it pages (see judge).
const earlyPersist = 2

// probation is how many short windows after the warm-up a staircase must also persist
// for a short window before it pages, and a steep rise for youngHold (see judge).
const probation = 2

// youngHold is how many short windows a steep rise (FastRate or faster) that starts within
// probation short windows of a flat warm-up's end must go on before it pages, unless
// the GPU is about to run out: half of one. A young process's caches fill as traffic
// first arrives (prefixes, compiled shapes, tensors kept for reuse), fast at first and
// ever slower, and its first long generations grow their caches as steeply as a leak;
// a few minutes more let the test of slowing see a fill slow down (see slowing) and a
// generation end. Measured on seeds 1–100 (docs/leak-detection.md, round 7):
// cache_fill_smooth 15 → 2 pages, long_generation 11 → 6, no leak class of the default
// settings slower (their onsets are later), cuda_context_short_leak (scaled settings,
// leaks from minute 3–8) 1m22s → 1m49s median; holding every rise, not only steep
// ones, put leaks of 1–50 MiB/min that start soon after the warm-up at 8m46s median
// instead of 4m56s (vram_eval -stress, x_leak_early). The half-window start is slower
// than FastRate by its own test, so only the short and the roomy fast rules' are steep.
const youngHold = 0.5

// confirmRoomy is how many buckets the fast rule's run clear of load on a GPU with room
// (no counts from the client) must be kept before it pages: one. Without the client's
// counts nothing tells a process's first generation longer than the run (its key-value
// cache grows as steeply and as rigidly as a leak, and nothing given back before it
// shows its pace) from a leak's onset, until it ends; where the GPU has room a page can
// wait a bucket, and one the next bucket takes back was never worth showing. Measured on
// 100 seeds (docs/leak-detection.md, round 19): long_generation 6 → 0 one-bucket
// verdicts, x_saturated_long 1 → 0; fast_leak 3m45s → 4m15s median; fast leaks that
// stop after 3–4 minutes 5 more missed (x_fast_leak_stops 2 → 7 of 100). Not on the
// urgent rule (the GPU within two short windows of full: 30 s more put 81 more
// fast_leak_near_full over the 2 minutes and cut the forecast's least lead from
// 1m16s to 46 s on x_fast_leak_steep_near_full), nor where the client's counts cleared
// the rise (they see the requests a generation is).
const confirmRoomy = 1

func (g growState) growing() bool { return g.rule != ruleNone }

type process struct {
	start       uint64
	first, last time.Time
	h           *history
	grow        [numCols]growState
	settled     bool  // the warm-up is over
	settledAt   int64 // the bucket it ended in: the long-window rules start there
	settledFlat bool  // it ended because the floors went flat (probation applies)
	// counted: the first sample that carried the client's count of requests in flight
	// (zero until one does). The Python client counts from its first request(), so
	// counts that begin after the warm-up are traffic that began then, which makes the
	// process young again (see judge).
	counted time.Time
	res     Result
}

type gpu struct {
	uuid        string
	first, last time.Time
	h           *history
	used, total float64
	growth      []Growth
	// Without processes (none ever seen on this GPU), the GPU's own used floor is judged
	// like a process that pushes nothing.
	procsSeen bool
	settled   bool
	settledAt int64
	left      float64 // memory left for what grows, at the last close (see Engine.left)
	leftOK    bool
	grow      growState
	res       GPUResult
}

// Engine holds the histories of every (pid, uuid) and every GPU.
type Engine struct {
	cfg   Config
	procs map[procKey]*process
	gpus  map[string]*gpu
	vals  [numCols]float64 // scratch, so Observe does not allocate
	sc    analysisScratch
	// refused counts samples of new keys not tracked because MaxKeys were held.
	refused  uint64
	signCrit []int // signCritical(n) for the windows' sizes
}

// analysisScratch holds the buffers of analyze and its fits.
type analysisScratch struct {
	scratch
	x, p, f, d, env, bx, by, jx, jy, held []float64
	dq                                    []int
	dq2, pc                               []int
	tr                                    []int
}

// NewEngine validates cfg and returns an empty engine.
func NewEngine(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, procs: map[procKey]*process{}, gpus: map[string]*gpu{}}
	e.signCrit = make([]int, cfg.LongWindow/cfg.Bucket+1)
	for n := range e.signCrit {
		e.signCrit[n] = signCritical(n)
	}
	return e, nil
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
		p = &process{h: newHistory(e.cfg, numCols, colAllocated)}
		e.procs[k] = p
		if g := e.gpus[s.Key.UUID]; g != nil {
			g.procsSeen = true
		}
	}
	if p.first.IsZero() {
		p.start, p.first = s.Key.Start, s.T
		p.res = Result{Verdict: WarmingUp, Since: s.T, Reason: e.warmUpReason(0, false)}
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
	load := loadUnknown
	if s.HasInFlight && s.HasAllocated {
		load = loadBusy
		if s.InFlight == 0 {
			load = loadIdle
		}
	}
	if load != loadUnknown && p.counted.IsZero() {
		p.counted = s.T
	}
	if b, closed := p.h.add(s.T, v[:], !s.Repeat, load); closed {
		e.judge(p, s.Key.UUID, p.h.bucketEnd(b))
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
		g = &gpu{uuid: s.UUID, first: s.T, h: newHistory(e.cfg, 1, -1)}
		for k := range e.procs {
			if k.uuid == s.UUID {
				g.procsSeen = true
				break
			}
		}
		e.gpus[s.UUID] = g
	}
	if s.T.After(g.last) {
		g.last = s.T
	}
	g.used, g.total = s.Used, s.Total
	e.vals[0] = s.Used
	if b, closed := g.h.add(s.T, e.vals[:1], false, loadUnknown); closed {
		e.judgeGPU(g, g.h.bucketEnd(b))
	}
	return g.res
}

// GPU returns the current result of a GPU.
func (e *Engine) GPU(uuid string) (GPUResult, bool) {
	g := e.gpus[uuid]
	if g == nil {
		return GPUResult{}, false
	}
	return g.res, true
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

// Forget drops the history of k at once, for a series whose source is gone for good
// (Sweep would keep it for its idle time).
func (e *Engine) Forget(k Key) { delete(e.procs, procKey{k.PID, k.UUID}) }

// Len reports how many (pid, uuid) and GPU histories the engine holds.
func (e *Engine) Len() (processes, gpus int) { return len(e.procs), len(e.gpus) }

// exported turns a robust fit into the exported slope (bytes per second) and fit.
func (e *Engine) exported(f fitResult, series, window string) Growth {
	return Growth{Series: series, Window: window, BytesPerSecond: f.slope / e.cfg.Bucket.Seconds(), Fit: f.r2, Valid: f.ok}
}

// judge recomputes a process's growth and verdict at the close of a bucket.
func (e *Engine) judge(p *process, uuid string, now time.Time) {
	cfg := &e.cfg
	var views [numCols]view
	growth := make([]Growth, 0, 2*numCols)
	var shortAt [numCols]int // each column's short-window entry in growth, or -1
	since := int64(math.MaxInt64)
	if p.settled {
		since = p.settledAt
		// The long-window rules start where the warm-up ended, or where the client's
		// counts began if that was later (see newTraffic): the idle hours before a
		// model's first traffic are not how it serves, and the pools its first requests
		// create fit a line across a long window of them (on the H200 at the scaled
		// settings of short-trace.yml the slow rule paged them 2m17s after the first
		// request, "94.9 MiB/min across the long window").
		if !p.counted.IsZero() {
			since = max(since, p.h.bucketOf(p.counted))
		}
	}
	_, pushing := p.h.latest(colAllocated)
	needSmooth := !p.settled && now.Sub(p.first) >= cfg.smoothFrom()
	for c := range numCols {
		// A rise on the paging series that push (allocated, and memory outside the
		// allocator) may start on half a window (see track).
		views[c] = e.analyze(p.h, c, since, c == colUsed && !pushing, needSmooth, c == colUnattributed || c == colAllocated)
		shortAt[c] = -1
		if views[c].short.n == 0 {
			continue
		}
		shortAt[c] = len(growth)
		growth = append(growth, e.exported(views[c].short, colNames[c], WindowShort), e.exported(views[c].long, colNames[c], WindowLong))
	}
	pushing = views[colAllocated].present
	paging := []int{colUsed}
	if pushing {
		paging = []int{colAllocated, colUnattributed}
	}

	age := now.Sub(p.first)
	left, haveLeft := e.memoryLeft(uuid)
	// runsOut: at rate (bytes per second) the GPU's memory left lasts less than
	// urgentWindows short windows.
	runsOut := func(rate float64) bool {
		return haveLeft && rate > 0 && left < urgentWindows*rate*cfg.ShortWindow.Seconds()
	}
	// urgent: at the pace of the newest buckets (the fast rule's). filling: at the judged
	// window's; a rise is then not held for the idle moments its process lost (see
	// track): a leak under a saturated server must still page, and forecast, before the
	// out-of-memory error.
	urgent := func(v *view) bool { return runsOut(v.fastRate) }
	filling := func(v *view) bool { return v.judge.ok && runsOut(v.judge.slope/cfg.Bucket.Seconds()) }
	if !p.settled {
		for _, c := range paging {
			v := &views[c]
			steep := v.fast || (v.cont && v.judge.ok && v.judge.slope/cfg.Bucket.Seconds() >= cfg.FastRate)
			if age >= cfg.WarmUp && steep && urgent(v) {
				// A steep rise (the fast rule, or a short window rising at FastRate and still
				// going) that would run the GPU out within urgentWindows short windows ends the warm-up:
				// waiting for the floors to go flat would wait for the OOM.
				p.settled, p.settledAt = true, p.h.last
			}
		}
		if why := e.warmUpOver(age, views, paging); !p.settled && why != stillWarm {
			p.settled, p.settledAt, p.settledFlat = true, p.h.last, why == endFlat
		}
	}
	if !p.settled {
		// Growth is not tracked during warm-up: the warm-up's own steps would otherwise
		// arm the growth state and carry it past its end.
		p.grow = [numCols]growState{}
		e.setVerdict(p, now, WarmingUp, e.warmUpReason(age, age >= cfg.WarmUp), growth)
		return
	}

	settledAt := p.h.bucketEnd(p.settledAt)
	// young: growth that starts at t is within probation short windows of a flat warm-up's
	// end (see probation and youngHold).
	// Or new to traffic: the client's counts began after the warm-up, within probation
	// short windows of t (the client counts from its first request). A model deployed
	// and left idle meets its first requests long after its warm-up, and they create
	// workspaces and pools that stay, at moments the counts find none in flight (short
	// requests between pushes): a rise at rest, steep for a minute or five, that the
	// counts would clear as a leak or the short rule take for one (measured on seeds
	// 1–100 with the counts, x_first_traffic_late: 2 → 0 false verdicts once the suite's
	// counts began with the first request, as the client's do; docs/leak-detection.md,
	// round 13).
	newTraffic := func(t time.Time) bool {
		return !p.counted.IsZero() && !p.counted.Before(settledAt) && t.Sub(p.counted) < probation*cfg.ShortWindow
	}
	youngAt := func(t time.Time) bool {
		return p.settledFlat && t.Sub(settledAt) < probation*cfg.ShortWindow || newTraffic(t)
	}
	// young names a young process in the reasons, as on-call reads them.
	young := func(t time.Time) string {
		if newTraffic(t) {
			return "a process whose traffic is new (the client's counts of its requests began lately)"
		}
		return "a young process (its warm-up just over)"
	}
	// waitFor is how much longer growth g of column c must go on before it pages, and
	// why: 0 once it may; -1 when nothing grows. wait is column c's own growth's.
	waitFor := func(c int, g *growState) (time.Duration, string) {
		if !views[c].present || !g.growing() {
			return -1, ""
		}
		need, why := cfg.MinDuration, "the configured min_duration"
		v := &views[c]
		isYoung := youngAt(g.since)
		// oom: at the pace of the newest buckets or of the judged window the GPU runs out
		// within urgentWindows short windows. The waits for what is more likely a cache
		// (probation, a young steep rise, a refill) do not hold then: a rise that fills
		// the GPU must page before the out-of-memory error, young or not (vram_eval
		// fast_leak_near_full seed 10006, held out: a leak of 238 MiB/min whose
		// short-rule growth began 12 minutes after a late warm-up, held by probation
		// until the OOM, never flagged).
		oom := urgent(v) || filling(v)
		onProbation := isYoung && g.rule == ruleShort && !g.line && !g.paged && !oom
		if onProbation {
			// Probation: a young process whose floors go up in steps again soon after
			// its warm-up ended is more likely still filling its caches (an adapter
			// loaded on demand after a pause) than leaking; such a staircase must keep
			// going for a short window before it pages. A line does not wait.
			if d := cfg.ShortWindow; d > need {
				need, why = d, "floors that step up again in "+young(g.since)+" are more likely caches still filling"
			}
		}
		if isYoung && g.steep && (g.rule == ruleShort || g.roomy) && !oom {
			// A young process's steep rise on a GPU with room (see youngHold; the urgent
			// fast rule takes over where it can, see track).
			if d := time.Duration(youngHold * float64(cfg.ShortWindow)); d > need {
				need, why = d, "a steep rise in "+young(g.since)+" is more likely a cache filling as traffic first arrives, which slows down"
			}
		}
		if g.rule == ruleFast && g.roomy && !g.rest {
			// The fast rule's run clear of load on a GPU with room pages once the next
			// bucket confirms it (see confirmRoomy).
			if d := confirmRoomy * cfg.Bucket; d > need {
				need, why = d, "a steep rise on a GPU with room must still be rising at the next bucket's close: a load that ends within it (a long generation's cache) is not a leak"
			}
		}
		if g.early {
			// A rise seen on half a window must go on for earlyPersist before it pages:
			// a saturated burst's floor ramps for a few minutes, then holds.
			if d := earlyPersist * cfg.Bucket; d > need {
				need, why = d, "a rise seen on half a window must go on before it pages"
			}
		}
		left := max(need-now.Sub(g.since), 0)
		if !g.paged && (!g.line || g.steep) && v.level < v.held+v.sig && !oom {
			// A refill: the floors climb back to a level they held for a short window
			// within the long window and fell from (a cache cleared and filled again, an
			// engine rebuilt). Growth is what passes it; until then it waits a bucket at
			// a time. A line under FastRate does not
			// wait: a leak after the clear rises in most buckets, a refill of adapters or
			// engines in steps (x_cache_refill_leak: 15 of 100 missed where lines waited
			// too, 3 now). A steep line still waits: a refill of many adapters loaded
			// close together climbs as a line at hundreds of MiB/min (seed 10004, held
			// out, paged at 312 MiB/min 1.7 GiB under the level it came back to).
			left, why = max(left, cfg.Bucket), "floors climbing back to a level they held for a short window before they fell from it are a cache filling again, not growth yet"
		}
		// Probation ends on a line: the staircase kept going for its short window, kept
		// meanwhile at the hysteresis level (see track), and must still qualify as growth
		// does to start where it would page; until then it waits a bucket at a time, and
		// goes back to steady once it no longer holds even at that level. A cache whose
		// steps grew rarer passes the looser level for a short window and no more: a
		// process pushing nothing whose NVML used floor stepped up after its warm-up paged
		// for a minute at fit 0.80 at probation's end (vram_eval, stair_used_only seed
		// 6087, held out). Once paged it is kept as before, so a verdict does not flap.
		if left == 0 && onProbation && !e.qualifies(v.judge) && !(g.early && e.qualifies(v.half)) && !(g.rest && e.qualifies(v.atRest)) {
			left, why = cfg.Bucket, "floors that stepped up in "+young(g.since)+" must still rise as a line when its probation ends"
		}
		return left, why
	}
	wait := func(c int) (time.Duration, string) { return waitFor(c, &p.grow[c]) }
	// pagesNow: whether growth g of column c would page at this close (see track).
	pagesNow := func(c int, g *growState) bool {
		left, _ := waitFor(c, g)
		return left == 0
	}
	for c := range numCols {
		v := &views[c]
		if !pushing && c == colUsed {
			// NVML's used holds the allocator cache's high-water mark, which creeps up
			// ever more rarely long after the warm-up: over the long window that is a
			// slow staircase, like a slow leak. The slow rule is for allocator stats.
			v.envLong.ok = false
		}
		e.track(&p.grow[c], v, now, urgent(v), filling(v), youngAt(now), newTraffic(now), c, pagesNow)
		if g := &p.grow[c]; g.early && g.rule == ruleShort && shortAt[c] >= 0 && v.half.ok && v.half.slope > v.short.slope {
			// Growth seen on the newest half of the window: until the whole window's line
			// catches up (most of it is before the onset, and it may still be flat), the
			// short window's exported slope is the half's, which the verdict rests on.
			growth[shortAt[c]] = e.exported(v.half, colNames[c], WindowShort)
		}
	}
	sustained := func(c int) bool {
		left, _ := wait(c)
		return left == 0
	}
	allocFlat := !p.grow[colAllocated].growing()
	// allocFlat means only that no rule tracks the allocated floor as growing. Its
	// judged window may still rise at MinRate or more (a staircase not yet a line, a
	// rise held as slowing): then the reasons must not call it flat beside the slope
	// on-call sees, and reserved rising with it is the allocations, not the cache (a
	// leak in steps at random times read "reserved rising 64 MiB/min … while allocated
	// is flat" beside 62 MiB/min allocated, x_leak_poisson_steps seed 1).
	aj := &views[colAllocated].judge
	allocPace := aj.slope / cfg.Bucket.Seconds() // bytes per second
	allocRises := aj.ok && allocPace >= cfg.MinRate
	whileFlat := " while allocated is flat"
	if allocRises {
		whileFlat = fmt.Sprintf(" while allocated rises %.3g MiB/min (fit %.2f), not judged a leak", allocPace/MiBPerMinute, aj.r2)
	}

	var v Verdict
	var reason string
	// pending: a paging series grows but has not gone on long enough to page (see wait).
	// On-call sees the rise, and how long and why it waits, not "nothing rising".
	pending := func(v *Verdict, reason *string) bool {
		cols, what, n := [2]int{colUsed}, [2]string{"used floor"}, 1
		if pushing {
			cols[0], what[0] = colAllocated, "allocated floor"
			if allocFlat {
				cols[1], what[1], n = colUnattributed, "memory outside the allocator (used − reserved)", 2
			}
		}
		for i, c := range cols[:n] {
			if left, why := wait(c); left > 0 {
				*v, *reason = Steady, fmt.Sprintf("%s, not paged for %s more: %s", growthReason(what[i], p.grow[c], now), durfmt.Format(left), why)
				return true
			}
		}
		return false
	}
	switch {
	case pushing && sustained(colAllocated):
		v, reason = Leak, growthReason("allocated floor", p.grow[colAllocated], now)
	case !pushing && sustained(colUsed):
		v, reason = Leak, growthReason("used floor", p.grow[colUsed], now)+"; the process pushes no allocator stats, so this is NVML's view"
	case allocFlat && sustained(colUnattributed):
		v, reason = UnattributedGrowth, growthReason("memory outside the allocator (used − reserved)", p.grow[colUnattributed], now)+whileFlat
	case pending(&v, &reason):
	case pushing && p.grow[colAllocated].held > 0 && p.grow[colAllocated].long:
		// Held from the slow rule (see track's slowRise), by what made its long window the
		// load's climb.
		why := "some stretch of it lost the idle moments the process showed before, so its floors there are"
		if p.grow[colAllocated].noisy {
			why = fmt.Sprintf("its newest quarter's floors jump from bucket to bucket %g times as much as its quietest quarter's or more, with no exact line under them:", float64(noisier))
		}
		v, reason = Steady, fmt.Sprintf("allocated floor rising %.3g MiB/min over the long window, but %s the least load in flight of a server busier than before, not judged a leak",
			p.grow[colAllocated].held/MiBPerMinute, why)
	case pushing && p.grow[colAllocated].held > 0 && p.grow[colAllocated].saw:
		// Held as the next ramp of a sawtooth (see track): the same, with its own why.
		v, reason = Steady, fmt.Sprintf("allocated floor rising %.3g MiB/min from the trough it fell back to, at the pace of the ramps it gave back: "+
			"the next cycle of a sawtooth (a garbage collector's), judged on its troughs when it falls back, not a leak yet", p.grow[colAllocated].held/MiBPerMinute)
	case pushing && p.grow[colAllocated].held > 0 && p.grow[colAllocated].noisy:
		v, reason = Steady, fmt.Sprintf("allocated floor rising %.3g MiB/min, but its floors jump from bucket to bucket %g times as much as over the long window or more, "+
			"with no exact line under them: the least load in flight of a server that is never idle, not judged a leak", p.grow[colAllocated].held/MiBPerMinute, float64(noisier))
	case pushing && p.grow[colAllocated].held > 0:
		// Held by the test of idle moments (see track): on-call should see the rise and
		// why it does not page, not "nothing rising", nor the cache that rises with it
		// read as growing while allocated is flat.
		v, reason = Steady, fmt.Sprintf("allocated floor rising %.3g MiB/min, but no sample comes back to it as they did while the process had idle moments: "+
			"the least load in flight of a server that is never idle, not judged a leak", p.grow[colAllocated].held/MiBPerMinute)
	case allocFlat && sustained(colReserved) && allocRises && allocPace >= p.grow[colReserved].slope/2:
		v, reason = Steady, fmt.Sprintf("allocated floor rising %.3g MiB/min (fit %.2f) and reserved with it, not yet the steady line a leak verdict needs",
			allocPace/MiBPerMinute, aj.r2)
	case allocFlat && sustained(colReserved):
		v, reason = CacheGrowth, growthReason("reserved", p.grow[colReserved], now)+whileFlat+": the allocator cache is growing, normal if it plateaus"
	default:
		v, reason = Steady, fmt.Sprintf("no floor rising faster than %.2g MiB/min with fit ≥ %.2g",
			cfg.MinRate/MiBPerMinute, cfg.MinFit)
		if cfg.MinDuration > 0 {
			reason += " for " + cfg.MinDuration.String()
		}
	}
	e.setVerdict(p, now, v, reason, growth)
}

// warmUpOver decides whether a process's warm-up has ended: not before WarmUp; then
// once every paging series (allocated and unattributed, or NVML's used for a process
// that pushes nothing) has been flat for a short window: the floor stopped rising, so a
// cache that fills in steps for half an hour is not judged while it fills; or once a
// paging series rises smoothly and at a steady pace (a sign test: it rises in most
// buckets, unlike a staircase, and it does not slow down, unlike a filling cache) from
// smoothFrom on: a leak from the first request; at the latest at MaxWarmUp.
func (e *Engine) warmUpOver(age time.Duration, views [numCols]view, paging []int) warmUpEnd {
	cfg := &e.cfg
	if age < cfg.WarmUp {
		return stillWarm
	}
	if age >= cfg.maxWarmUp() {
		return endBound
	}
	flat := true
	for _, c := range paging {
		if v := &views[c]; v.present && !v.settled {
			flat = false
		}
	}
	if flat {
		return endFlat
	}
	if age >= cfg.smoothFrom() {
		for _, c := range paging {
			v := &views[c]
			if v.present && v.smooth && e.qualifies(v.judge) {
				return endSmooth
			}
		}
	}
	return stillWarm
}

// warmUpEnd says whether, and why, a warm-up ended.
type warmUpEnd uint8

const (
	stillWarm warmUpEnd = iota
	endFlat             // the floors went flat
	endSmooth           // a smooth, steady rise: a leak from the start
	endBound            // MaxWarmUp
)

// qualifies is the short rule: the judged window's robust line rises at MinRate or
// more, with R² of MinFit, at least minHighs new highs, and most points on it.
func (e *Engine) qualifies(f fitResult) bool {
	b := e.cfg.Bucket.Seconds()
	return f.ok && f.slope/b >= e.cfg.MinRate && f.r2 >= e.cfg.MinFit && f.highs >= minHighs && 2*f.inliers >= f.n
}

// track updates one column's growth state at a bucket close. Growth starts by one of
// four rules (see the package comment) and is kept while the rule that started it, or
// the short rule at the hysteresis level (half the rate, R² MinFit − 0.2, no new highs
// needed), still holds. Nothing keeps growth alive on the long window alone when the
// judged window has gone flat: a verdict returns to steady within about one short
// window of the floor stopping.
//
// The fast rule starts growth on three steep buckets when urgent: at the pace of the
// rise, the memory left on the GPU lasts less than urgentWindows short windows, so
// waiting could mean paging after the out-of-memory error. It wants a rigid rise (see
// fastRule): near a full GPU a burst whose buckets stretch is load, unless the rise's
// buckets kept their moments at rest by the exact count (rested: the floor is at rest
// under requests that happened to be larger than the quiet window's, not the least
// load in flight); and an even one (see
// steadyRise): a floor that climbs in uneven steps is the least load in flight, a leak's
// climbs at its constant pace; and buckets that kept enough of the quiet window's idle
// moments that a leak would keep as few more often than restThin: a saturated server's
// samples are all mid-request, a leak's idle moments rise with it. Where the GPU has
// room it wants more: a rise clear of load (see fastRule: it went on for more than
// roomyBuckets, without a jump at its onset, past every give-back excursion and faster
// than their ramps, and beyond what requests in flight take), because a saturated server's floor rises with its load for a minute or
// two exactly like a steep leak, and drops back (measured: on three buckets, without the
// memory-left condition, the fast rule paged on 52 of 100 saturated bursts): on a roomy
// GPU a minute more costs little, a false page costs the alert.
//
// No rule starts growth on a rise of a process that lost its idle moments (see idle in
// analyze: the newest buckets for the short, half-window and roomy fast rules, any
// stretch of the long window for the slow rule, the rise's own buckets for the fast
// rule), unless filling: at the judged pace the GPU runs out within urgentWindows short
// windows, where a late page costs the out-of-memory error.
func (e *Engine) track(g *growState, v *view, now time.Time, urgent, filling, young, fresh bool, c int, pagesNow func(int, *growState) bool) {
	cfg := &e.cfg
	b := cfg.Bucket.Seconds()
	if !v.present {
		*g = growState{}
		return
	}
	relaxedOn := func(f fitResult) bool { return f.ok && f.slope/b >= cfg.MinRate/2 && f.r2 >= cfg.MinFit-0.2 }
	relaxed := relaxedOn(v.judge)
	// The slow rule needs half the long window since the warm-up (or since the client's
	// counts began, see judge): it is for growth the short window cannot resolve, which
	// can wait, and the late steps of a cache that resumed filling after its warm-up fit a
	// line over half an hour too (measured: a TensorRT-style staircase paged after 30
	// minutes).
	longOK := v.longSpan >= int64(cfg.LongWindow/cfg.Bucket/2)
	// The slow rule: the long window since the warm-up rises at rate with R² fit, by more
	// than sig (slowLine: the envelope's, or the floors at rest's where the idle moments
	// were lost), without slowing down, and its newest quarter still rises.
	slowLine := func(f fitResult, sig, rate, fit float64) bool {
		return longOK && f.ok && f.slope/b >= rate && f.r2 >= fit && f.rise >= sig
	}
	// stopped: the long window's line is the past of a rise whose floors have stopped
	// (see standstill.stopped). Without this a leak the short rule let go as it
	// stopped was taken up again by this rule within minutes and held for some 17 more
	// (leak_stops: 44 of 100 alerted again, up to 21 minutes after the stop), where a
	// staircase of rare steps waits between them as long as it ever did. Below MinRate
	// the newest quarter decides as before. stoppedRest: the same for the line through
	// the floors at rest (the slow rule where the idle moments were lost), read on those
	// floors, which a load's climb does not lift: a leak that stopped under such traffic
	// was taken up again and again for 40 minutes after its stop (vram_eval -load,
	// leak_stops seed 42); read on all the floors it let a leak under a day's traffic go
	// and come back (load_diurnal_leak -load: 4 seeds alerted again, 4 were flagged up
	// to 5.5 minutes later). The pace term: over a short span since the warm-up the
	// floors may have risen too few times for their longest pause to say (the H200 leak
	// under a load climb, h200_r8_load_climb_leak, was let go 20 s after it paged while
	// it still rose 20 MiB/min).
	stopped := v.still.stopped(v.envLong, v.sig, cfg.MinRate*b)
	stoppedRest := v.stillRest.stopped(v.atRestLong, v.sig, cfg.MinRate*b)
	slowOK := func(rate, fit float64) bool {
		return longOK && v.slowRises(b, rate, fit) && !stopped
	}
	// To start, the newest quarter must rise by sig itself, as the whole window must: a
	// server whose load climbed for an hour and holds its peak has a long envelope that
	// is the climb, and a newest quarter whose floors, the least load in flight, scatter
	// by hundreds of MiB, so that its slope is as often up as down; a slow leak's quarter
	// rises by its pace (0.3 MiB/min: 9 MiB in 30 minutes, over the 5 MiB a quiet floor's
	// sig is). Measured on 100 seeds without the client's counts, after the exact count
	// of idle moments (see idle): load_diurnal 14 → 7 false verdicts (4 fired, 12 before
	// both); the twin under load_diurnal's traffic 9 more never flagged in its three
	// hours and busy_leak 2 more, each flagged by this rule 1h29m–1h54m after its onset
	// before (x_sparse_cadence_leak's slowest seed too: 84 → 141 min). Once started, the
	// quarter's slope keeps it as before, so a slow leak's verdict does not flap.
	slowStart := v.recent.rise >= v.sigRecent
	// slowRise: the slow rule would start growth, but for the load in flight (see begin).
	slowRise := slowOK(cfg.SlowRate, cfg.MinFit) && slowStart && !v.twoWayLong && !v.troughs.halted && v.envLong.highs >= minHighs
	// The short rule's two starts, and whether the lost idle moments hold them.
	// A rise that is the next ramp of the series' sawtooth (see sawCycles.ramp) is held
	// too, unless filling: it is judged on the troughs when the collection comes.
	saw := v.sawRamp && !filling
	// Neither starts where the troughs of a collector's sawtooth rise ever slower over
	// the span the envelope is judged on (see troughsSlow): the envelope lags them by a
	// cycle, and fits the line of a fill's tail that they no longer rise along.
	shortRise := e.qualifies(v.judge) && (v.judge.slope/b < cfg.FastRate || !v.falls) && !v.stretched && !v.slowing && !v.troughs.filling
	halfRise := e.qualifies(v.half) && v.half.rise >= v.sig && v.halfSmooth && v.half.slope/b < cfg.FastRate && !v.stretched && !v.slowing && !v.troughs.filling
	// Floors the client said were at rest that rise as a line free a rise the lost idle
	// moments would hold: load does not lift them.
	atRest := e.qualifies(v.atRest)
	slowAtRest := slowLine(v.atRestLong, v.sig, cfg.SlowRate, cfg.MinFit) && v.atRestLong.highs >= minHighs && !stoppedRest
	// Held too where the judged window's floors are noisy (see analyze): the least load
	// in flight, read on the floors themselves where too few samples are due for the test
	// of idle moments; near a full GPU (filling) the same exception.
	held := (v.idleLost || v.noisy) && !filling && !atRest
	// Nor where the newest collection came back no higher than the one before, after one
	// that rose by sig (see risingTroughs): the envelope under a sawtooth lags the memory
	// that stays. Not on any flat pair: a leak too slow to lift a trough by sig/2 in a
	// cycle shows such pairs all along (x_gc_sawtooth_wide_leak seed 11, 2.36 MiB/min,
	// flagged 32 minutes later).
	// Nor where the judged window's floors stepped down as well as up, sharply (see
	// twoWay): a cache at capacity swapping items of different sizes walks at random,
	// and its runs of swaps that grew are staircases, not memory that stays.
	free := !held && !saw && !v.troughs.halted && !v.twoWay
	shortOK, halfOK := shortRise && free, halfRise && free
	// A rise clear of load by the client's counts is not for a young process (see
	// fastRule): at rest, a cache that fills as traffic first arrives rises like a leak
	// for minutes.
	// Nor one clear of load only by its moments at rest (clearIdle): a cache that fills
	// from a young process's first traffic keeps them as a leak does, and its rise passes
	// the requests' size only later, where it has slowed (measured on 100 seeds of
	// -stress with such runs let page in a young process too: x_cache_fill_slow 19 → 23
	// false verdicts; 20 without).
	cleared := v.clear == clearLoad || ((v.clear == clearRest || v.clear == clearIdle) && !young)
	// begin starts growth on what the rules see at this close, the fast rule's run clear
	// of load on a roomy GPU only where runOK.
	// urgentFast: the fast rule's rise pages near a full GPU (restThin holds more than
	// idleGone vetoes).
	urgentFast := urgent && v.fast && (v.rigid || v.rested) && v.even && v.goes && !v.restThin
	begin := func(g *growState, runOK bool) {
		*g = growState{}
		switch {
		case urgentFast || (runOK && v.fast && v.rigid && !v.idleGone && cleared && !v.slowing && !v.idleLost):
			*g = growState{rule: ruleFast, since: now, slope: v.fastRate, fit: 1, roomy: !urgent, steep: true, rest: !urgent && v.clear == clearRest, floor: v.floor}
		case runOK && v.restRun && !young && !v.slowing:
			// The run read on the floors at rest alone (see analyze's restRun), where
			// the buckets without a moment at rest keep breaking the fast rule's: as
			// clearRest, it pages at once, not while young.
			*g = growState{rule: ruleFast, since: now, slope: v.restRunRate, fit: 1, roomy: true, steep: true, rest: true, restRun: true, floor: v.floor}
		case runOK && v.steepSaw && !v.stretched && !v.idleLost && !v.twoWay:
			// A rise under a collector's sawtooth steeper than any of its ramps, on the
			// floors' own line (see analyze's steepSaw), where the judged window's
			// envelope lags a cycle and the fast rule's runs keep breaking. As the fast
			// rule's run on a roomy GPU: confirmed at the next bucket, held while young,
			// kept while the floors' line still rises at half the fast rate. Not where
			// load stretched the buckets, the idle moments were lost or the floors walked
			// both ways (a cache at capacity).
			*g = growState{rule: ruleFast, since: now, slope: v.short.slope / b, fit: v.short.r2, roomy: true, steep: true, floor: v.floor, floors: true}
		case shortOK:
			// A steep line whose floors keep falling by more than 2σ (one bucket in four; a
			// leak's noise rarely does) is a saturated server's plateau,
			// whose floor is the least load in flight, fitted together with the ramp before
			// it (TestSaturatedPlateau; measured: 14 of 30 load_ramp pages gone, no leak
			// class slower). A rise whose newest buckets stretch (see stretched) is load in
			// flight at any slope: a load ramp's climb and hold fit a line over the short
			// window (TestLoadRampStretched; measured on 100 seeds: load_ramp 16 → 2 pages,
			// no leak class slower by more than a second).
			*g = growState{rule: ruleShort, since: now, slope: v.judge.slope / b, fit: v.judge.r2, line: v.line, steep: v.judge.slope/b >= cfg.FastRate}
		case halfOK:
			// A rise that began within the short window, judged on the newest half of it
			// (allocated and memory outside the allocator, see judge). Only as smooth as a
			// line, once it went on for earlyPersist, and slower than the fast rate: a
			// saturated server's floor ramps for minutes as smoothly as a leak's, and at such
			// paces (TestSaturatedBurst: 400 MiB/min for three minutes) only the fast rule's
			// tests of load tell it from one (measured on 100 seeds: without this bound 4 more
			// load_ramp traces and TestSaturatedBurst paged; with it no new false alarm on any
			// class). Not on a stretched rise either (see above).
			*g = growState{rule: ruleShort, since: now, slope: v.half.slope / b, fit: v.half.r2, line: v.line, early: true}
		case v.troughs.rising && !v.troughs.slowing && !v.troughs.filling && v.troughs.slope/b >= cfg.MinRate && !held:
			// Under a collector's sawtooth the judged window is three envelope widths, and
			// its robust line turns only once the leak holds more than half of it: a leak
			// of 1–20 MiB/min under the sawtooth was flagged 32 minutes after its
			// onset (median, gc_sawtooth_rising_floor). Each collection comes back to the
			// memory that stays, so two troughs in a row each higher than the one before
			// by more than the noise, where the floor stayed from then on, are the leak
			// (see risingTroughs): 20 minutes, no false verdict more on any class, built
			// or outside the built ranges (docs/leak-detection.md, round 18).
			// Not where the newest trough rose at under steadyPace of the one before's
			// pace (see troughRise.slowing): a cache filling on such a server lifts
			// the troughs ever less (vram_eval -stress, x_gc_sawtooth_cache_fill seed 4:
			// 1,452 MiB over 28 buckets, then 195 over 20, paged for 18 minutes); nor
			// where they rise ever slower over the span the envelope is judged on (see
			// troughsSlow), which also holds the short rule's starts above.
			*g = growState{rule: ruleTrough, since: now, slope: v.troughs.slope / b, fit: 1}
		case v.idleLost && atRest && !filling && !v.slowing:
			// The rise the lost idle moments hid, on the floors at rest (see restFit; where
			// the client does not count its requests, exactFit infers them).
			*g = growState{rule: ruleShort, since: now, slope: v.atRest.slope / b, fit: v.atRest.r2, line: v.line, rest: true, exact: v.atRestInferred}
		case slowRise && !((v.idleLostLong || v.noisyLong) && !filling) && !(fresh && !filling):
			// Nor where the floors since the warm-up stepped down as well as up, sharply and
			// by 4 sig or more each (see twoWayLong): a cache at capacity whose swaps drifted
			// up for an hour, toward the mean of its items' sizes, fits the long window's line
			// as well as a slow leak (measured on 100 seeds of -stress: x_adapter_churn 20 →
			// 13 false verdicts, x_adapter_churn_ranks 16 → 9). At sig a busy server's floors
			// step both ways by its load: two leaks under a day's traffic that this rule
			// flagged 98 and 102 minutes after their onset were missed, and x_slow_leak_busy
			// went 7 → 13 over two hours; at 4 sig the cost is two leaks it flagged 1h55m and
			// 1h58m after their onset, now missed (busy_leak seed 97, x_slow_leak_busy 13),
			// and two of x_slow_leak_busy flagged 22 and 29 minutes later.
			// Not while the traffic is new (fresh, see judge's newTraffic): that is the short
			// rule's to judge, on probation. The slow rule is for growth that can wait, and
			// at settings whose long window is under four short windows (short-trace.yml's
			// is two) half of one after the first request comes before probation ends. Only
			// for new traffic: the same bound after the warm-up's end missed the H200 leak
			// under a load climb that the slow rule flags 3m36s after its onset.
			*g = growState{rule: ruleSlow, since: now, slope: v.envLong.slope / b, fit: v.envLong.r2}
		case v.idleLostLong && slowAtRest && !filling && !fresh:
			// The slow rule on the floors at rest, where some stretch of the long window had
			// none: its envelope is the load's climb, they are not.
			*g = growState{rule: ruleSlow, since: now, slope: v.atRestLong.slope / b, fit: v.atRestLong.r2, rest: true}
		case (held || saw) && shortRise:
			g.held, g.saw, g.noisy = v.judge.slope/b, !held, held && !v.idleLost
		case (held || saw) && halfRise:
			g.held, g.saw, g.noisy = v.half.slope/b, !held, held && !v.idleLost
		case slowRise && !fresh:
			// The slow rule's rise, held for the load in flight over the long window
			// (lost idle moments, loud floors): on-call sees the rise and why it does not
			// page, not "nothing rising".
			g.held, g.long, g.noisy = v.envLong.slope/b, true, !v.idleLostLong
		}
	}
	// yield: growth g, a run clear of load on a roomy GPU that has still to page (the
	// next bucket's confirmation, a young process's youngHold; see wait), gives way to
	// the growth another rule starts at this close where that would page now. Without
	// this a leak that the short rule saw as a line at the same close, or a close after
	// the run qualified, paged a bucket or two later (cuda_context_short_leak: seeds 1,
	// 2, 7 and 27 10 s later, 41, 59 and 97 40–50 s, two of them past the 2 minutes their
	// pace is given, once round 23's fast rule took runs that a bucket's idle phase had
	// broken before). The other growth dates from g's start: a young process's run is
	// held, and the same rise seen a bucket after its youth ended must not page for that
	// alone (a cache filling from its first traffic, x_cache_fill_slow seed 20).
	yield := func(g *growState) bool {
		if !g.growing() || g.rule != ruleFast || !g.roomy || g.rest || pagesNow == nil || pagesNow(c, g) {
			return false
		}
		var alt growState
		begin(&alt, false)
		alt.since = g.since
		if alt.growing() && pagesNow(c, &alt) {
			*g = alt
			return true
		}
		return false
	}
	if yield(g) {
		return
	}
	if g.growing() && (g.rule != ruleFast || g.roomy) && urgentFast {
		// The GPU is about to run out: the fast rule takes over growth another rule (or
		// itself, on a roomy GPU) started and may still have to confirm, and pages now.
		*g = growState{rule: ruleFast, since: now, slope: v.fastRate, fit: 1}
		return
	}
	if g.growing() {
		// Growth that started on the newest half of the window is kept while that half
		// still shows it: the whole window catches up with it only later.
		keep := relaxed || (g.early && relaxedOn(v.half))
		switch g.rule {
		case ruleFast:
			keep = keep || v.contPair // cont, or the newest two buckets (see fastRule)
			// Where the GPU has room, a steep rise that then goes ever slower is a cache
			// filling to its budget (see slowing), not a leak. Before it paged at once;
			// once paged, at the second close in a row that reads it: so soon after the
			// onset the test's halves hold a few floors each, and one bucket held up by a
			// request tips it for that close alone (vram_eval fast_leak seeds 73 and 98
			// went `leak`, `steady` for 30–60 s, `leak`). Not before the page: a fill's
			// first steep minutes are such a run, and its confirming close is where the
			// test ends it (ignored there, cache_fill_smooth paged on 8 of 100, not 1).
			fill := g.roomy && v.slowing && (!g.paged || g.slowed)
			keep = keep && !fill
			// Two growths are kept past that test while the floors' own line over the
			// short window (robust to a collection's drop) still rises at half the fast
			// rate and outruns twice the sawtooth's steepest ramp (pastSaw), where the test
			// read the envelope, which lags a collector's sawtooth by a cycle (a leak of
			// 700 MiB/min under one, whose envelope is 26 buckets wide, reads as slowing on
			// it: vram_eval -stress -load, x_gc_sawtooth_fast_leak seed 85). Not where it
			// read the floors since the newest collection (slowRamp, see analyze), a clean
			// ramp of garbage and what stays: a leak keeps its pace there, a fill slows.
			// Kept past that too, a cache filling on a collector's server (its first
			// minutes outrun the ramps, and the collection before it is a fall) paged at
			// the fast rule's confirming close and stayed `leak` for up to 20 minutes
			// (vram_eval -stress, x_gc_sawtooth_cache_fill: 65 → 60 of 100 false verdicts,
			// 55 → 45 fired, no leak slower; on any slowing, the envelope's too, 59 and 45,
			// but seed 85 above, flagged after 6m32s, went `steady` and `cache_growth` by
			// turns and was flagged 7 minutes later).
			// - Growth found on that line past a sawtooth (see steepSaw), which had to
			//   outrun the ramps so to start.
			// - Growth on a series whose floor fell within the short window (fell: a
			//   fill does not) and came back above where it stood when growth started, by
			//   sig. A collector's sawtooth (the issue's, under a leak) gives back at each
			//   collection the garbage, not the leak: the run of rising buckets breaks
			//   (cont) while the envelope, its troughs, lags the leak by a cycle. A burst,
			//   a long generation or a sawtooth's ramp that the fast rule took goes back
			//   below where it started when it ends. Without this a fast leak under a
			//   sawtooth went back to steady within minutes of being flagged, too soon for
			//   VRAMProcessLeak's five (vram_eval -stress, x_gc_sawtooth_fast_leak: 18 of
			//   100 never fired).
			// Not in place of the test of slowing for any steep line: a sawtooth of 150
			// MiB/min whose ramp the fast rule had taken stayed `leak` for two hours
			// (x_gc_sawtooth_steep seed 43); the judged window's relaxed line kept a
			// fill's tail, still a MiB a minute, for 89–113 minutes (x_gc_sawtooth_cache_fill
			// seeds 27, 54, 81). Nor on the line alone, without pastSaw: once a cache that
			// filled on such a server is full, the collector's ramps of 25 MiB/min or more
			// are that line, and it lifted the floor by sig for good, so the fill's growth
			// stayed `leak` for the hours the trace ran (seed 45).
			if (g.floors || (g.roomy && v.fell && v.floor >= g.floor+v.sig)) && !(fill && v.slowRamp) {
				keep = keep || (relaxedOn(v.short) && v.short.slope/b >= cfg.FastRate/2 && v.pastSaw)
			}
		case ruleSlow:
			keep = keep || slowOK(cfg.SlowRate/2, cfg.MinFit-0.2) || (g.rest && slowLine(v.atRestLong, v.sig, cfg.SlowRate/2, cfg.MinFit-0.2) && !stoppedRest)
		case ruleTrough:
			// Kept while the newest collection still came back higher (see
			// risingTroughs), or the judged window has caught up with the rise, until a
			// collection comes back no higher, or the troughs slow down.
			keep = (v.troughs.held || (keep && !v.troughs.stopped())) && !v.troughs.slowing
		case ruleShort:
			// A rise the short rule took for a leak before it could tell (a fill's
			// first minutes) that then rises ever slower is a cache nearing its budget.
			keep = keep && !v.slowing
			// Under a collector's sawtooth, the judged window's envelope lags a cycle or
			// more: once a collection came back no higher than the one before, after
			// one that rose by sig, the memory that stays stopped growing (see
			// risingTroughs).
			keep = keep && !v.troughs.halted
			// One found on the floors at rest is kept while they show it.
			keep = keep || (g.rest && relaxedOn(v.atRest))
		}
		if !keep {
			*g = growState{}
			return
		}
		g.slowed = v.slowing
		g.paged = g.paged || (pagesNow != nil && pagesNow(c, g))
		// A rise that began on half a window, before most of its buckets could rise, is a
		// line once they do: probation is for staircases.
		g.line = g.line || (g.early && v.line)
		// The slope the forecast uses: while the floor still rises fast, the pace of its
		// newest buckets (the judged window lags behind a steep leak); otherwise the
		// judged window's, or the long window's for a slow leak.
		switch {
		case g.floors && relaxedOn(v.short):
			// Found on the floors' own line: the envelope lags the sawtooth.
			g.slope, g.fit = v.short.slope/b, v.short.r2
		case v.cont && g.rule == ruleFast:
			g.slope = math.Max(v.fastRate, v.judge.slope/b)
		case g.rule == ruleTrough && v.troughs.held:
			g.slope, g.fit = v.troughs.slope/b, 1
		case g.rest && relaxedOn(v.atRest):
			// Found on the floors at rest: the others are load in flight.
			g.slope, g.fit = v.atRest.slope/b, v.atRest.r2
		case relaxed:
			g.slope, g.fit = v.judge.slope/b, v.judge.r2
		case g.rule == ruleSlow:
			g.slope, g.fit = v.envLong.slope/b, v.envLong.r2
		}
		return
	}
	begin(g, true)
	yield(g)
}

// judgeGPU recomputes a GPU's growth and forecast at the close of a bucket.
func (e *Engine) judgeGPU(g *gpu, now time.Time) {
	v := e.analyze(g.h, 0, math.MaxInt64, true, !g.settled && now.Sub(g.first) >= e.cfg.WarmUp+e.cfg.ShortWindow, false)
	g.growth = []Growth{e.exported(v.short, SeriesUsed, WindowShort), e.exported(v.long, SeriesUsed, WindowLong)}
	g.res = GPUResult{Growth: g.growth}
	if g.procsSeen {
		e.forecastFromProcesses(g, now)
		return
	}
	// No process was ever seen on this GPU (no NVML process list): its used floor is all
	// there is, judged like a process that pushes nothing.
	age := now.Sub(g.first)
	if !g.settled {
		var views [numCols]view
		views[colUsed] = v
		if e.warmUpOver(age, views, []int{colUsed}) != stillWarm {
			g.settled, g.settledAt = true, g.h.last
		}
	}
	if g.settled {
		v = e.analyze(g.h, 0, g.settledAt, true, false, false)
	}
	if !g.settled {
		g.grow = growState{}
		return
	}
	e.track(&g.grow, &v, now, g.total > 0 && v.fastRate > 0 && g.total-g.used < v.fastRate*e.cfg.ShortWindow.Seconds(), false, false, false, 0, nil)
	if g.grow.growing() && g.grow.slope > 0 && g.total > 0 {
		g.res.ExhaustionSeconds = math.Max(g.total-g.used, 0) / g.grow.slope
		g.res.ExhaustionValid = true
	}
}

// forecastFromProcesses forecasts a GPU's exhaustion from the processes on it: the rate
// is the sum of the slopes of those whose verdict pages (the series that grows: the
// allocated floor of a leak, memory outside the allocator, or NVML's used floor of a
// process that pushes nothing) over the memory left (see memoryLeft).
func (e *Engine) forecastFromProcesses(g *gpu, now time.Time) {
	left, ok := e.left(g, now)
	g.left, g.leftOK = left, ok
	if !ok {
		return
	}
	recent := now.Add(-2 * e.cfg.Bucket)
	var rate float64
	for k, p := range e.procs {
		if k.uuid != g.uuid || p.last.Before(recent) {
			continue
		}
		_, pushing := p.h.latest(colAllocated)
		switch p.res.Verdict {
		case Leak:
			if pushing {
				rate += p.grow[colAllocated].slope
			} else {
				rate += p.grow[colUsed].slope
			}
		case UnattributedGrowth:
			rate += p.grow[colUnattributed].slope
		}
	}
	if rate > 0 {
		g.res.ExhaustionSeconds, g.res.ExhaustionValid = left/rate, true
	}
}

// left is the memory a GPU has left for what grows: its total less what cannot be given
// back: each process's allocated floor, room for its largest recent request, and memory
// outside its allocator (its used floor if it pushes nothing), and the rest of the GPU's used floor that no process accounts
// for (driver, processes NVML does not list). That is the free memory plus the
// processes' allocator caches, which a caching allocator flushes before it fails, so it
// does not swing as caches flush and regrow near a full GPU.
func (e *Engine) left(g *gpu, now time.Time) (float64, bool) {
	gpuFloor, ok := g.h.latest(0)
	if !ok || g.total <= 0 {
		return 0, false
	}
	recent := now.Add(-2 * e.cfg.Bucket)
	var hard, used float64
	for k, p := range e.procs {
		if k.uuid != g.uuid || p.last.Before(recent) {
			continue
		}
		a, hasA := p.h.latest(colAllocated)
		u, hasU := p.h.latest(colUsed)
		un, hasUn := p.h.latest(colUnattributed)
		switch {
		case hasA:
			// Room for the largest request of the last short window too: the GPU is full
			// when the next large request no longer fits, before the floor reaches it.
			hard += a + p.h.maxSpread(colAllocated, int64(e.cfg.ShortWindow/e.cfg.Bucket))
			if hasUn {
				hard += math.Max(un, 0)
			}
		case hasU:
			hard += u
		}
		if hasU {
			used += u
		}
	}
	other := math.Max(gpuFloor-used, 0)
	return math.Max(g.total-other-hard, 0), true
}

// memoryLeft is left as of the GPU's last bucket close, for the fast rule's urgency.
func (e *Engine) memoryLeft(uuid string) (float64, bool) {
	g := e.gpus[uuid]
	if g == nil || !g.leftOK {
		return 0, false
	}
	return g.left, true
}

func growthReason(what string, g growState, now time.Time) string {
	var r string
	switch {
	case g.rule == ruleFast && g.floors:
		r = fmt.Sprintf("%s rising %.3g MiB/min (fit %.2f) over the short window, more than twice as steeply as any ramp of the collector's sawtooth it showed: more than garbage", what, g.slope/MiBPerMinute, g.fit)
	case g.rule == ruleFast && g.restRun:
		r = fmt.Sprintf("%s rising %.3g MiB/min at the moments the client reported no request in flight, higher in each of the last %d buckets that had one over a quiet floor: not load", what, g.slope/MiBPerMinute, fastBuckets)
	case g.rule == ruleFast && g.roomy && g.rest:
		r = fmt.Sprintf("%s rising %.3g MiB/min, higher in each of the last %d buckets over a quiet floor, also at the moments the client reported no request in flight: not load", what, g.slope/MiBPerMinute, fastBuckets)
	case g.rule == ruleFast && g.roomy:
		// On-call reads why it paged on a roomy GPU: a run long and clear of load.
		r = fmt.Sprintf("%s rising %.3g MiB/min, higher in each of more than %d buckets in a row over a quiet floor, beyond what load explains", what, g.slope/MiBPerMinute, roomyBuckets)
	case g.rule == ruleFast:
		r = fmt.Sprintf("%s rising %.3g MiB/min, higher in each of the last %d buckets over a quiet floor, fast enough to fill the GPU soon", what, g.slope/MiBPerMinute, fastBuckets)
	case g.rule == ruleTrough:
		r = fmt.Sprintf("%s rising %.3g MiB/min at the troughs the collector's sawtooth comes back to, each of the last three above the one before by more than the noise", what, g.slope/MiBPerMinute)
	case g.rule == ruleSlow && g.rest:
		r = fmt.Sprintf("%s rising %.3g MiB/min across the long window (fit %.2f) at the moments the client reported no request in flight, though the server is otherwise never idle", what, g.slope/MiBPerMinute, g.fit)
	case g.rule == ruleSlow:
		r = fmt.Sprintf("%s rising %.3g MiB/min across the long window (fit %.2f)", what, g.slope/MiBPerMinute, g.fit)
	case g.exact:
		r = fmt.Sprintf("%s rising %.3g MiB/min (fit %.2f) on the floors that lie on one line to within a few MiB (the moments at rest, however rare), though the server is otherwise never idle", what, g.slope/MiBPerMinute, g.fit)
	case g.rest:
		r = fmt.Sprintf("%s rising %.3g MiB/min (fit %.2f) at the moments the client reported no request in flight, though the server is otherwise never idle", what, g.slope/MiBPerMinute, g.fit)
	default:
		r = fmt.Sprintf("%s rising %.3g MiB/min (fit %.2f)", what, g.slope/MiBPerMinute, g.fit)
	}
	if d := now.Sub(g.since).Round(time.Second); d > 0 {
		return r + " for " + d.String()
	}
	return r + ", just detected"
}

func (e *Engine) warmUpReason(age time.Duration, extended bool) string {
	if extended {
		return fmt.Sprintf("first seen %s ago; its floors are still rising (a cache filling, modules loading): verdicts start once they have been flat for %s, at the latest after %s",
			age.Round(time.Second), durfmt.Format(e.cfg.ShortWindow), durfmt.Format(e.cfg.maxWarmUp()))
	}
	return fmt.Sprintf("first seen %s ago; verdicts start after the %s warm-up", age.Round(time.Second), e.cfg.WarmUp)
}

func (e *Engine) setVerdict(p *process, now time.Time, v Verdict, reason string, growth []Growth) {
	since := p.res.Since
	if v != p.res.Verdict {
		since = now
	}
	p.res = Result{Verdict: v, Since: since, Growth: growth, Reason: reason}
}
