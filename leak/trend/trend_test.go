package trend

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

const mib = 1024 * 1024

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// feed drives one process at a 5 s cadence for d, with allocated, reserved and used
// given as functions of the elapsed time, and returns the verdict at each minute.
func feed(t *testing.T, e *Engine, k Key, d time.Duration, alloc, reserved, used func(time.Duration) float64) []Result {
	t.Helper()
	var out []Result
	for el := time.Duration(0); el <= d; el += 5 * time.Second {
		s := Sample{Key: k, T: t0.Add(el)}
		if alloc != nil {
			s.Allocated, s.HasAllocated = alloc(el), true
		}
		if reserved != nil {
			s.Reserved, s.HasReserved = reserved(el), true
		}
		if used != nil {
			s.Used, s.HasUsed = used(el), true
		}
		r := e.Observe(s)
		if el%time.Minute == 0 {
			out = append(out, r)
		}
	}
	return out
}

func flat(v float64) func(time.Duration) float64 { return func(time.Duration) float64 { return v } }

func line(v0, perMin float64, onset time.Duration) func(time.Duration) float64 {
	return func(el time.Duration) float64 {
		if el < onset {
			return v0
		}
		return v0 + perMin*(el-onset).Minutes()
	}
}

// sawtooth adds request activations on top of f: the floor stays f.
func sawtooth(f func(time.Duration) float64, peak float64) func(time.Duration) float64 {
	return func(el time.Duration) float64 {
		phase := int(el/(5*time.Second)) % 4
		return f(el) + peak*float64(phase)/3
	}
}

// sawtoothLoad is sawtooth's requests in flight: one while it adds activations.
func sawtoothLoad(el time.Duration) uint32 {
	if int(el/(5*time.Second))%4 == 0 {
		return 0
	}
	return 1
}

func step(v0, h float64, at time.Duration) func(time.Duration) float64 {
	return func(el time.Duration) float64 {
		if el < at {
			return v0
		}
		return v0 + h
	}
}

func TestVerdicts(t *testing.T) {
	const gib = 1024 * mib
	tests := []struct {
		name                   string
		alloc, reserved, used  func(time.Duration) float64
		want                   Verdict // at the end of 1 h
		never                  Verdict // must not appear at any minute
		firstWantWithinMinutes int     // 0: not checked
	}{
		{name: "flat", alloc: flat(65 * mib), reserved: flat(gib), used: flat(gib + 600*mib), want: Steady, never: Leak},
		{name: "sawtooth on a flat floor", alloc: sawtooth(flat(65*mib), 2*gib), reserved: flat(3 * gib), used: flat(3*gib + 600*mib), want: Steady, never: Leak},
		// A leak from the first sample never lets the floors go flat: the warm-up ends
		// once the rise has been smooth and steady for three short windows after WarmUp.
		{name: "allocated leak 10 MiB/min from the start", alloc: line(65*mib, 10*mib, 0), reserved: line(gib, 10*mib, 0), used: line(gib+600*mib, 10*mib, 0), want: Leak, firstWantWithinMinutes: 41},
		{name: "allocated leak 10 MiB/min from minute 20", alloc: line(65*mib, 10*mib, 20*time.Minute), reserved: line(gib, 10*mib, 20*time.Minute), used: line(gib+600*mib, 10*mib, 20*time.Minute), want: Leak, firstWantWithinMinutes: 28},
		{name: "used-only leak", used: line(gib, 20*mib, 0), want: Leak, firstWantWithinMinutes: 41},
		{name: "reserved step at 30 min is no leak", alloc: flat(65 * mib), reserved: step(gib, 2*gib, 30*time.Minute), used: step(gib+600*mib, 2*gib, 30*time.Minute), want: Steady, never: Leak},
		{name: "used-only step is no leak", used: step(gib, 2*gib, 30*time.Minute), want: Steady, never: Leak},
		{name: "cache growth", alloc: flat(65 * mib), reserved: line(gib, 20*mib, 0), used: line(gib+600*mib, 20*mib, 0), want: CacheGrowth, never: Leak},
		{name: "unattributed growth", alloc: flat(65 * mib), reserved: flat(gib), used: line(gib+600*mib, 20*mib, 0), want: UnattributedGrowth, never: Leak},
		{name: "80 GiB flat stays steady", alloc: flat(80 * gib), reserved: flat(81 * gib), used: flat(82 * gib), want: Steady, never: Leak},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewEngine(DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			rs := feed(t, e, Key{PID: 1, UUID: "GPU-a"}, time.Hour, tc.alloc, tc.reserved, tc.used)
			if got := rs[len(rs)-1]; got.Verdict != tc.want {
				t.Errorf("verdict at 1h = %s (%s), want %s", got.Verdict, got.Reason, tc.want)
			}
			for i, r := range rs {
				if i < 10 && r.Verdict != WarmingUp {
					t.Errorf("minute %d: verdict %s during warm-up", i, r.Verdict)
				}
				if tc.never != "" && r.Verdict == tc.never {
					t.Errorf("minute %d: verdict %s (%s)", i, r.Verdict, r.Reason)
				}
			}
			if tc.firstWantWithinMinutes > 0 {
				found := false
				for _, r := range rs[:tc.firstWantWithinMinutes+1] {
					found = found || r.Verdict == tc.want
				}
				if !found {
					t.Errorf("no %s verdict within %d minutes", tc.want, tc.firstWantWithinMinutes)
				}
			}
		})
	}
}

func TestSlopeAndFit(t *testing.T) {
	e, _ := NewEngine(DefaultConfig())
	k := Key{PID: 7, UUID: "GPU-b"}
	rs := feed(t, e, k, 3*time.Hour, sawtooth(line(80*1024*mib, 12*mib, 0), 500*mib), nil, nil)
	last := rs[len(rs)-1]
	for _, g := range last.Growth {
		if g.Series != SeriesAllocated {
			t.Fatalf("unexpected series %q for a process that pushes only allocated", g.Series)
		}
		if !g.Valid || math.Abs(g.BytesPerSecond/MiBPerMinute-12) > 0.06 || g.Fit < 0.99 {
			t.Errorf("%s window: slope %.4f MiB/min fit %.4f valid %v, want 12 MiB/min fit 1", g.Window, g.BytesPerSecond/MiBPerMinute, g.Fit, g.Valid)
		}
	}
	if last.Verdict != Leak || !strings.Contains(last.Reason, "allocated floor rising") {
		t.Errorf("verdict %s (%s), want leak on the allocated floor", last.Verdict, last.Reason)
	}
	if r, ok := e.Result(k); !ok || r.Verdict != Leak {
		t.Errorf("Result(%v) = %v, %v", k, r.Verdict, ok)
	}
}

func TestPIDReuseStartsFresh(t *testing.T) {
	e, _ := NewEngine(DefaultConfig())
	old := Key{PID: 42, Start: 100, UUID: "GPU-c"}
	feed(t, e, old, time.Hour, flat(mib), nil, nil)
	if r, _ := e.Result(old); r.Verdict != Steady {
		t.Fatalf("old process: %s, want steady", r.Verdict)
	}
	young := Key{PID: 42, Start: 999, UUID: "GPU-c"}
	r := e.Observe(Sample{Key: young, T: t0.Add(2 * time.Hour), Allocated: 50 * mib, HasAllocated: true})
	if r.Verdict != WarmingUp || len(r.Growth) != 0 {
		t.Errorf("new process on a reused PID: %s with %d growth entries, want a fresh warming_up", r.Verdict, len(r.Growth))
	}
	if _, ok := e.Result(old); ok {
		t.Error("the old process's result survived its PID being reused")
	}
}

// An unknown start (0: procfs unreadable, as while a process exits) is not a new
// process; the real-GPU trace showed a history wiped by one such sample.
func TestUnknownStartKeepsHistory(t *testing.T) {
	e, _ := NewEngine(DefaultConfig())
	k := Key{PID: 42, Start: 100, UUID: "GPU-c"}
	feed(t, e, k, time.Hour, flat(mib), nil, nil)
	unknown := Key{PID: 42, Start: 0, UUID: "GPU-c"}
	if r := e.Observe(Sample{Key: unknown, T: t0.Add(time.Hour + time.Second), Used: mib, HasUsed: true}); r.Verdict != Steady {
		t.Errorf("a sample with an unknown start reset the history: %s", r.Verdict)
	}
	if r, ok := e.Result(k); !ok || r.Verdict != Steady {
		t.Errorf("Result(%v) = %v, %v; want the kept steady history", k, r.Verdict, ok)
	}
}

func TestSweep(t *testing.T) {
	e, _ := NewEngine(DefaultConfig())
	e.Observe(Sample{Key: Key{PID: 1, UUID: "GPU-a"}, T: t0, Used: 1, HasUsed: true})
	e.Observe(Sample{Key: Key{PID: 2, UUID: "GPU-a"}, T: t0.Add(time.Minute), Used: 1, HasUsed: true})
	e.ObserveGPU(GPUSample{UUID: "GPU-a", T: t0, Used: 1, Total: 2})
	e.Sweep(t0.Add(90*time.Second), time.Minute)
	if p, g := e.Len(); p != 1 || g != 0 {
		t.Errorf("after sweep: %d processes %d GPUs, want 1 and 0", p, g)
	}
}

func TestGPUExhaustion(t *testing.T) {
	const total = 140 * 1024 * mib
	tests := []struct {
		name      string
		used      func(time.Duration) float64
		wantValid bool
		wantSec   float64
	}{
		{name: "flat: no forecast", used: flat(10 * 1024 * mib)},
		{name: "growing 100 MiB/min from minute 15", used: line(10*1024*mib, 100*mib, 15*time.Minute), wantValid: true,
			wantSec: (total - (10*1024*mib + 100*mib*45)) / (100 * MiBPerMinute)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := NewEngine(DefaultConfig())
			var r GPUResult
			for el := time.Duration(0); el <= time.Hour; el += 5 * time.Second {
				r = e.ObserveGPU(GPUSample{UUID: "GPU-a", T: t0.Add(el), Used: tc.used(el), Total: total})
			}
			if r.ExhaustionValid != tc.wantValid {
				t.Fatalf("ExhaustionValid = %v, want %v", r.ExhaustionValid, tc.wantValid)
			}
			if tc.wantValid && math.Abs(r.ExhaustionSeconds-tc.wantSec)/tc.wantSec > 0.01 {
				t.Errorf("ExhaustionSeconds = %.0f, want %.0f", r.ExhaustionSeconds, tc.wantSec)
			}
			if len(r.Growth) != 2 || r.Growth[0].Series != SeriesUsed {
				t.Errorf("growth = %+v, want used short and long", r.Growth)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		want string // the whole error; "" for valid
	}{
		{name: "default", mod: func(*Config) {}},
		{name: "zero bucket", mod: func(c *Config) { c.Bucket = 0 }, want: `trend: Bucket: 0s is out of range; use a positive duration like "30s"`},
		{name: "short window too short", mod: func(c *Config) { c.ShortWindow = 2 * time.Minute },
			want: "trend: ShortWindow: 2m is shorter than 5 buckets of 30s; use at least 2m30s"},
		{name: "short window at the least", mod: func(c *Config) { c.ShortWindow = 150 * time.Second }},
		{name: "window not a multiple", mod: func(c *Config) { c.ShortWindow = 100 * time.Second },
			want: "trend: ShortWindow: 1m40s is not a multiple of the bucket (30s); use 1m30s or 2m"},
		{name: "window below a bucket", mod: func(c *Config) { c.LongWindow = 10 * time.Second },
			want: "trend: LongWindow: 10s is not a positive multiple of the bucket (30s); use a multiple like 2m30s"},
		{name: "long shorter than short", mod: func(c *Config) { c.LongWindow = 5 * time.Minute },
			want: "trend: LongWindow: 5m is not longer than the short window (10m); make it longer than the short window"},
		{name: "long equal to short", mod: func(c *Config) { c.LongWindow = c.ShortWindow },
			want: "trend: LongWindow: 10m is not longer than the short window (10m); make it longer than the short window"},
		{name: "too many buckets", mod: func(c *Config) { c.Bucket = time.Second; c.ShortWindow = time.Minute; c.LongWindow = 48 * time.Hour },
			want: "trend: LongWindow: 48h holds more than 100000 buckets of 1s, the most kept per series; use a wider bucket or a shorter window"},
		{name: "zero rate", mod: func(c *Config) { c.MinRate = 0 },
			want: "trend: MinRate: 0 bytes per second would call any growth a leak; use a positive rate, like 8738 (about the default, 0.5 MiB per minute)"},
		{name: "NaN rate", mod: func(c *Config) { c.MinRate = math.NaN() }, want: "trend: MinRate: NaN bytes per second would call any growth a leak; use a positive rate, like 8738 (about the default, 0.5 MiB per minute)"},
		{name: "infinite rate", mod: func(c *Config) { c.MinRate = math.Inf(1); c.FastRate = math.Inf(1) },
			want: "trend: MinRate: +Inf bytes per second would never call growth a leak; use a finite rate, like 8738 (about the default, 0.5 MiB per minute)\n" +
				"trend: FastRate: +Inf bytes per second is out of range; use a finite rate no lower than the minimum rate, like 873813 (the default, 50 MiB per minute)"},
		{name: "fast below min", mod: func(c *Config) { c.FastRate = c.MinRate / 2 },
			want: "trend: FastRate: 4369.066666666667 bytes per second is out of range; use a finite rate no lower than the minimum rate, like 873813 (the default, 50 MiB per minute)"},
		{name: "slow above min", mod: func(c *Config) { c.SlowRate = 2 * c.MinRate },
			want: "trend: SlowRate: 17476.266666666666 bytes per second is out of range; use a positive rate no higher than the minimum rate, like 3495 (the default, 0.2 MiB per minute)"},
		{name: "fit above 1", mod: func(c *Config) { c.MinFit = 1.5 }, want: "trend: MinFit: 1.5 is out of range; use 0 to 1"},
		{name: "fit NaN", mod: func(c *Config) { c.MinFit = math.NaN() }, want: "trend: MinFit: NaN is out of range; use 0 to 1"},
		{name: "negative warm-up", mod: func(c *Config) { c.WarmUp = -time.Second },
			want: `trend: WarmUp: -1s is negative; use 0 to turn warm-up off, or a duration like "10m"`},
		{name: "negative max warm-up", mod: func(c *Config) { c.MaxWarmUp = -time.Second },
			want: `trend: MaxWarmUp: -1s is negative; use 0 (the default: six warm-ups) or a duration like "1h"`},
		{name: "negative min duration", mod: func(c *Config) { c.MinDuration = -time.Minute },
			want: `trend: MinDuration: -1m is negative; use 0 (the default) or a duration like "5m"`},
		// Every problem at once, so one run of --config.check fixes a file.
		{name: "several", mod: func(c *Config) { c.WarmUp = -time.Second; c.MinFit = 2 },
			want: "trend: WarmUp: -1s is negative; use 0 to turn warm-up off, or a duration like \"10m\"\ntrend: MinFit: 2 is out of range; use 0 to 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mod(&c)
			_, err := NewEngine(c)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("error = %v\nwant    %s", err, tc.want)
			}
		})
	}
}

// MaxWarmUp 0 is six warm-ups, and never less than the warm-up itself.
func TestMaxWarmUp(t *testing.T) {
	c := DefaultConfig()
	if got := c.maxWarmUp(); got != time.Hour {
		t.Errorf("default max warm-up %s, want 1h", got)
	}
	c.WarmUp = time.Minute
	if got := c.maxWarmUp(); got != 6*time.Minute {
		t.Errorf("max warm-up with a 1m warm-up %s, want 6m", got)
	}
	c.MaxWarmUp = 30 * time.Second
	if got := c.maxWarmUp(); got != time.Minute {
		t.Errorf("max warm-up below the warm-up: %s, want the warm-up (1m)", got)
	}
}

func TestVerdictsStable(t *testing.T) {
	got := Verdicts()
	want := []Verdict{Leak, CacheGrowth, UnattributedGrowth, Steady, WarmingUp}
	if len(got) != len(want) {
		t.Fatalf("Verdicts() = %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Verdicts() = %v, want %v", got, want)
		}
	}
}

// TestUsedOnlyTwoSteps: a process that pushes no allocator stats, whose NVML used bytes
// step up twice after the warm-up (the cache's high-water mark catching up with rarer,
// larger requests), is not a leak, although two steps in a window fit a line at R² up to
// 0.889; the same rise as a line, or as a staircase of small steps, is.
func TestUsedOnlyTwoSteps(t *testing.T) {
	const gib = 1024 * mib
	tests := []struct {
		name     string
		used     func(time.Duration) float64
		wantLeak bool
	}{
		{name: "two steps", used: func(el time.Duration) float64 {
			return step(gib, 30*mib, 14*time.Minute)(el) + step(0, 30*mib, 17*time.Minute+30*time.Second)(el)
		}},
		{name: "line", used: line(gib, 10*mib, 12*time.Minute), wantLeak: true},
		{name: "staircase, a step every 2 minutes", used: func(el time.Duration) float64 {
			if el < 12*time.Minute {
				return gib
			}
			return gib + 20*mib*math.Floor((el-12*time.Minute).Minutes()/2+1)
		}, wantLeak: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := NewEngine(DefaultConfig())
			leak := false
			for _, r := range feed(t, e, Key{PID: 1, UUID: "GPU-a"}, 40*time.Minute, nil, nil, tc.used) {
				leak = leak || r.Verdict == Leak
			}
			if leak != tc.wantLeak {
				t.Errorf("leak seen = %v, want %v", leak, tc.wantLeak)
			}
		})
	}
}

// The engine holds at most MaxKeys (pid, uuid) histories: a new key beyond is refused
// and counted, a known one keeps being tracked, and Sweep makes room again.
func TestEngineMaxKeys(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxKeys = 2
	e, err := NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	sample := func(pid uint32, uuid string, at time.Time) Sample {
		return Sample{Key: Key{PID: pid, UUID: uuid}, T: at, Used: 1, HasUsed: true}
	}
	for _, k := range []uint32{1, 2} {
		if _, ok := e.TryObserve(sample(k, "GPU-a", t0)); !ok {
			t.Fatalf("key %d refused below the bound", k)
		}
	}
	if r, ok := e.TryObserve(sample(3, "GPU-a", t0)); ok || r.Verdict != "" {
		t.Fatalf("third key: %+v, %v; want refused", r, ok)
	}
	if _, ok := e.TryObserve(sample(1, "GPU-a", t0.Add(time.Minute))); !ok {
		t.Error("a tracked key refused at the bound")
	}
	if n, _ := e.Len(); n != 2 || e.Refused() != 1 {
		t.Errorf("Len %d, Refused %d; want 2 and 1", n, e.Refused())
	}
	e.Sweep(t0.Add(2*time.Minute), 90*time.Second) // key 2 idle for 2m
	if _, ok := e.TryObserve(sample(3, "GPU-a", t0.Add(2*time.Minute))); !ok {
		t.Error("no room after Sweep")
	}
}

func TestCheckMaxKeys(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxKeys = 0
	if err := cfg.Validate(); err == nil || err.Error() != "trend: MaxKeys: 0 is out of range; use at least 1, like 2048" {
		t.Errorf("Validate() = %v", err)
	}
}

// scenario drives one process (and, when gpuTotal > 0, its GPU: the process's used plus
// other tenants) at a 5 s cadence and records each verdict change with its time.
type scenario struct {
	cfg                   Config
	d                     time.Duration
	alloc, reserved, used func(time.Duration) float64
	gpuTotal, gpuOther    float64
	every                 time.Duration // the sampling interval: 5 s unless set
	// inFlight, if set, is the client's count of requests in flight (Sample.InFlight),
	// from countsFrom on (the client counts from its first request).
	inFlight   func(time.Duration) uint32
	countsFrom time.Duration
}

type change struct {
	at      time.Duration
	verdict Verdict
	reason  string
}

type run struct {
	changes   []change
	reasons   []string        // every distinct reason given, in order
	forecasts []time.Duration // elapsed times at which a forecast was valid
	seconds   []float64       // its value then
}

func (sc scenario) run(t *testing.T) run {
	t.Helper()
	cfg := sc.cfg
	if cfg.Bucket == 0 {
		cfg = DefaultConfig()
	}
	e, err := NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out run
	k := Key{PID: 4242, Start: 1, UUID: "GPU-a"}
	last := Verdict("")
	every := sc.every
	if every == 0 {
		every = 5 * time.Second
	}
	for el := time.Duration(0); el <= sc.d; el += every {
		s := Sample{Key: k, T: t0.Add(el)}
		if sc.alloc != nil {
			s.Allocated, s.HasAllocated = sc.alloc(el), true
		}
		if sc.reserved != nil {
			s.Reserved, s.HasReserved = sc.reserved(el), true
		}
		if sc.used != nil {
			s.Used, s.HasUsed = sc.used(el), true
		}
		if sc.inFlight != nil && el >= sc.countsFrom {
			s.InFlight, s.HasInFlight = sc.inFlight(el), true
		}
		if sc.gpuTotal > 0 {
			g := e.ObserveGPU(GPUSample{UUID: k.UUID, T: s.T, Used: s.Used + sc.gpuOther, Total: sc.gpuTotal})
			if g.ExhaustionValid {
				out.forecasts = append(out.forecasts, el)
				out.seconds = append(out.seconds, g.ExhaustionSeconds)
			}
		}
		r := e.Observe(s)
		if r.Verdict != last {
			out.changes = append(out.changes, change{el, r.Verdict, r.Reason})
			last = r.Verdict
		}
		if n := len(out.reasons); n == 0 || out.reasons[n-1] != r.Reason {
			out.reasons = append(out.reasons, r.Reason)
		}
	}
	return out
}

// reasonSaid says whether any verdict's reason contained s.
func (r run) reasonSaid(s string) bool {
	for _, c := range r.reasons {
		if strings.Contains(c, s) {
			return true
		}
	}
	return false
}

// first is the first time v was the verdict (-1: never).
func (r run) first(v Verdict) time.Duration {
	for _, c := range r.changes {
		if c.verdict == v {
			return c.at
		}
	}
	return -1
}

// alerted reports the first change to a paging verdict at or after from (-1: none).
func (r run) alerted(from time.Duration) time.Duration {
	for _, c := range r.changes {
		if c.at >= from && (c.verdict == Leak || c.verdict == UnattributedGrowth) {
			return c.at
		}
	}
	return -1
}

// pagedWithin fails t unless r first pages within [onset+lo, onset+hi] and its newest
// reason contains reason (which rule paged, in the words on-call reads).
func (r run) pagedWithin(t *testing.T, onset, lo, hi time.Duration, reason string) {
	t.Helper()
	if a := r.alerted(0); a < onset+lo || a > onset+hi {
		t.Fatalf("flagged at %s, want %s–%s after %s:%s", a, lo, hi, onset, r)
	}
	if got := r.changes[len(r.changes)-1].reason; !strings.Contains(got, reason) {
		t.Errorf("reason %q, want one with %q", got, reason)
	}
}

// pagedSoonOrQuiet checks one case of a table of look-alikes and their twins: a leak
// pages within 2 minutes of onset, a look-alike never.
func (r run) pagedSoonOrQuiet(t *testing.T, name string, onset time.Duration, pages bool) {
	t.Helper()
	a := r.alerted(0)
	switch {
	case pages && (a < onset || a > onset+2*time.Minute):
		t.Errorf("%s flagged at %s, want within 2 minutes of %s:%s", name, a, onset, r)
	case !pages && a >= 0:
		t.Errorf("%s flagged at %s, want quiet:%s", name, a, r)
	}
}

// trapezoid is a load's share of its peak d minutes after it began: climbing until rise,
// held until hold, falling back to nothing at end.
func trapezoid(d, rise, hold, end float64) float64 {
	switch {
	case d < 0 || d >= end:
		return 0
	case d < rise:
		return d / rise
	case d < hold:
		return 1
	default:
		return (end - d) / (end - hold)
	}
}

// pagesEvery2s runs alloc on a roomy GPU sampled every 2 s until 30 minutes after at,
// and reports whether it paged, logging when (one draw of a random look-alike).
func pagesEvery2s(t *testing.T, alloc func(time.Duration) float64, at time.Duration, draw any) bool {
	t.Helper()
	sc := roomy(alloc, at+30*time.Minute)
	sc.every = 2 * time.Second
	r := sc.run(t)
	a := r.alerted(0)
	if a >= 0 {
		t.Logf("draw %v paged at %s:%s", draw, a, r)
	}
	return a >= 0
}

func (r run) String() string {
	var b strings.Builder
	for _, c := range r.changes {
		fmt.Fprintf(&b, "\n  %8s %-19s %s", c.at, c.verdict, c.reason)
	}
	return b.String()
}

// stairs is v0 plus size at each of the times.
func stairs(v0, size float64, at ...time.Duration) func(time.Duration) float64 {
	return func(el time.Duration) float64 {
		v := v0
		for _, a := range at {
			if el >= a {
				v += size
			}
		}
		return v
	}
}

func every(from, to, step time.Duration) []time.Duration {
	var out []time.Duration
	for a := from; a < to; a += step {
		out = append(out, a)
	}
	return out
}

// TestBoundedStaircase: a cache that fills in steps right after the warm-up (adapters
// loaded on demand, 200 MiB every 3 minutes until minute 26) is warming up while it
// fills and steady once it stops: the warm-up ends on evidence (floors flat), not at a
// fixed time. Its twin, which never stops, is a leak once the warm-up's bound is over.
// Fails with the old fixed 10-minute warm-up, which called the first as a leak.
func TestBoundedStaircase(t *testing.T) {
	const gib = 1024 * mib
	bounded := stairs(2*gib, 200*mib, every(2*time.Minute, 27*time.Minute, 3*time.Minute)...)
	r := scenario{d: 2 * time.Hour, alloc: bounded, reserved: func(el time.Duration) float64 { return bounded(el) + 512*mib },
		used: func(el time.Duration) float64 { return bounded(el) + gib }}.run(t)
	if at := r.alerted(0); at >= 0 {
		t.Errorf("bounded staircase alerted at %s:%s", at, r)
	}
	if steady := r.first(Steady); steady < 26*time.Minute || steady > 40*time.Minute {
		t.Errorf("first steady at %s, want once the floors were flat for a short window after minute 26:%s", steady, r)
	}

	forever := stairs(2*gib, 200*mib, every(2*time.Minute, 2*time.Hour, 3*time.Minute)...)
	r = scenario{d: 90 * time.Minute, alloc: forever, reserved: func(el time.Duration) float64 { return forever(el) + 512*mib },
		used: func(el time.Duration) float64 { return forever(el) + gib }}.run(t)
	if at := r.alerted(0); at < 0 || at > 61*time.Minute {
		t.Errorf("a staircase that never stops: first alert at %s, want by the warm-up's bound (1h):%s", at, r)
	}
}

// TestProbationEndsOnALine: a cache that loads adapters ever more rarely after a flat
// warm-up (97 MiB at minutes 15, 19, 22, 27, 31, 41, 53 and 65) is a young process's
// staircase on probation. Kept meanwhile at the hysteresis level, it paged at
// probation's end (34m, fit 0.88), where its window no longer qualified to start growth.
// At that close the rise must still qualify as growth does to start; this one never
// does again, and is steady. Its twin, the same steps every four minutes for good, is
// still a leak.
func TestProbationEndsOnALine(t *testing.T) {
	at := []time.Duration{15*time.Minute + 25*time.Second, 19*time.Minute + 16*time.Second, 22*time.Minute + 31*time.Second,
		26*time.Minute + 36*time.Second, 30*time.Minute + 45*time.Second, 40*time.Minute + 42*time.Second,
		52*time.Minute + 47*time.Second, 64*time.Minute + 56*time.Second}
	rarer := stairs(1024*mib, 96.9*mib, at...)
	r := scenario{d: 90 * time.Minute, alloc: rarer, reserved: func(el time.Duration) float64 { return rarer(el) + 512*mib }}.run(t)
	if a := r.alerted(0); a >= 0 {
		t.Errorf("steps ever rarer after the warm-up paged at %s:%s", a, r)
	}
	forever := stairs(1024*mib, 96.9*mib, every(15*time.Minute, 90*time.Minute, 4*time.Minute)...)
	r = scenario{d: 90 * time.Minute, alloc: forever, reserved: func(el time.Duration) float64 { return forever(el) + 512*mib }}.run(t)
	if a := r.alerted(0); a < 0 || a > 45*time.Minute {
		t.Errorf("the same steps every four minutes: first alert at %s, want by minute 45:%s", a, r)
	}
}

// TestProbationYieldsToOOM: a young process's staircase waits out its probation only
// where the GPU has room. Steps of 512 MiB every two minutes from minute 14, just after a
// flat warm-up, on a GPU 3 GiB from full: out of memory at minute 24; probation held it
// to minute 30 before round 39 (vram_eval fast_leak_near_full seed 10006, held out,
// never flagged). On a roomy GPU the same staircase still waits out its probation.
func TestProbationYieldsToOOM(t *testing.T) {
	steps := stairs(1024*mib, 512*mib, every(14*time.Minute, 40*time.Minute, 2*time.Minute)...)
	r := onGPU(steps, 3*1024*mib, 40*time.Minute).run(t)
	if a := r.alerted(0); a < 14*time.Minute || a > 22*time.Minute {
		t.Errorf("near full: first alert at %s, want between minute 14 and 22 (out of memory at 24):%s", a, r)
	}
	r = onGPU(steps, 100*1024*mib, 40*time.Minute).run(t)
	if a := r.alerted(0); a >= 0 && a < 26*time.Minute {
		t.Errorf("roomy: first alert at %s, want probation's short window first:%s", a, r)
	}
}

// TestRefillIsNotGrowth: engines outside the allocator rebuilt one by one after a
// clear, long after the warm-up, climb back at 170 MiB/min to the level they held for
// fifty minutes; that is a cache filling again, quiet (it paged at once before round 39:
// vram_eval -stress, x_cache_refill_unattributed, 5 of 100). Its twin keeps creating
// contexts past that level: a leak, paged once it passes it.
func TestRefillIsNotGrowth(t *testing.T) {
	fill := every(2*time.Minute, 20*time.Minute, 90*time.Second)
	refill := every(72*time.Minute, 90*time.Minute, 90*time.Second)
	contexts := func(at []time.Duration, cleared time.Duration) func(time.Duration) float64 {
		f := stairs(600*mib, 256*mib, at...)
		return func(el time.Duration) float64 {
			if el >= cleared {
				return f(el) - float64(len(fill))*256*mib
			}
			return f(el)
		}
	}
	for _, tc := range []struct {
		name  string
		steps []time.Duration
		leak  bool
	}{
		{"the same contexts rebuilt", append(fill, refill...), false},
		{"contexts created past the old level", append(fill, every(72*time.Minute, 150*time.Minute, 90*time.Second)...), true},
	} {
		un := contexts(tc.steps, 70*time.Minute)
		r := scenario{d: 150 * time.Minute,
			alloc:    func(time.Duration) float64 { return 1024 * mib },
			reserved: func(time.Duration) float64 { return 1536 * mib },
			used:     func(el time.Duration) float64 { return 1536*mib + un(el) },
		}.run(t)
		a := r.alerted(0)
		switch {
		case !tc.leak && a >= 0:
			t.Errorf("%s: paged at %s:%s", tc.name, a, r)
		case tc.leak && (a < 90*time.Minute || a > 100*time.Minute):
			t.Errorf("%s: first alert at %s, want once past the old level (minute 90) and by minute 100:%s", tc.name, a, r)
		}
	}
}

// TestVerdictReleases: once growth stops, the verdict is steady again within about one
// short window (the old long-window hysteresis kept leak for over an hour).
func TestVerdictReleases(t *testing.T) {
	stop := 50 * time.Minute
	leak := func(el time.Duration) float64 {
		return 65*mib + 20*mib*math.Max(0, (min(el, stop)-30*time.Minute).Minutes())
	}
	r := scenario{d: 2 * time.Hour, alloc: sawtooth(leak, 300*mib)}.run(t)
	at := r.alerted(30 * time.Minute)
	if at < 0 || at > 40*time.Minute {
		t.Fatalf("20 MiB/min leak from minute 30 flagged at %s, want within 10 minutes:%s", at, r)
	}
	var steadyAt time.Duration = -1
	for _, c := range r.changes {
		if c.at > at && c.verdict == Steady {
			steadyAt = c.at
			break
		}
	}
	if steadyAt < 0 || steadyAt-stop > DefaultConfig().ShortWindow {
		t.Errorf("steady again at %s, %s after the growth stopped; want within the short window:%s", steadyAt, steadyAt-stop, r)
	}
}

// TestStoppedLeakNotTakenUpAgain: once a leak stops, nothing pages again: the slow rule
// must not take up, on the long window's line, a leak the short rule let go as it
// stopped. Before, it did within minutes and held it for some 17 more (vram_eval
// leak_stops: 44 of 100 alerted again, up to 21 minutes after the stop). Leaks of
// 3–30 MiB/min for 10–30 minutes under requests of random size, sampled every 5 s.
func TestStoppedLeakNotTakenUpAgain(t *testing.T) {
	sw := DefaultConfig().ShortWindow
	for _, tc := range []struct {
		perMin float64
		dur    time.Duration
	}{{3, 30 * time.Minute}, {10, 20 * time.Minute}, {15, 30 * time.Minute}, {30, 10 * time.Minute}} {
		onset := 35 * time.Minute
		stop := onset + tc.dur
		leak := func(el time.Duration) float64 {
			return 900*mib + tc.perMin*mib*math.Max(0, (min(el, stop)-onset).Minutes())
		}
		// Requests of 0–400 MiB on top of the floor, one sample in two; the floor
		// itself jitters by a MiB or two.
		alloc := func(el time.Duration) float64 {
			r := rand.New(rand.NewPCG(uint64(el/time.Second), 7))
			v := leak(el) + 2*mib*r.Float64()
			if r.Float64() < 0.5 {
				v += 400 * mib * r.Float64()
			}
			return math.Round(v)
		}
		r := scenario{d: stop + 90*time.Minute, alloc: alloc, reserved: func(el time.Duration) float64 { return leak(el) + 512*mib }}.run(t)
		name := fmt.Sprintf("%g MiB/min for %s", tc.perMin, tc.dur)
		if a := r.alerted(onset); a < 0 || a > stop {
			t.Errorf("%s: flagged at %s, want before its stop at %s:%s", name, a, stop, r)
			continue
		}
		if a := r.alerted(stop + sw); a >= 0 {
			t.Errorf("%s: stopped at %s, alerted again at %s (%s after):%s", name, stop, a, a-stop, r)
		}
		for _, c := range r.changes {
			if c.at > stop+sw && c.verdict != Steady {
				t.Errorf("%s: %s at %s, %s after the stop; want steady:%s", name, c.verdict, c.at, c.at-stop, r)
				break
			}
		}
	}
}

// TestGCSawtooth: a gen-2 garbage collector frees 30 MiB/min of garbage every 6–14
// minutes: each ramp is a clean line (R² > 0.97), longer than the short window at
// times, but the floor comes back each cycle, so it is judged on its troughs and never
// paged. With a leak under it, the troughs rise and it is.
func TestGCSawtooth(t *testing.T) {
	periods := []float64{9, 6, 14, 7, 13, 11, 8, 12, 10, 14, 6, 9, 13, 7, 11, 12, 8, 10, 14, 9}
	var gcs []time.Duration
	at := 0.0
	for _, p := range periods {
		at += p
		gcs = append(gcs, time.Duration(at*float64(time.Minute)))
	}
	garbage := func(el time.Duration) float64 {
		last := time.Duration(0)
		for _, g := range gcs {
			if el >= g {
				last = g
			}
		}
		return 30 * mib * (el - last).Minutes()
	}
	gc := func(el time.Duration) float64 { return 2048*mib + garbage(el) }
	r := scenario{d: 3 * time.Hour, alloc: sawtooth(gc, 200*mib)}.run(t)
	if a := r.alerted(0); a >= 0 {
		t.Errorf("GC sawtooth alerted at %s:%s", a, r)
	}
	onset := 60 * time.Minute
	rising := func(el time.Duration) float64 { return gc(el) + 5*mib*math.Max(0, (el-onset).Minutes()) }
	r = scenario{d: 3 * time.Hour, alloc: sawtooth(rising, 200*mib)}.run(t)
	if a := r.alerted(0); a < onset || a > onset+45*time.Minute {
		t.Errorf("GC sawtooth over a 5 MiB/min leak from minute 60: first alert at %s, want after the onset, within three cycles or so:%s", a, r)
	}
}

// collections returns a garbage function: perMin MiB/min of garbage freed at once at the
// end of each period (minutes), as Python's gen-2 collector frees tensors kept by
// reference cycles.
func collections(perMin float64, periods ...float64) func(time.Duration) float64 {
	var gcs []time.Duration
	at := 0.0
	for _, p := range periods {
		at += p
		gcs = append(gcs, time.Duration(at*float64(time.Minute)))
	}
	return func(el time.Duration) float64 {
		last := time.Duration(0)
		for _, g := range gcs {
			if el >= g {
				last = g
			}
		}
		return perMin * mib * (el - last).Minutes()
	}
}

// TestGCSawtoothLongerCycles: a collector whose cycle is drawn anew each time, from 5
// to 25 minutes. Its second ramp is five times longer than its first, so it outlasts the
// envelope (as wide as the longest cycle seen) and fits a line: without the test of the
// sawtooth's next ramp (sawCycles) it paged at 20 minutes. Held, with its reason, it is
// judged on its troughs when it comes back. A leak under it lifts the troughs and pages;
// one of 120 MiB/min that starts part way up a ramp is steeper than the ramps can make
// and pages within minutes, not a cycle later (the troughs lag it by the cycle).
func TestGCSawtoothLongerCycles(t *testing.T) {
	garbage := collections(40, 5, 24, 7, 25, 9, 22, 6, 24, 10, 23)
	gc := func(el time.Duration) float64 { return 2048*mib + garbage(el) }
	r := scenario{d: 3 * time.Hour, alloc: sawtooth(gc, 200*mib)}.run(t)
	if a := r.alerted(0); a >= 0 {
		t.Errorf("a collector's sawtooth of 5- to 25-minute cycles alerted at %s:%s", a, r)
	}
	if !r.reasonSaid("the next cycle of a sawtooth") {
		t.Errorf("no reason said a ramp was held as the sawtooth's next cycle:%s", r)
	}

	onset := 61 * time.Minute // the troughs: 5, 29, 36, 61, 70 minutes
	rising := func(el time.Duration) float64 { return gc(el) + 5*mib*math.Max(0, (el-onset).Minutes()) }
	r = scenario{d: 3 * time.Hour, alloc: sawtooth(rising, 200*mib)}.run(t)
	if a := r.alerted(0); a < onset || a > onset+75*time.Minute {
		t.Errorf("the sawtooth over a 5 MiB/min leak from minute 61: first alert at %s, want after the onset, once the troughs rose:%s", a, r)
	}

	onset = 63 * time.Minute // 2 minutes up a ramp
	steep := func(el time.Duration) float64 { return gc(el) + 200*mib*math.Max(0, (el-onset).Minutes()) }
	r = scenario{d: 2 * time.Hour, alloc: sawtooth(steep, 200*mib)}.run(t)
	a := r.alerted(0)
	if a < onset || a > onset+5*time.Minute {
		t.Errorf("a 200 MiB/min leak 2 minutes up a ramp of 40 MiB/min: first alert at %s, want within 5 minutes of %s:%s", a, onset, r)
	}
	// And it stays flagged through the collections that follow (at 70, 92 and 98
	// minutes): each gives back the garbage, not the leak, and breaks the fast rule's run
	// of rising buckets while the troughs, a cycle behind, do not yet show the leak. Let
	// go there, the verdict went back to steady within minutes, too soon for
	// VRAMProcessLeak's five minutes (x_gc_sawtooth_fast_leak: 18 of 100 never fired).
	for _, c := range r.changes {
		if a >= 0 && c.at > a && c.verdict != Leak {
			t.Errorf("verdict %s at %s after the leak was flagged at %s:%s", c.verdict, c.at, a, r)
			break
		}
	}
}

// TestBusyBucketsDoNotSpoil: two consecutive buckets without an idle moment lift the
// floor by 2 GiB in the middle of a leak's window; the robust fit ignores them (least
// squares had delayed an NVML-only leak by 13 minutes this way).
func TestBusyBucketsDoNotSpoil(t *testing.T) {
	onset := 30 * time.Minute
	leak := line(1024*mib, 10*mib, onset)
	busy := func(el time.Duration) float64 {
		v := leak(el)
		if el >= 33*time.Minute && el < 34*time.Minute {
			v += 2048 * mib
		}
		return v
	}
	r := scenario{d: time.Hour, used: busy}.run(t)
	if a := r.alerted(0); a < onset || a > onset+10*time.Minute {
		t.Errorf("NVML-only 10 MiB/min leak with two busy buckets flagged at %s, want within 10 minutes of %s:%s", a, onset, r)
	}
	for _, c := range r.changes {
		if c.at > onset+10*time.Minute && c.verdict != Leak {
			t.Errorf("verdict %s at %s after the leak was flagged:%s", c.verdict, c.at, r)
		}
	}
}

// TestSaturatedBurst: a burst of long inputs keeps the server busy for five minutes; its
// floor rises with the load at 400 MiB/min for three minutes and drops back. On a roomy
// GPU it is not paged: there the fast rule wants a longer run of steep rises than this
// ramp (more than roomyBuckets), and the short rule needs more than half of its window
// rising.
func TestSaturatedBurst(t *testing.T) {
	at := 40 * time.Minute
	burst := func(el time.Duration) float64 {
		v := 4096.0 * mib
		switch d := el - at; {
		case d >= 0 && d < 3*time.Minute:
			v += 400 * mib * d.Minutes()
		case d >= 3*time.Minute && d < 5*time.Minute:
			v += 1200 * mib
		}
		return v
	}
	r := scenario{d: 90 * time.Minute, alloc: burst, reserved: flat(8192 * mib), used: flat(9000 * mib),
		gpuTotal: 140 * 1024 * mib, gpuOther: 600 * mib}.run(t)
	if a := r.alerted(0); a >= 0 {
		t.Errorf("saturated burst alerted at %s:%s", a, r)
	}
	if len(r.forecasts) > 0 {
		t.Errorf("forecast at %s for a burst", r.forecasts[0])
	}
}

// onGPU is a process whose allocated bytes are alloc, with a 256 MiB cache and 700 MiB
// outside the allocator, on a 140 GiB GPU that has free bytes left besides its working
// set at the start (the rest taken by others), for d.
func onGPU(alloc func(time.Duration) float64, free float64, d time.Duration) scenario {
	reserved := func(el time.Duration) float64 { return alloc(el) + 256*mib }
	used := func(el time.Duration) float64 { return reserved(el) + 700*mib }
	total := 140.0 * 1024 * mib
	return scenario{d: d, alloc: alloc, reserved: reserved, used: used, gpuTotal: total, gpuOther: total - used(0) - free}
}

// TestFastLeakNearlyFull: a 500 MiB/min leak on a GPU 5 GiB from full is flagged within
// two minutes by the fast rule (three rising buckets over a quiet floor), and the
// exhaustion forecast, from the leak's own pace against the memory left, comes with it:
// minutes before the GPU is full. The same leak on a roomy GPU waits until its rise has
// gone on for longer than a load ramp's (TestFastLeakRoomy).
func TestFastLeakNearlyFull(t *testing.T) {
	const gib = 1024 * mib
	onset := 30*time.Minute + 7*time.Second
	alloc := func(el time.Duration) float64 { return 8*gib + 500*mib*math.Max(0, (el-onset).Minutes()) }
	r := onGPU(alloc, 5*gib, 38*time.Minute).run(t)
	a := r.alerted(0)
	if a < onset || a > onset+2*time.Minute {
		t.Fatalf("fast leak near full flagged at %s, want within 2 minutes of %s:%s", a, onset, r)
	}
	if !strings.Contains(r.changes[len(r.changes)-1].reason, "buckets over a quiet floor") {
		t.Errorf("flagged by another rule: %s", r.changes[len(r.changes)-1].reason)
	}
	if len(r.forecasts) == 0 || r.forecasts[0] > a+time.Minute {
		t.Fatalf("forecast first at %v, want with the leak verdict at %s", r.forecasts, a)
	}
	// Full when the floor has eaten the 5 GiB and the 256 MiB cache: 10.5 min after onset.
	full := onset + time.Duration(float64(5*gib+256*mib)/(500*mib)*float64(time.Minute))
	pred := r.forecasts[0] + time.Duration(r.seconds[0]*float64(time.Second))
	if d := pred - full; d < -2*time.Minute || d > 2*time.Minute {
		t.Errorf("first forecast at %s says full at %s, truth %s", r.forecasts[0], pred, full)
	}

	rr := roomy(alloc, 50*time.Minute).run(t)
	if a := rr.alerted(0); a < onset+3*time.Minute || a > onset+10*time.Minute {
		t.Errorf("fast leak on a roomy GPU flagged at %s, want once the rise has gone on (after 3, within 10 minutes of %s):%s", a, onset, rr)
	}
}

// TestForecastAbsentOnFlushes: near a full GPU a healthy server's caching allocator
// flushes and regrows, so the GPU's used bytes swing by GiBs; nothing grows, so there is
// no forecast (the old GPU-level fit forecast one whenever the swing lined up).
func TestForecastAbsentOnFlushes(t *testing.T) {
	const gib = 1024 * mib
	swing := func(el time.Duration) float64 { // regrows 3 GiB over 4 minutes, flushed
		return 20*gib + 3*gib*math.Mod(el.Minutes(), 4)/4
	}
	r := scenario{d: 2 * time.Hour, alloc: sawtooth(flat(12*gib), 2*gib), reserved: swing,
		used: func(el time.Duration) float64 { return swing(el) + 700*mib }, gpuTotal: 140 * gib, gpuOther: 114 * gib}.run(t)
	if len(r.forecasts) > 0 {
		t.Errorf("forecast at %s (%.0f s) with nothing growing", r.forecasts[0], r.seconds[0])
	}
	if a := r.alerted(0); a >= 0 {
		t.Errorf("alert at %s:%s", a, r)
	}
}

// TestSlowLeak: 0.3 MiB/min (430 MiB a day) is below MinRate; the long window flags it
// within two hours of its onset, and a flat floor never.
func TestSlowLeak(t *testing.T) {
	onset := 20 * time.Minute
	r := scenario{d: 2*time.Hour + 30*time.Minute, alloc: sawtooth(line(2048*mib, 0.3*mib, onset), 300*mib)}.run(t)
	if a := r.alerted(0); a < onset || a > onset+2*time.Hour {
		t.Errorf("0.3 MiB/min leak flagged at %s, want within 2 h of %s:%s", a, onset, r)
	}
	r = scenario{d: 2*time.Hour + 30*time.Minute, alloc: sawtooth(flat(2048*mib), 300*mib)}.run(t)
	if a := r.alerted(0); a >= 0 {
		t.Errorf("flat floor alerted at %s:%s", a, r)
	}
}

// TestSlowLeakBusy: a very slow leak (0.3 MiB/min, 36 MiB in two hours) on a server
// mid-request in nine samples of ten, whose floors scatter by up to 64 MiB, is flagged by
// the slow rule within two hours of its onset; the same server without it stays quiet.
// Its rise is far under one floor's noise (sig ≈ 60 MiB) and far over the long
// envelope's, the least of many floors: measured against the first it was never a rise.
func TestSlowLeakBusy(t *testing.T) {
	onset := 20 * time.Minute
	busy := func(base func(time.Duration) float64) func(time.Duration) float64 {
		return func(el time.Duration) float64 {
			r := rand.New(rand.NewPCG(uint64(el/time.Second), 16))
			v := base(el) + 64*mib*r.Float64()
			if r.Float64() < 0.9 {
				v += 2048 * mib * r.Float64()
			}
			return math.Round(v)
		}
	}
	d := onset + 2*time.Hour + 10*time.Minute
	r := scenario{d: d, alloc: busy(line(2048*mib, 0.3*mib, onset))}.run(t)
	r.pagedWithin(t, onset, 0, 2*time.Hour, "across the long window")
	if r = (scenario{d: d, alloc: busy(flat(2048 * mib))}).run(t); r.alerted(0) >= 0 {
		t.Errorf("busy server without a leak flagged at %s:%s", r.alerted(0), r)
	}
}

// TestFreshCUDAContextShortScale: at the scaled settings of the real-GPU run (10 s
// buckets, 2-minute window, 1-minute warm-up), a fresh CUDA context's modules grow
// memory outside the allocator 520 → 680 MiB over the first two minutes, ever more
// slowly. The warm-up lasts until that stops; it is never unattributed_growth. (With the
// fixed 1-minute warm-up it was.)
func TestFreshCUDAContextShortScale(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Bucket, cfg.ShortWindow, cfg.LongWindow, cfg.WarmUp = 10*time.Second, 2*time.Minute, 4*time.Minute, time.Minute
	ctx := func(el time.Duration) float64 { // 160 MiB, the rate halving every 30 s, done by 2 min
		f := 1 - math.Pow(0.5, el.Seconds()/30)
		return 520*mib + 160*mib*math.Min(f/(1-math.Pow(0.5, 4)), 1)
	}
	alloc := sawtooth(flat(200*mib), 100*mib)
	reserved := flat(300 * mib)
	r := scenario{cfg: cfg, d: 15 * time.Minute, alloc: alloc, reserved: reserved,
		used: func(el time.Duration) float64 { return reserved(el) + ctx(el) }}.run(t)
	if a := r.alerted(0); a >= 0 {
		t.Errorf("fresh CUDA context alerted at %s:%s", a, r)
	}
	if s := r.first(Steady); s < 0 || s > 6*time.Minute {
		t.Errorf("steady at %s, want once the context stopped growing (by 6 min):%s", s, r)
	}
}

// TestFastRuleTellsLoadFromLeak: near a full GPU a burst of long inputs ramps the floor
// as steeply as a fast leak, but it stretches each bucket's samples (more requests in
// flight: the top rises faster than the floor), while a leak shifts them up as a whole.
// The burst must not page; the leak with the same floor pages within two minutes.
func TestFastRuleTellsLoadFromLeak(t *testing.T) {
	const gib = 1024 * mib
	onset := 30*time.Minute + 7*time.Second
	// 600 MiB/min for 2.5 minutes, held for 2, then gone: too short for the short rule
	// (TestSaturatedBurst), steep enough for the fast one.
	ramp := func(el time.Duration) float64 {
		switch x := (el - onset).Minutes(); {
		case x < 0 || x > 4.5:
			return 0
		case x < 2.5:
			return 600 * mib * x
		default:
			return 1500 * mib
		}
	}
	base := sawtooth(flat(8*gib), 300*mib) // requests of up to 300 MiB between idle moments
	// The burst: no idle moment, in-flight activations between the ramp and three times it.
	burst := func(el time.Duration) float64 {
		if r := ramp(el); r > 0 {
			phase := int(el/(5*time.Second)) % 4
			return 8*gib + r*(1+2*float64(phase)/3)
		}
		return base(el)
	}
	leak := func(el time.Duration) float64 {
		return base(el) + 600*mib*math.Max(0, (el-onset).Minutes())
	}
	for _, tc := range []struct {
		name  string
		alloc func(time.Duration) float64
		pages bool
	}{{"burst", burst, false}, {"leak", leak, true}} {
		// 9 GiB free besides the working set: at 600 MiB/min that is 15 minutes.
		onGPU(tc.alloc, 9*gib, 45*time.Minute).run(t).pagedSoonOrQuiet(t, tc.name, onset, tc.pages)
	}
}

// TestFastRuleUrgentPartWayUp: a steep leak on a GPU with more room than two short
// windows of it is not urgent at its onset; once the memory left shrinks below that, the
// fast rule pages although the floor before the newest buckets is the leak itself (it
// used to look only at the window before the newest three buckets, which was no longer
// quiet, and left the page to the short rule). Its requests take 3 GiB, so the rise
// is not clear of load (see TestFastLeakRoomy) before it is urgent.
func TestFastRuleUrgentPartWayUp(t *testing.T) {
	const gib = 1024 * mib
	onset := 30*time.Minute + 7*time.Second
	alloc := sawtooth(func(el time.Duration) float64 { return 8*gib + 500*mib*math.Max(0, (el-onset).Minutes()) }, 3*gib)
	// 15 GiB free, 3 of them for the largest request: about 24.5 minutes at 500 MiB/min,
	// urgent after about 4.5.
	// Once urgent; the reason says the GPU is about to fill, not a long run.
	onGPU(alloc, 15*gib, 45*time.Minute).run(t).pagedWithin(t, onset, 4*time.Minute, 5*time.Minute+30*time.Second,
		"buckets over a quiet floor, fast enough to fill the GPU soon")
}

// TestUnattributedEarly: memory outside the allocator does not follow the load in flight,
// so a rise there is judged on the newest half of the short window: a 20 MiB/min leak of
// raw allocations pages within five minutes of its onset, not the six or more the whole
// window takes; a flat unattributed series under a busy allocator stays quiet.
func TestUnattributedEarly(t *testing.T) {
	onset := 30*time.Minute + 7*time.Second
	alloc := sawtooth(flat(2048*mib), 600*mib)
	reserved := flat(3072 * mib)
	used := func(el time.Duration) float64 { return reserved(el) + line(700*mib, 20*mib, onset)(el) }
	r := scenario{d: 50 * time.Minute, alloc: alloc, reserved: reserved, used: used}.run(t)
	a := r.alerted(0)
	if a < onset || a > onset+5*time.Minute {
		t.Fatalf("flagged at %s, want within 5 minutes of %s:%s", a, onset, r)
	}
	if v := r.changes[len(r.changes)-1].verdict; v != UnattributedGrowth {
		t.Errorf("verdict %s, want %s", v, UnattributedGrowth)
	}
	quiet := scenario{d: 50 * time.Minute, alloc: alloc, reserved: reserved, used: func(el time.Duration) float64 { return reserved(el) + 700*mib }}.run(t)
	if a := quiet.alerted(0); a >= 0 {
		t.Errorf("flat unattributed alerted at %s:%s", a, quiet)
	}
}

// TestLeakFromStartAndFirstCollection: a leak from the first request rises smoothly at a
// steady pace from the start and is flagged a short window after the warm-up (20 min at
// the defaults; 15 on rounds 3 to 14), while a garbage collector's first ramp, just as
// smooth until its first collection at 13 or 17 minutes, is not flagged at all.
func TestLeakFromStartAndFirstCollection(t *testing.T) {
	leak := scenario{d: 40 * time.Minute, alloc: sawtooth(line(2048*mib, 12*mib, 0), 300*mib)}.run(t)
	if a := leak.alerted(0); a < 0 || a > 21*time.Minute {
		t.Errorf("leak from the start flagged at %s, want by 21 minutes:%s", a, leak)
	}
	// 40 MiB/min of garbage, collected every 13 min (the issue's cycles), and every 17
	// (a first ramp that outlasts half a short window past the warm-up: it paged at 15
	// minutes while a smooth rise could end the warm-up then).
	for _, cycle := range []float64{13, 17} {
		gc := func(el time.Duration) float64 {
			return 2048*mib + 40*mib*math.Mod(el.Minutes(), cycle)
		}
		r := scenario{d: 90 * time.Minute, alloc: sawtooth(gc, 300*mib)}.run(t)
		if a := r.alerted(0); a >= 0 {
			t.Errorf("garbage collector's sawtooth of %v-minute cycles alerted at %s:%s", cycle, a, r)
		}
	}
}

// roomy is a process whose allocated bytes are alloc on a 140 GiB GPU with only the
// driver's 600 MiB besides it: hours of headroom at any leak's pace.
func roomy(alloc func(time.Duration) float64, d time.Duration) scenario {
	sc := onGPU(alloc, 0, d)
	sc.gpuOther = 600 * mib
	return sc
}

// TestFastLeakRoomy: on a roomy GPU a steep leak pages by the fast rule once its rise has
// gone on for more than twice the fast rule's three buckets, from the quiet floor and
// beyond what the requests in flight take: 300 MiB/min under 600 MiB requests within 4.5
// minutes of its onset (the short rule takes 6 or more).
func TestFastLeakRoomy(t *testing.T) {
	onset := 30*time.Minute + 7*time.Second
	alloc := sawtooth(line(8192*mib, 300*mib, onset), 600*mib)
	// By the fast rule; the reason says a run clear of load, not a GPU about to fill.
	roomy(alloc, 45*time.Minute).run(t).pagedWithin(t, onset, 3*time.Minute, 4*time.Minute+30*time.Second,
		"buckets in a row over a quiet floor, beyond what load explains")
}

// TestFastLeakRoomyLargeRequests: a leak of 100 MiB/min, twice the fast rate, under
// requests of 600 MiB that leave the process at rest at irregular moments, pages by the
// fast rule within 5 minutes of its onset, before its rise passes what the requests
// take (6 minutes). Each bucket's floor is its first moment at rest, anywhere in the
// bucket, so the floor's rises jitter between nothing and two buckets of the leak: one
// short of the fast step must not end the run (see fastRule's steep), and a run whose
// buckets kept the quiet window's moments at rest is not the least load in flight
// (round 23: suite/leak_alloc_100mib 6m30s before, on all 100 seeds).
func TestFastLeakRoomyLargeRequests(t *testing.T) {
	onset := 30*time.Minute + 7*time.Second
	leak := line(8192*mib, 100*mib, onset)
	requests := func(rest func(i uint64) bool) func(time.Duration) float64 {
		return func(el time.Duration) float64 {
			i := uint64(el / (5 * time.Second))
			if rest(i) {
				return leak(el)
			}
			return leak(el) + 600*mib*float64(1+(i*40503)>>5%4)/4
		}
	}
	for _, tc := range []struct {
		name string
		rest func(i uint64) bool // whether the i-th 5-second sample is at rest
	}{
		{"one sample in three, at no fixed phase", func(i uint64) bool { return (i*2654435761)>>9%3 == 0 }},
		// A bucket in four at rest only at its end, the others only at their start: the
		// floor after it rises by a third of the leak's bucket, short of the fast step.
		{"late in one bucket in four", func(i uint64) bool {
			if i/6%4 == 1 {
				return i%6 >= 4
			}
			return i%6 <= 1
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			roomy(requests(tc.rest), 45*time.Minute).run(t).pagedWithin(t, onset, 3*time.Minute, 5*time.Minute,
				"buckets in a row over a quiet floor, beyond what load explains")
		})
	}
}

// TestFastRuleRoomyLookAlikes: on a roomy GPU, rises as steep and as rigid as a leak's
// that are not one: each is told apart by one of the fast rule's tests of a rise clear of
// load (see fastRule), and none pages.
func TestFastRuleRoomyLookAlikes(t *testing.T) {
	at := 40 * time.Minute
	// A collector's cycles of 6 minutes at 60 MiB/min, then one of 10: its ramp runs past
	// every earlier top, for longer than the fast rule's run, but no faster than the
	// ramps that came back.
	gcs := []time.Duration{}
	for g := 6 * time.Minute; g <= at; g += 6 * time.Minute {
		gcs = append(gcs, g)
	}
	gcs = append(gcs, gcs[len(gcs)-1]+10*time.Minute)
	gc := func(el time.Duration) float64 {
		last := time.Duration(0)
		for _, g := range gcs {
			if el >= g {
				last = g
			}
		}
		return 4096*mib + 60*mib*(el-last).Minutes()
	}
	// A batch of 1 GiB held at once, then 50 MiB more each bucket for 4 minutes as
	// larger requests land on it, all freed at the end: a step, not a leak's onset.
	stepCreep := func(el time.Duration) float64 {
		switch d := el - at; {
		case d < 0:
			return 4096 * mib
		case d < 4*time.Minute:
			return 5120*mib + 100*mib*d.Minutes()
		default:
			return 4096 * mib
		}
	}
	// A server with 2 GiB requests never idle for 3.5 minutes: its floor climbs 1 GiB
	// at 300 MiB/min and drops back. Less than its requests take: load.
	busy := func(el time.Duration) float64 {
		base := sawtooth(flat(4096*mib), 2048*mib)(el)
		if d := el - at; d >= 0 && d < 5*time.Minute {
			return base + 300*mib*math.Min(d.Minutes(), 3.5)
		}
		return base
	}
	// A collector every 10 minutes from minute 11, first seen 4 s into a cycle (4 MiB of
	// garbage): its first cycle has no trough before it to measure its pace from, so the
	// second is judged on its troughs, which do not rise.
	second := func(el time.Duration) float64 {
		last := -4 * time.Second
		for g := 11 * time.Minute; g <= el; g += 10 * time.Minute {
			last = g
		}
		return 4096*mib + 60*mib*(el-last).Minutes()
	}
	for _, tc := range []struct {
		name  string
		alloc func(time.Duration) float64
	}{{"collector's longest cycle", gc}, {"collector's second cycle", second}, {"step, then creep", stepCreep}, {"floor within the load", busy}} {
		r := roomy(tc.alloc, at+20*time.Minute).run(t)
		if a := r.alerted(0); a >= 0 {
			t.Errorf("%s flagged at %s, want quiet:%s", tc.name, a, r)
		}
	}
}

// TestAllocatedEarly: a leak of 10 MiB/min on the allocated floor under ordinary requests
// pages within five minutes of its onset, on the newest half of the short window, as a
// line (not held to the probation of a staircase after the warm-up); a rise at the fast
// rate on half a window is left to the fast rule (TestSaturatedBurst).
func TestAllocatedEarly(t *testing.T) {
	onset := 20*time.Minute + 7*time.Second
	alloc := sawtooth(line(2048*mib, 10*mib, onset), 600*mib)
	reserved := flat(4096 * mib)
	used := func(el time.Duration) float64 { return reserved(el) + 700*mib }
	r := scenario{d: 40 * time.Minute, alloc: alloc, reserved: reserved, used: used}.run(t)
	if a := r.alerted(0); a < onset || a > onset+5*time.Minute {
		t.Errorf("10 MiB/min leak flagged at %s, want within 5 minutes of %s:%s", a, onset, r)
	}
}

// TestSaturatedPlateau: a load that climbs for 3.2 minutes and holds for 5, the server
// never idle, with requests of up to 6000 MiB in flight (the floor is the least of them, 0.3
// to 1 of the load's peak): on the plateau the floor jumps up and down by hundreds of MiB
// from bucket to bucket. A robust line through the ramp and the plateau fits (R² about
// 0.85), but a leak's floor does not fall like that. Over ten draws of the requests at
// most two page (measured: two, six without the test of falls).
func TestSaturatedPlateau(t *testing.T) {
	at := 40 * time.Minute
	paged := 0
	for seed := uint64(1); seed <= 10; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		vals := map[time.Duration]float64{}
		alloc := func(el time.Duration) float64 {
			if v, ok := vals[el]; ok {
				return v
			}
			v := 4096.0 * mib
			if rng.Float64() < 0.5 {
				v += 600 * mib * rng.Float64()
			}
			load := trapezoid((el - at).Minutes(), 3.2, 8.4, 10.5)
			v += load * 6000 * mib * (0.3 + 0.7*rng.Float64())
			vals[el] = v
			return v
		}
		if pagesEvery2s(t, alloc, at, seed) {
			paged++
		}
	}
	if paged > 2 {
		t.Errorf("%d of 10 saturated plateaus paged, want at most 2", paged)
	}
}

// TestLoadRampStretched: a load that climbs for 3 minutes and holds for 6 on a roomy GPU,
// the server never idle, its floor lifted by the least load in flight at 100 MiB/min (the
// judged line stays below FastRate, so the test of falls does not apply), sampled every
// 2 s like the load_ramp class: a robust line through the quiet floor, the ramp and the
// hold fits, but the buckets of the ramp and the hold spread with the load (see
// stretched), and a leak's do not. Over twenty draws of the requests at most one pages
// (measured: none; 9 without the test; 4, all at the end of the hold, when the history
// held the spreads of one short window only, so that the older buckets compared were the
// climb). A leak of 1 MiB/min under the same ordinary traffic still pages within 10
// minutes on every draw.
func TestLoadRampStretched(t *testing.T) {
	at := 40 * time.Minute
	paged := 0
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		traffic := func(el time.Duration, vals map[time.Duration]float64) float64 {
			if v, ok := vals[el]; ok {
				return v
			}
			v := 0.0
			if rng.Float64() < 0.5 {
				v += 600 * mib * rng.Float64()
			}
			vals[el] = v
			return v
		}
		vals, loads := map[time.Duration]float64{}, map[time.Duration]float64{}
		alloc := func(el time.Duration) float64 {
			v := 4096*mib + traffic(el, vals)
			if l, ok := loads[el]; ok {
				return v + l
			}
			load := trapezoid((el - at).Minutes(), 3, 9, 11.25)
			// 100 MiB/min of floor for 3 minutes: the least in flight is 0.3 of the peak.
			l := load * 1000 * mib * (0.3 + 0.7*rng.Float64())
			loads[el] = l
			return v + l
		}
		if pagesEvery2s(t, alloc, at, seed) {
			paged++
		}

		onset := at + 7*time.Second
		vals = map[time.Duration]float64{}
		leak := func(el time.Duration) float64 { return line(4096*mib, 1*mib, onset)(el) + traffic(el, vals) }
		sc := roomy(leak, at+20*time.Minute)
		sc.every = 2 * time.Second
		r := sc.run(t)
		if a := r.alerted(0); a < onset || a > onset+10*time.Minute {
			t.Errorf("draw %d: 1 MiB/min leak flagged at %s, want within 10 minutes of %s:%s", seed, a, onset, r)
		}
	}
	if paged > 1 {
		t.Errorf("%d of 20 load ramps paged, want at most 1", paged)
	}
}

// TestUrgentRiseEven: near a full GPU, a saturated server whose floor (the least load in
// flight) climbs in uneven steps, 150 then 600 MiB a bucket, with its buckets as tight as
// before (rigid), is load: it does not page. A leak at the same average pace (375 MiB a
// bucket) climbs in even steps and pages within two minutes; one whose floor jitters
// (300 then 450 MiB) still pages. Without the even test the burst pages after 1.5 minutes.
func TestUrgentRiseEven(t *testing.T) {
	const gib = 1024 * mib
	onset := 30 * time.Minute // on a bucket boundary: each bucket holds one step
	base := sawtooth(flat(8*gib), 300*mib)
	steps := func(small, large float64, n int) func(time.Duration) float64 {
		return func(el time.Duration) float64 {
			if el < onset {
				return base(el)
			}
			j := int((el - onset) / (30 * time.Second))
			if n > 0 && j >= n+4 { // held for four buckets, then given back
				return base(el)
			}
			if n > 0 {
				j = min(j, n-1)
			}
			lvl := 0.0
			for i := 0; i <= j; i++ {
				if i%2 == 0 {
					lvl += small
				} else {
					lvl += large
				}
			}
			return base(el) + lvl
		}
	}
	for _, tc := range []struct {
		name  string
		alloc func(time.Duration) float64
		pages bool
	}{
		{"burst, uneven steps", steps(150*mib, 600*mib, 5), false},
		{"leak, even steps", steps(375*mib, 375*mib, 0), true},
		{"leak, jittering steps", steps(300*mib, 450*mib, 0), true},
	} {
		// 9 GiB free besides the working set: at 750 MiB/min about 12 minutes.
		onGPU(tc.alloc, 9*gib, 45*time.Minute).run(t).pagedSoonOrQuiet(t, tc.name, onset, tc.pages)
	}
}

// fill is a cache with a budget that fills from at, fast at first and ever slower:
// v0 + budget·(1 − e^(−t/τ)).
func fill(v0, budget float64, tau, at time.Duration) func(time.Duration) float64 {
	return func(el time.Duration) float64 {
		if el < at {
			return v0
		}
		return v0 + budget*(1-math.Exp(-float64(el-at)/float64(tau)))
	}
}

// TestSmoothFillSlowsDown: a cache of 200 MiB that fills smoothly after the warm-up
// (τ 5 minutes: 40 MiB/min at first, below the fast rule's pace) fits a clean line over
// a short window while it fills, but rises ever slower (see slowing), and stays quiet
// under ordinary traffic; a leak of 10 MiB/min under the same traffic keeps its pace and
// pages within 10 minutes (measured: without the test of slowing the fill pages at
// 31m30s).
func TestSmoothFillSlowsDown(t *testing.T) {
	at := 25 * time.Minute
	if r := roomy(sawtooth(fill(4096*mib, 200*mib, 5*time.Minute, at), 600*mib), 90*time.Minute).run(t); r.alerted(0) >= 0 {
		t.Errorf("a smooth fill paged at %s:%s", r.alerted(0), r)
	}
	r := roomy(sawtooth(line(4096*mib, 10*mib, at), 600*mib), 60*time.Minute).run(t)
	if a := r.alerted(0); a < at || a > at+10*time.Minute {
		t.Errorf("a 10 MiB/min leak paged at %s, want within 10 minutes of %s:%s", a, at, r)
	}
}

// TestSteepFillSlowsDown: on a roomy GPU a cache of 2 GiB filling with τ 4 minutes (512
// MiB/min at first) rises as steeply, as rigidly and for as many buckets as a fast leak
// when the fast rule could page on it, but its pace has fallen by a third by then (see
// slowing): it stays quiet, while a 300 MiB/min leak under the same traffic pages within
// 5 minutes (measured: without the test the fill pages at 39m). Both start after the
// young process's hold of steep rises (see youngHold), which would hold either.
func TestSteepFillSlowsDown(t *testing.T) {
	at := 35*time.Minute + 7*time.Second
	if r := roomy(sawtooth(fill(4096*mib, 2048*mib, 4*time.Minute, at), 600*mib), 70*time.Minute).run(t); r.alerted(0) >= 0 {
		t.Errorf("a steep fill paged at %s:%s", r.alerted(0), r)
	}
	r := roomy(sawtooth(line(4096*mib, 300*mib, at), 600*mib), 55*time.Minute).run(t)
	if a := r.alerted(0); a < at || a > at+5*time.Minute {
		t.Errorf("a 300 MiB/min leak paged at %s, want within 5 minutes of %s:%s", a, at, r)
	}
}

// generations adds to f the key-value caches of long generations: from each start for its
// length, a cache growing at its pace (MiB/min), freed at its end.
func generations(f func(time.Duration) float64, gens ...[3]float64) func(time.Duration) float64 {
	return func(el time.Duration) float64 {
		v := f(el)
		for _, g := range gens {
			at, d := time.Duration(g[0]*float64(time.Minute)), time.Duration(g[1]*float64(time.Minute))
			if el >= at && el < at+d {
				v += g[2] * mib * (el - at).Minutes()
			}
		}
		return v
	}
}

// TestLongGenerationPaceGivenBack: on a roomy GPU a server that allocates its key-value
// caches per request runs a 3-minute generation whose cache grows 300 MiB/min and is
// freed, then a 4.5-minute one at 450 MiB/min: the second rises for longer than the fast
// rule's run, rigidly, but no faster than twice what the series gave back, and stays
// quiet (it pages at 44m without the factor); a 900 MiB/min leak after the same first
// generation pages within 5 minutes.
func TestLongGenerationPaceGivenBack(t *testing.T) {
	base := sawtooth(flat(4096*mib), 600*mib)
	first := [3]float64{25, 3, 300}
	if r := roomy(generations(base, first, [3]float64{40, 4.5, 450}), 60*time.Minute).run(t); r.alerted(0) >= 0 {
		t.Errorf("the second generation paged at %s:%s", r.alerted(0), r)
	}
	onset := 40*time.Minute + 7*time.Second
	r := roomy(generations(sawtooth(line(4096*mib, 900*mib, onset), 600*mib), first), 50*time.Minute).run(t)
	if a := r.alerted(0); a < onset || a > onset+5*time.Minute {
		t.Errorf("a 900 MiB/min leak paged at %s, want within 5 minutes of %s:%s", a, onset, r)
	}
}

// climb is a server with idle moments (half its samples carry up to 600 MiB of one
// request) whose load then climbs from at, over rise, to a mean of peak requests in
// flight of up to req MiB each (Poisson, as many draws as samples, memoised: the engine
// may ask twice), holds for hold and falls back: once no sample is idle any more, its
// floor is the least load in flight and climbs with the load.
func climb(rng *rand.Rand, base func(time.Duration) float64, at, rise, hold time.Duration, peak, req float64) func(time.Duration) float64 {
	return busyClimb(rng, base, at, rise, hold, peak, req, 0.5)
}

// busyClimb is climb on a server whose ordinary traffic has a request in flight at a
// share busy of its samples.
func busyClimb(rng *rand.Rand, base func(time.Duration) float64, at, rise, hold time.Duration, peak, req, busy float64) func(time.Duration) float64 {
	vals := map[time.Duration]float64{}
	return func(el time.Duration) float64 {
		if v, ok := vals[el]; ok {
			return base(el) + v
		}
		v := 0.0
		if rng.Float64() < busy {
			v += 600 * mib * rng.Float64()
		}
		d, r, h := (el - at).Minutes(), rise.Minutes(), hold.Minutes()
		mean := 0.0
		switch {
		case d >= 0 && d < r:
			mean = peak * (1 - math.Cos(math.Pi*d/r)) / 2
		case d >= r && d < r+h:
			mean = peak
		case d >= r+h && d < 2*r+h:
			mean = peak * (1 + math.Cos(math.Pi*(d-r-h)/r)) / 2
		}
		for l, p := math.Exp(-mean), rng.Float64(); p > l; p *= rng.Float64() {
			v += req * mib * (0.2 + 0.8*rng.Float64())
		}
		vals[el] = v
		return base(el) + v
	}
}

// TestLoadClimbLosesIdleMoments: a server whose traffic climbs over an hour until it is
// never idle (a day's peak) lifts its floor with the load, smoothly, at a slow leak's
// pace, for as long as the load climbs; but its samples no longer come back to the floor
// (see idle), as they did while it had idle moments, and it stays quiet. A 3 MiB/min leak
// under the server's ordinary traffic keeps its idle moments and pages within 10
// minutes. Measured: without the test of idle moments 10 of 10 climbs paged.
func TestLoadClimbLosesIdleMoments(t *testing.T) {
	at := 30 * time.Minute
	paged := 0
	for seed := uint64(1); seed <= 10; seed++ {
		rng := rand.New(rand.NewPCG(seed, 17))
		alloc := climb(rng, flat(4096*mib), at, 60*time.Minute, 20*time.Minute, 20, 100)
		r := roomy(alloc, at+150*time.Minute).run(t)
		if r.alerted(0) >= 0 {
			t.Logf("climb %d paged at %s:%s", seed, r.alerted(0), r)
			paged++
		}
		if !r.reasonSaid("never idle") {
			t.Errorf("climb %d: no steady verdict said why the rising floor does not page:%s", seed, r)
		}
		onset := at + 7*time.Second
		leak := climb(rng, line(4096*mib, 3*mib, onset), at, 0, 0, 0, 100)
		roomy(leak, at+20*time.Minute).run(t).pagedWithin(t, onset, 0, 10*time.Minute, "allocated floor rising")
	}
	if paged > 0 {
		t.Errorf("%d of 10 load climbs paged, want none", paged)
	}
}

// TestSparseBusyClimb: the climb of TestLoadClimbLosesIdleMoments on a server sampled
// every 10 s whose ordinary traffic keeps a request in flight at 70 % of its samples, so
// that even its quiet hours come back to the floor only a third of the time: a stretch
// of half a short window (20 samples after each bucket's first) is due too few returns
// to say the idle moments went, and load in flight drawn anew came back to a floor by
// chance under the loose count (see history.idleRest). Then the peak held for an hour,
// whose floors scatter by the requests: the slow rule's long window is the climb, its
// newest quarter noise (see slowStart in track). At most the measured 3 of 20 may page;
// a 3 MiB/min leak under the server's ordinary traffic, sampled as sparsely, still pages
// within 10 minutes.
func TestSparseBusyClimb(t *testing.T) {
	at := 30 * time.Minute
	paged := 0
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 29))
		sc := roomy(busyClimb(rng, flat(4096*mib), at, 60*time.Minute, 60*time.Minute, 20, 100, 0.5), at+170*time.Minute)
		sc.every = 10 * time.Second
		if r := sc.run(t); r.alerted(0) >= 0 {
			t.Logf("climb %d paged at %s:%s", seed, r.alerted(0), r)
			paged++
		}
		onset := at + 7*time.Second
		leak := roomy(busyClimb(rng, line(4096*mib, 3*mib, onset), at, 0, 0, 0, 100, 0.5), at+20*time.Minute)
		leak.every = 10 * time.Second
		leak.run(t).pagedWithin(t, onset, 0, 10*time.Minute, "allocated floor rising")
	}
	// Measured: 3 of 20 (seeds 8, 11 and 13, the short rule on fits of 0.87–0.89 in the
	// climb or late in the hold); 13 of 20 with the loose count, stretches of at most a
	// short window and the slow rule started on a newest quarter of noise.
	if paged > 3 {
		t.Errorf("%d of 20 sparse busy climbs paged, want at most 3", paged)
	}
}

// TestSmallRequestsClimb: the climb of TestLoadClimbLosesIdleMoments with small requests
// (up to 25 MiB, a mean of 22 in flight at the peak) and no other traffic, sampled every
// 1–2 s. Once few samples are idle, a bucket's floor is the least of some thirty draws of
// one or two small requests: a few MiB above the floor, and as exact as a floor at rest,
// so a third of the buckets line up on the least load in flight as it climbs, while the
// buckets that still had an idle moment lie below that line at the floor. A leak's floor
// at rest is never under its own line (load only lifts a floor), so such a line is no
// floor at rest (see exactFit). Measured on the code before: 4 of 10 climbs sampled every
// second paged, 1 of 10 sampled every 2 s (and, the same way, vram_eval load_diurnal
// seeds 2021 and 2026, for 10.5 and 4.5 minutes).
func TestSmallRequestsClimb(t *testing.T) {
	at := 30 * time.Minute
	for _, every := range []time.Duration{time.Second, 2 * time.Second} {
		for seed := uint64(1); seed <= 10; seed++ {
			rng := rand.New(rand.NewPCG(seed, 31))
			sc := roomy(busyClimb(rng, flat(4096*mib), at, 45*time.Minute, 20*time.Minute, 22, 25, 0), at+130*time.Minute)
			sc.every = every
			if r := sc.run(t); r.alerted(0) >= 0 {
				t.Errorf("a climb of small requests sampled every %s (seed %d) paged at %s:%s", every, seed, r.alerted(0), r)
			}
		}
	}
}

// firstTraffic is a model loaded at rest (every sample its floor) until at, then serving
// a Poisson mean of mean requests in flight of 50–600 MiB each (memoised: the engine
// may ask twice): with mean 1.5 a sample is at rest one time in four and a 30-second
// bucket of six samples often has just one such, or none.
func firstTraffic(rng *rand.Rand, base func(time.Duration) float64, at time.Duration, mean float64) func(time.Duration) float64 {
	vals := map[time.Duration]float64{}
	return func(el time.Duration) float64 {
		if v, ok := vals[el]; ok {
			return base(el) + v
		}
		v := 0.0
		if el >= at {
			for l, p := math.Exp(-mean), rng.Float64(); p > l; p *= rng.Float64() {
				v += 50*mib + 550*mib*rng.Float64()
			}
		}
		vals[el] = v
		return base(el) + v
	}
}

// TestLeakWithFirstTraffic: a process deployed at night idles at its floor for an hour,
// then its first traffic arrives with a leak of 20 MiB/min (outputs kept per request).
// Its samples stop coming back to the floor as they did at rest (see idle), so the test
// of idle moments takes it for a server that is never idle; the client does not count
// its requests. But the buckets that had a moment at rest put their floor on the leak's
// line to within a few MiB, where a floor of load in flight scatters by the requests'
// size (see exactFit): it pages within 15 minutes, on those floors where the short rule
// does not (on the round-11 code 9 of 10 were not flagged in 40 minutes, one after 32).
// The same traffic without the leak stays quiet.
func TestLeakWithFirstTraffic(t *testing.T) {
	at := 60*time.Minute + 7*time.Second
	exact := 0
	for seed := uint64(1); seed <= 10; seed++ {
		rng := rand.New(rand.NewPCG(seed, 23))
		r := roomy(firstTraffic(rng, line(4096*mib, 20*mib, at), at, 1.5), at+40*time.Minute).run(t)
		if a := r.alerted(0); a < at || a > at+15*time.Minute {
			t.Errorf("seed %d: the leak with the first traffic flagged at %s, want within 15 minutes of %s:%s", seed, a, at, r)
		}
		if r.reasonSaid("lie on one line") {
			exact++
		}
		t.Logf("seed %d: flagged %s after the onset", seed, r.alerted(0)-at) // measured: 10m23s–13m23s
		quiet := roomy(firstTraffic(rng, flat(4096*mib), at, 1.5), at+90*time.Minute)
		if r := quiet.run(t); r.alerted(0) >= 0 {
			t.Errorf("seed %d: the first traffic without a leak paged at %s:%s", seed, r.alerted(0), r)
		}
	}
	if exact == 0 {
		t.Errorf("no leak paged on the floors inferred at rest: the test no longer exercises them")
	}
}

// TestLeakUnderSaturationNearFull: a 30 MiB/min leak that starts once a server is never
// idle any more is held while its process lost its idle moments (see TestLoadClimbLoses
// IdleMoments), but not where the GPU would run out within two short windows at its
// pace: with 3 GiB free besides the idle working set, the saturated load's floor and
// room for its largest request leave less than that, and it pages within 10 minutes of
// its onset, with a forecast, long before the GPU is full (without the exception 1h13m
// after its onset, 30 minutes before).
func TestLeakUnderSaturationNearFull(t *testing.T) {
	const gib = 1024 * mib
	at, onset := 30*time.Minute, 75*time.Minute+7*time.Second
	rng := rand.New(rand.NewPCG(5, 17))
	alloc := climb(rng, line(4096*mib, 30*mib, onset), at, 30*time.Minute, 300*time.Minute, 20, 100)
	free := 3.0 * gib
	full := onset + time.Duration(free/(30*mib)*float64(time.Minute))
	r := onGPU(alloc, free, full).run(t)
	r.pagedWithin(t, onset, 0, 10*time.Minute, "allocated floor rising")
	if len(r.forecasts) == 0 || r.forecasts[0] > onset+10*time.Minute {
		t.Errorf("forecast first at %v, want within 10 minutes of the onset %s", r.forecasts, onset)
	}
}

// TestYoungSteepRiseHeld: soon after its warm-up a process's steep rise on a GPU with room
// must go on for half a short window more before it pages (see youngHold): a cache of
// 2 GiB filling with τ 8 minutes from minute 14, which the fast rule's run and the short
// window take for a leak before it has slowed measurably, stays quiet (it pages at 18m
// without the hold); a 300 MiB/min leak from the same minute pages once the hold is over,
// saying meanwhile that it waits and why; and a leak that runs the GPU out within two
// short windows part way through the hold pages then, not after it.
func TestYoungSteepRiseHeld(t *testing.T) {
	at := 14*time.Minute + 7*time.Second
	base := func(f func(time.Duration) float64) func(time.Duration) float64 { return sawtooth(f, 600*mib) }
	if r := roomy(base(fill(4096*mib, 2048*mib, 8*time.Minute, at)), 60*time.Minute).run(t); r.alerted(0) >= 0 {
		t.Errorf("a young process's cache fill paged at %s:%s", r.alerted(0), r)
	}
	hold := time.Duration(youngHold * float64(DefaultConfig().ShortWindow))
	r := roomy(base(line(4096*mib, 300*mib, at)), 40*time.Minute).run(t)
	r.pagedWithin(t, at, hold, hold+5*time.Minute, "beyond what load explains")
	if !r.reasonSaid("not paged for") || !r.reasonSaid("more likely a cache filling") {
		t.Errorf("while held, no reason said it waits and why:%s", r)
	}
	// 7.5 GiB free at 300 MiB/min: roomy at the onset, within two short windows of full
	// (6000 MiB left) 5.6 minutes after it.
	urgent := onGPU(base(line(4096*mib, 300*mib, at)), 7.5*1024*mib, 40*time.Minute).run(t)
	if a := urgent.alerted(0); a < at || a > at+7*time.Minute {
		t.Errorf("a leak filling the GPU within two short windows flagged at %s, want within 7 minutes of %s, held no longer:%s", a, at, urgent)
	}
}

// TestFastLeakRoomyAtRest: where the client counts its requests, a steep leak on a roomy
// GPU pages within two minutes of its onset: its buckets keep the moments with no
// request in flight that the quiet window had, which load lifting the floor would take.
// That stands in for the longer run and the lift over the requests' size the fast rule
// wants without the counts (the same trace then pages later, TestFastLeakRoomy). With
// the counts, a generation whose request is in flight while its cache grows as steeply
// stays quiet; and in a young process a cache filling at rest as traffic first arrives
// (2 GiB, τ 15 min: it pages at 21m if the counts may clear it) stays quiet, and a leak
// waits for youngHold as without the counts.
func TestFastLeakRoomyAtRest(t *testing.T) {
	onset := 30*time.Minute + 7*time.Second
	counted := func(alloc func(time.Duration) float64, d time.Duration, load func(time.Duration) uint32) scenario {
		sc := roomy(alloc, d)
		sc.every, sc.inFlight = 2*time.Second, load
		return sc
	}
	leak := counted(sawtooth(line(8192*mib, 300*mib, onset), 600*mib), 40*time.Minute, sawtoothLoad)
	leak.run(t).pagedWithin(t, onset, 0, 2*time.Minute, "also at the moments the client reported no request in flight: not load")
	leak.inFlight = nil
	if r := leak.run(t); r.alerted(0) >= 0 && r.alerted(0) <= onset+2*time.Minute {
		t.Errorf("without the counts the leak paged at %s, within 2 minutes of %s: the test no longer shows what the counts add:%s", r.alerted(0), onset, r)
	}

	gen := [3]float64{30, 4.5, 450}
	start, end := time.Duration(gen[0]*float64(time.Minute)), time.Duration((gen[0]+gen[1])*float64(time.Minute))
	genLoad := func(el time.Duration) uint32 {
		if el >= start && el < end {
			return 1 + sawtoothLoad(el)
		}
		return sawtoothLoad(el)
	}
	if r := counted(generations(sawtooth(flat(8192*mib), 600*mib), gen), 50*time.Minute, genLoad).run(t); r.alerted(0) >= 0 {
		t.Errorf("a generation in flight while its cache grew paged at %s:%s", r.alerted(0), r)
	}

	young := 14*time.Minute + 7*time.Second
	if r := counted(sawtooth(fill(4096*mib, 2048*mib, 15*time.Minute, young), 600*mib), 60*time.Minute, sawtoothLoad).run(t); r.alerted(0) >= 0 {
		t.Errorf("a young process's cache fill at rest paged at %s:%s", r.alerted(0), r)
	}
	hold := time.Duration(youngHold * float64(DefaultConfig().ShortWindow))
	r := counted(sawtooth(line(4096*mib, 300*mib, young), 600*mib), 40*time.Minute, sawtoothLoad).run(t)
	r.pagedWithin(t, young, hold, hold+5*time.Minute, "")
}

// TestSparseSaturationGone: near a full GPU, a server at rest in three of every four
// samples, sampled every 10 s and counting its requests, saturates for four minutes: its
// floor climbs evenly and rigidly at 600 MiB/min with a request in flight at every
// sample, then drops back. Three buckets hold 9 samples, 6.75 rests due at the quiet
// share; none at rest is rarer for a leak (1 in 500) than idleGone allows, so the fast
// rule's test of idle moments gone holds (by the count of rests due alone it paged). The
// same climb as a leak, whose rests go on, still pages within two minutes.
func TestSparseSaturationGone(t *testing.T) {
	const gib = 1024 * mib
	at := 30 * time.Minute
	tick := func(el time.Duration) int { return int(el / (10 * time.Second)) }
	saturated := func(el time.Duration) bool { d := el - at; return d >= 0 && d < 4*time.Minute }
	busy := func(el time.Duration) uint32 { // one request in every fourth sample
		if tick(el)%4 == 0 {
			return 1
		}
		return 0
	}
	load := func(el time.Duration) uint32 {
		if saturated(el) {
			return 1
		}
		return busy(el)
	}
	climb := func(el time.Duration) float64 { return 600 * mib * math.Max((el-at).Minutes(), 0) }
	burst := func(el time.Duration) float64 {
		v := float64(8 * gib)
		if saturated(el) {
			v += climb(el)
		}
		if load(el) > 0 {
			v += float64(100+50*(tick(el)%3)) * mib // a request's activations
		}
		return v
	}
	leak := func(el time.Duration) float64 {
		v := 8*gib + climb(el)
		if busy(el) > 0 {
			v += float64(100+50*(tick(el)%3)) * mib
		}
		return v
	}
	for _, tc := range []struct {
		name  string
		alloc func(time.Duration) float64
		load  func(time.Duration) uint32
		pages bool
	}{{"saturated climb", burst, load, false}, {"leak", leak, busy, true}} {
		// 6 GiB free besides the working set: at 600 MiB/min 10 minutes, within two short windows.
		sc := onGPU(tc.alloc, 6*gib, 45*time.Minute)
		sc.every, sc.inFlight = 10*time.Second, tc.load
		sc.run(t).pagedSoonOrQuiet(t, tc.name, at, tc.pages)
	}
}

// TestSaturationFewRestsNearFull: the same climb as TestSparseSaturationGone where the
// client does not count its requests (the returns to the floor are inferred, see
// history.idleRest), a request in the last of every three samples: three buckets sampled
// every 10 s hold six samples after their firsts, half of them at rest when quiet, and
// none at rest among six is as rare for a leak whose idle moments go on at two thirds of
// that share as 1 in 11, no proof that they are gone (idleGone), but reason to wait a
// bucket (restThin), and the next, until the climb ends. Without the wait it paged at
// once. The leak, whose rests go on, pages within two minutes.
func TestSaturationFewRestsNearFull(t *testing.T) {
	const gib = 1024 * mib
	at := 30 * time.Minute
	tick := func(el time.Duration) int { return int(el / (10 * time.Second)) }
	saturated := func(el time.Duration) bool { d := el - at; return d >= 0 && d < 3*time.Minute }
	act := func(el time.Duration) float64 { return float64(100+50*(tick(el)%3)) * mib }
	climb := func(el time.Duration) float64 { return 600 * mib * math.Max((el-at).Minutes(), 0) }
	burst := func(el time.Duration) float64 {
		switch {
		case saturated(el):
			return 8*gib + climb(el) + act(el) // a request in flight at every sample
		case tick(el)%3 == 2:
			return 8*gib + act(el)
		}
		return 8 * gib
	}
	leak := func(el time.Duration) float64 {
		v := 8*gib + climb(el)
		if tick(el)%3 == 2 {
			v += act(el)
		}
		return v
	}
	// 6 GiB free besides the working set: at 600 MiB/min 10 minutes, within two short windows.
	nearFullCases(t, at, 6*gib, 10*time.Second, nearFullCase{"saturated climb", burst, false}, nearFullCase{"leak", leak, true})
}

// nearFullCase is one look-alike or leak of a table that nearFullCases runs.
type nearFullCase struct {
	name  string
	alloc func(time.Duration) float64
	pages bool
}

// nearFullCases runs each case for 45 minutes on a GPU free bytes from full besides its
// working set, sampled every every, and checks that a leak pages within two minutes of
// onset and a look-alike not at all.
func nearFullCases(t *testing.T, onset time.Duration, free float64, every time.Duration, cases ...nearFullCase) {
	t.Helper()
	for _, tc := range cases {
		sc := onGPU(tc.alloc, free, 45*time.Minute)
		sc.every = every
		sc.run(t).pagedSoonOrQuiet(t, tc.name, onset, tc.pages)
	}
}

// TestUrgentLeakUnderLargerRequests: a 600 MiB/min leak near a full GPU, sampled every
// 5 s and at rest in two samples of three, whose requests from its onset on happen to be
// larger than the quiet window's (600–900 MiB against 100–150): its buckets stretch, so
// the rigid test fails for as long as the requests stay large, but they keep their
// moments at rest, by the exact count, at the quiet window's share; near a full GPU that
// stands in for the rigid test (rested), and it pages within two minutes (without, the
// short rule flagged it 9m23s after its onset, with the GPU 12 minutes from full). Its
// look-alike, the same climb with a request in flight at every sample, stays quiet
// (nothing at rest: restThin, then idleGone).
func TestUrgentLeakUnderLargerRequests(t *testing.T) {
	const gib = 1024 * mib
	onset := 30*time.Minute + 7*time.Second
	tick := func(el time.Duration) int { return int(el / (5 * time.Second)) }
	climb := func(el time.Duration) float64 { return 600 * mib * math.Max((el-onset).Minutes(), 0) }
	req := func(el time.Duration) float64 {
		if el < onset {
			return float64(100+25*(tick(el)%3)) * mib
		}
		return float64(600+150*(tick(el)%3)) * mib
	}
	leak := func(el time.Duration) float64 {
		v := 8*gib + climb(el)
		if tick(el)%3 == 2 {
			v += req(el)
		}
		return v
	}
	saturated := func(el time.Duration) float64 {
		if el < onset || el >= onset+4*time.Minute {
			return leak(el) - climb(el)
		}
		return 8*gib + climb(el) + req(el) // a request in flight at every sample
	}
	// 7 GiB free besides the working set: at 600 MiB/min under 12 minutes.
	nearFullCases(t, onset, 7*gib, 5*time.Second, nearFullCase{"leak under larger requests", leak, true}, nearFullCase{"saturated climb", saturated, false})
}

// TestFirstTrafficFillAtRest: a model deployed at night, whose client counts its requests
// (from its first request() on, as the Python client does), idles for an hour past its
// warm-up. A steep leak at rest from its first request must go on for youngHold before it
// pages, as in a young process (see judge's newTraffic; it paged after 4 minutes without),
// saying meanwhile why it waits; where the counts began in the warm-up it pages within
// two minutes (TestFastLeakRoomyAtRest). The look-alike, the pools its first requests
// create (four steps of 73–94 MiB over four minutes, at moments the counts find none in
// flight), stays quiet; the shapes that paged without the hold are in leak/eval's
// TestFirstTrafficCounted.
func TestFirstTrafficFillAtRest(t *testing.T) {
	at := 60*time.Minute + 7*time.Second
	steps := []struct {
		after time.Duration
		size  float64
	}{{15 * time.Second, 86}, {55 * time.Second, 94}, {165 * time.Second, 73}, {235 * time.Second, 93}}
	pools := func(el time.Duration) float64 {
		v := 4096.0 * mib
		for _, s := range steps {
			if el >= at+s.after {
				v += s.size * mib
			}
		}
		return v
	}
	// One request in flight in every seventh sample from the first, of 200–450 MiB.
	load := func(el time.Duration) uint32 {
		if el >= at && int(el/(5*time.Second))%7 == 3 {
			return 1
		}
		return 0
	}
	served := func(base func(time.Duration) float64) func(time.Duration) float64 {
		return func(el time.Duration) float64 {
			if load(el) > 0 {
				return base(el) + float64(200+50*(int(el/(14*time.Second))%6))*mib
			}
			return base(el)
		}
	}
	counted := func(alloc func(time.Duration) float64, d time.Duration, load func(time.Duration) uint32) scenario {
		sc := roomy(alloc, d)
		sc.every, sc.inFlight, sc.countsFrom = 5*time.Second, load, at
		return sc
	}
	if r := counted(served(pools), at+40*time.Minute, load).run(t); r.alerted(0) >= 0 {
		t.Errorf("the pools of a model's first traffic paged at %s:%s", r.alerted(0), r)
	}
	none := func(time.Duration) uint32 { return 0 }
	hold := time.Duration(youngHold * float64(DefaultConfig().ShortWindow))
	r := counted(line(4096*mib, 300*mib, at), at+30*time.Minute, none).run(t)
	r.pagedWithin(t, at, hold, hold+5*time.Minute, "")
	if !r.reasonSaid("whose traffic is new") {
		t.Errorf("while held, no reason said why:%s", r)
	}
}

// TestFirstTrafficLongWindow: the H200 run of round 13 at the scaled settings of
// scripts/gpu/short-trace.yml (10 s buckets, windows 2m/4m, a 1-minute warm-up): a model
// loaded and idle for four minutes or so, then its first traffic, counted from its first
// request and never in flight at a push (the client samples at request boundaries), whose
// first requests create four workspaces (96, 64, 80 and 64 MiB over 110 s). The slow
// rule fitted them across a long window of the idle minutes before and paged 2m17s
// after the first request ("94.9 MiB/min across the long window"; here 255, 264 and 272 s
// in paged so): the long-window rules now start where the counts began, and the slow
// rule waits while the traffic is new. A leak of 20 MiB/min from the first request is
// still flagged.
func TestFirstTrafficLongWindow(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Bucket, cfg.ShortWindow, cfg.LongWindow, cfg.WarmUp = 10*time.Second, 2*time.Minute, 4*time.Minute, time.Minute
	spaces := []struct {
		after time.Duration
		size  float64
	}{{0, 96}, {30 * time.Second, 64}, {75 * time.Second, 80}, {110 * time.Second, 64}}
	none := func(time.Duration) uint32 { return 0 }
	for _, at := range []time.Duration{240 * time.Second, 255 * time.Second, 264 * time.Second, 272 * time.Second, 300 * time.Second} {
		pools := func(base func(time.Duration) float64) func(time.Duration) float64 {
			return func(el time.Duration) float64 {
				v := base(el) + float64(int(el/time.Second)%3)*0.1*mib // a request boundary's jitter
				for _, s := range spaces {
					if el >= at+s.after {
						v += s.size * mib
					}
				}
				return v
			}
		}
		sc := func(alloc func(time.Duration) float64) scenario {
			s := roomy(alloc, at+6*time.Minute)
			s.cfg, s.every, s.inFlight, s.countsFrom = cfg, time.Second, none, at
			return s
		}
		if r := sc(pools(flat(4096 * mib))).run(t); r.alerted(0) >= 0 {
			t.Errorf("first traffic at %s paged at %s:%s", at, r.alerted(0), r)
		}
		if r := sc(pools(line(4096*mib, 20*mib, at))).run(t); r.alerted(at) < 0 {
			t.Errorf("a leak from the first request at %s was not flagged:%s", at, r)
		}
	}
}

// TestCacheGrowthNotWhileAllocatedRises: reserved that rises at the pace of the
// allocations is not the cache growing. Allocations that climb 200 MiB every 5 minutes
// (two steps a short window: not yet a line) under a pool that reserves ahead of them
// smoothly at the same 40 MiB/min: the verdict must not say "while allocated is flat"
// beside an allocated floor rising 40 MiB a minute, but that both rise; nor may an
// unattributed growth over the same allocations.
func TestCacheGrowthNotWhileAllocatedRises(t *testing.T) {
	from := 20 * time.Minute
	steps := func(el time.Duration) float64 {
		if el < from {
			return 2048 * mib
		}
		return 2048*mib + 200*mib*math.Floor((el-from).Minutes()/5+1)
	}
	reserved := func(el time.Duration) float64 {
		return 2560*mib + 40*mib*max(el-from, 0).Minutes()
	}
	r := scenario{d: 50 * time.Minute, alloc: sawtooth(steps, 300*mib), reserved: reserved,
		used: func(el time.Duration) float64 { return reserved(el) + 600*mib }}.run(t)
	for _, c := range r.changes {
		if c.verdict == CacheGrowth {
			t.Errorf("cache_growth at %s while allocated rises with reserved: %q%s", c.at, c.reason, r)
		}
	}
	if !r.reasonSaid("and reserved with it") {
		t.Errorf("no verdict said allocated and reserved rise together:%s", r)
	}
	// Memory outside the allocator growing 20 MiB/min over the same allocations: the
	// verdict is unattributed growth, and its reason gives allocated's rise once its
	// judged window rises, not "flat".
	flatRes := func(el time.Duration) float64 { return steps(el) + 512*mib }
	u := scenario{d: 50 * time.Minute, alloc: sawtooth(steps, 300*mib), reserved: flatRes,
		used: func(el time.Duration) float64 { return flatRes(el) + 600*mib + 20*mib*max(el-from, 0).Minutes() }}.run(t)
	// Its first minutes read flat: the robust line through one step is flat until the
	// second; from then on the reason gives allocated's rise.
	if !u.reasonSaid("while allocated rises") {
		t.Errorf("no unattributed growth gave allocated's rise:%s", u)
	}
}

// TestSawtoothTroughsRise: a leak under a collector's sawtooth is flagged once two
// collections in a row came back higher than the one before, not once the judged
// window's line (three cycles wide) has turned: the issue's sawtooth with a 5 MiB/min
// leak from a collection at minute 60 paged 36 minutes after it before (the troughs at
// 68 and 80 minutes rose 40 and 60 MiB). It stays flagged through the collections that
// follow, and is steady again once a collection comes back no higher.
func TestSawtoothTroughsRise(t *testing.T) {
	garbage := collections(30, 9, 6, 14, 7, 13, 11, 8, 12, 8, 13, 14, 6, 9, 13, 7, 11)
	onset, stop := 60*time.Minute, 130*time.Minute
	rising := func(el time.Duration) float64 {
		return 2048*mib + garbage(el) + 5*mib*math.Max(0, (min(el, stop)-onset).Minutes())
	}
	r := scenario{d: 3 * time.Hour, alloc: sawtooth(rising, 200*mib)}.run(t)
	a := r.alerted(0)
	if a < onset || a > onset+25*time.Minute {
		t.Fatalf("the sawtooth over a 5 MiB/min leak from minute 60: first alert at %s, want within 25 minutes of the onset (two collections later):%s", a, r)
	}
	if !r.reasonSaid("troughs the collector's sawtooth comes back to") {
		t.Errorf("no reason named the troughs:%s", r)
	}
	var steadyAt time.Duration = -1
	for _, c := range r.changes {
		if c.at > a && c.verdict != Leak {
			if c.at < stop {
				t.Errorf("verdict %s at %s, before the leak stopped at %s:%s", c.verdict, c.at, stop, r)
			}
			steadyAt = c.at
			break
		}
	}
	// The collections after the stop: 139 and 151 minutes; the second comes back no
	// higher than the first.
	if steadyAt < 0 || steadyAt > 155*time.Minute {
		t.Errorf("steady again at %s, want by the second collection after the stop (151 minutes):%s", steadyAt, r)
	}
	if a := r.alerted(steadyAt + time.Second); steadyAt >= 0 && a >= 0 {
		t.Errorf("alerted again at %s after the stop:%s", a, r)
	}
}

// thirdAtRestLoad: sampled every 2 s, a process at rest in one sample of three, a
// request in flight in the others.
func thirdAtRestLoad(el time.Duration) uint32 {
	if int(el/(2*time.Second))%3 == 0 {
		return 0
	}
	return 1
}

// thirdAtRest adds thirdAtRestLoad's requests, of 200–600 MiB, on top of f.
func thirdAtRest(f func(time.Duration) float64) func(time.Duration) float64 {
	return func(el time.Duration) float64 {
		tick := int(el / (2 * time.Second))
		return f(el) + float64(thirdAtRestLoad(el))*(200+100*float64(tick%5))*mib
	}
}

// reloadBeside is base, with size more loaded beside it over a minute from at, both held
// three minutes, then the old freed: weights reloaded.
func reloadBeside(base, size float64, at time.Duration) func(time.Duration) float64 {
	return func(el time.Duration) float64 {
		switch d := el - at; {
		case d >= 0 && d < time.Minute:
			return base + size*d.Seconds()/60
		case d >= time.Minute && d < 4*time.Minute:
			return base + size
		}
		return base
	}
}

// TestReloadAtRestNotFast: where the client counts its requests, a model's new weights
// loaded beside the old at rest (6 GiB in 60 s from mid-bucket, both held 3 minutes, the
// old freed) lift three floors in a row by far more than the fast step, at rest; the
// third bucket's samples at rest stand still, the load being over, so the roomy fast
// rule does not take it for a leak (vram_eval -stress -load, x_model_reload: 24 → 13 of
// 100 one-bucket verdicts). A leak at the same pace, still rising within its newest
// bucket, pages within two minutes as before.
func TestReloadAtRestNotFast(t *testing.T) {
	at := 40*time.Minute + 12*time.Second
	reload := reloadBeside(8192*mib, 6144*mib, at)
	sc := roomy(thirdAtRest(reload), 60*time.Minute)
	sc.every, sc.inFlight = 2*time.Second, thirdAtRestLoad
	if r := sc.run(t); r.alerted(0) >= 0 {
		t.Errorf("weights reloaded at rest paged at %s:%s", r.alerted(0), r)
	}
	leak := roomy(thirdAtRest(line(8192*mib, 6144*mib, at)), 50*time.Minute)
	leak.every, leak.inFlight = 2*time.Second, thirdAtRestLoad
	leak.run(t).pagedWithin(t, at, 0, 2*time.Minute, "")
}

// TestReloadNotUrgent: near a full GPU the urgent fast rule pages on three floors that
// rose steeply and evenly, each its bucket's least sample, so it judges a load a bucket
// after it ended: 8 GiB of weights loaded beside the old in a minute, from 18 s into a
// bucket, lift the floors of the next three buckets by 1.6, 4 and 2.4 GiB while the
// third stands still. It paged there for one bucket (x_model_reload: 9 of 100 without
// the counts); the newest bucket must still rise within itself (lateGoes). A leak at
// the same pace still pages within two minutes, with its forecast.
func TestReloadNotUrgent(t *testing.T) {
	const gib = 1024 * mib
	at := 40*time.Minute + 18*time.Second
	reload := reloadBeside(8*gib, 8*gib, at)
	sc := onGPU(thirdAtRest(reload), 40*gib, 60*time.Minute)
	sc.every = 2 * time.Second
	if r := sc.run(t); r.alerted(0) >= 0 {
		t.Errorf("weights reloaded near a full GPU paged at %s:%s", r.alerted(0), r)
	}
	leak := onGPU(thirdAtRest(line(8*gib, 8*gib, at)), 40*gib, 45*time.Minute)
	leak.every = 2 * time.Second
	r := leak.run(t)
	r.pagedWithin(t, at, 0, 2*time.Minute, "fast enough to fill the GPU soon")
	if len(r.forecasts) == 0 {
		t.Errorf("no exhaustion forecast for a leak that fills the GPU in 5 minutes")
	}
}

// TestFirstLongGenerationConfirmed: on a roomy GPU the fast rule's run clear of load
// pages only once the bucket after it confirms the rise: a process's first generation
// longer than the run (4 minutes at 500 MiB/min, nothing given back before it to compare
// its pace with) ends within that bucket and stays quiet, where it paged for one bucket
// before (long_generation: 6 of 100 such verdicts); a leak at the same pace still pages
// within 5 minutes of its onset.
func TestFirstLongGenerationConfirmed(t *testing.T) {
	base := sawtooth(flat(4096*mib), 600*mib)
	gen := [3]float64{30 + 7.0/60, 4, 500}
	if r := roomy(generations(base, gen), 45*time.Minute).run(t); r.alerted(0) >= 0 {
		t.Errorf("a 4-minute generation paged at %s:%s", r.alerted(0), r)
	}
	onset := gen[0] * float64(time.Minute)
	roomy(sawtooth(line(4096*mib, 500*mib, time.Duration(onset)), 600*mib), 45*time.Minute).run(t).
		pagedWithin(t, time.Duration(onset), 3*time.Minute, 5*time.Minute, "beyond what load explains")
}

// TestSawtoothShortCycleTrough: a collection that comes soon after the one before, over a
// leak, comes back so much higher that the walk back from it climbs only the top of the
// ramp, fewer buckets than a cycle's ramp must rise; its ramp starts at the trough before
// (nothing fell since), and the troughs read it. The issue's sawtooth (30 MiB/min of
// garbage) with a 10 MiB/min leak from minute 52: the troughs at 61 and 66 minutes rose
// 90 and 50 MiB, and it pages by the next bucket after the second, where it waited for
// the collection at 79 minutes before (gc_sawtooth_rising_floor seed 16, 7 minutes later).
func TestSawtoothShortCycleTrough(t *testing.T) {
	garbage := collections(30, 12, 13, 12, 13, 11, 5, 13, 12, 12, 13, 12, 13)
	onset := 52 * time.Minute
	rising := func(el time.Duration) float64 {
		return 2048*mib + garbage(el) + 10*mib*math.Max(0, (el-onset).Minutes())
	}
	r := scenario{d: 100 * time.Minute, alloc: sawtooth(rising, 200*mib)}.run(t)
	if a := r.alerted(0); a < 66*time.Minute || a > 69*time.Minute {
		t.Fatalf("first alert at %s, want within 3 minutes of the collection at 66 minutes:%s", a, r)
	}
	if !r.reasonSaid("troughs the collector's sawtooth comes back to") {
		t.Errorf("no reason named the troughs:%s", r)
	}
}

// churn is a cache at capacity from v0: at each of at, the item of size out[i] is
// evicted and, 3 s later, one of in[i] loaded in its place.
func churn(v0 float64, at []time.Duration, out, in []float64) func(time.Duration) float64 {
	return func(el time.Duration) float64 {
		v := v0
		for i, a := range at {
			if el >= a {
				v -= out[i]
			}
			if el >= a+3*time.Second {
				v += in[i]
			}
		}
		return v
	}
}

// TestCacheChurnAtCapacity: adapters held at capacity, one evicted for another of a
// different size every 4 minutes, walk at random: the floor steps down as often as up,
// and three net steps up in a row (a 660 MiB rise in ten minutes, a staircase as steep as
// a leak's) are chance, not memory that stays. The same steps without the ones down are
// a leak in steps, which twoWay must leave to the short rule (the walks that paged
// before twoWay are held in eval's TestAdapterChurnWalks).
func TestCacheChurnAtCapacity(t *testing.T) {
	const gib = 1024 * mib
	at := every(20*time.Minute, 105*time.Minute, 4*time.Minute)
	sizes := []float64{300, 180, 420, 250, 390, 200, 330, 150, 260, 410, 240, 360, 190, 310, 230, 400, 170, 280, 350, 220, 300, 390, 260}
	out, in := make([]float64, len(at)), make([]float64, len(at))
	for i := range at {
		out[i], in[i] = sizes[i]*mib, sizes[i+1]*mib
	}
	// The walk's newest three swaps each take a larger item in for a smaller one.
	out[len(at)-3], in[len(at)-3] = 170*mib, 400*mib
	out[len(at)-2], in[len(at)-2] = 180*mib, 410*mib
	out[len(at)-1], in[len(at)-1] = 190*mib, 390*mib
	walk := churn(4*gib, at, out, in)
	r := scenario{d: 2 * time.Hour, alloc: walk, reserved: func(el time.Duration) float64 { return walk(el) + 512*mib },
		used: func(el time.Duration) float64 { return walk(el) + gib }}.run(t)
	if a := r.alerted(0); a >= 0 {
		t.Errorf("a cache at capacity swapping items alerted at %s:%s", a, r)
	}
	// Its twin: only the swaps that grew, none that shrank, from minute 20 on.
	for i := range at {
		if in[i] < out[i] {
			in[i] = out[i]
		}
	}
	grows := churn(4*gib, at, out, in)
	r = scenario{d: 2 * time.Hour, alloc: grows, reserved: func(el time.Duration) float64 { return grows(el) + 512*mib },
		used: func(el time.Duration) float64 { return grows(el) + gib }}.run(t)
	if a := r.alerted(0); a < 0 {
		t.Errorf("a cache that only grows in steps was never flagged:%s", r)
	}
}

// busyAtRest is a server at rest at a share rest of its samples (drawn once per sample,
// seed fixed), with a request of 100–900 MiB in flight at the others: base plus that
// request, and the client's count of requests in flight. At one in five some buckets of
// six samples have no moment at rest, and their floor stands on the least request in
// flight.
func busyAtRest(seed uint64, rest float64, base func(time.Duration) float64) (func(time.Duration) float64, func(time.Duration) uint32) {
	rng := rand.New(rand.NewPCG(seed, 1))
	reqs := map[int64]float64{}
	draw := func(el time.Duration) float64 {
		k := int64(el / (5 * time.Second))
		r, ok := reqs[k]
		if !ok {
			if rng.Float64() >= rest {
				r = (100 + 800*rng.Float64()) * mib
			}
			reqs[k] = r
		}
		return r
	}
	alloc := func(el time.Duration) float64 { return base(el) + draw(el) }
	load := func(el time.Duration) uint32 {
		if draw(el) == 0 {
			return 0
		}
		return 1 + uint32(int64(el/(5*time.Second))%3)
	}
	return alloc, load
}

// TestFastLeakBusyAtRest: on a roomy GPU, a server at rest one sample in five that
// counts its requests. A leak of 700 MiB/min pages within three minutes of its onset
// (1m23s–2m53s over the 8 draws) on its floors at rest alone (restRun): the buckets
// without a moment at rest hold the floor up by a request and break the fast rule's run,
// and the share of samples at rest needs seven buckets before it can say (before
// restRun: 2m53s–8m53s, 6 of the 8 over three minutes). A generation in flight throughout, whose cache grows as steeply for four
// minutes and is freed, lifts no floor at rest and stays quiet; so do weights reloaded
// at rest in shards (a rise as steep that stops within a bucket or two: the newest floor
// at rest must go on the older ones' line, and the newest bucket's moments at rest rise
// at its pace) and a collector's sawtooth of 120 MiB/min that piles up at rest, whose
// ramps the floors at rest gave back before (restBack; on a server at rest half the
// time, whose floors' noise is too small to hide its ramps: without restBack it paged).
func TestFastLeakBusyAtRest(t *testing.T) {
	onset := 30*time.Minute + 7*time.Second
	for seed := uint64(1); seed <= 8; seed++ {
		alloc, load := busyAtRest(seed, 0.2, line(8192*mib, 700*mib, onset))
		sc := roomy(alloc, 45*time.Minute)
		sc.inFlight = load
		r := sc.run(t)
		if a := r.alerted(0); a < onset || a > onset+3*time.Minute {
			t.Errorf("seed %d: flagged at %s, want within 3 minutes of %s:%s", seed, a, onset, r)
		}

		gen := [3]float64{30, 4, 700}
		start, end := 30*time.Minute, 34*time.Minute
		galloc, gload := busyAtRest(seed, 0.2, generations(flat(8192*mib), gen))
		sc = roomy(galloc, 50*time.Minute)
		sc.inFlight = func(el time.Duration) uint32 {
			if el >= start && el < end {
				return 1 + gload(el)
			}
			return gload(el)
		}
		if r := sc.run(t); r.alerted(0) >= 0 {
			t.Errorf("seed %d: a generation in flight while its cache grew paged at %s:%s", seed, r.alerted(0), r)
		}

		// Weights of 12 GiB reloaded beside the old at rest, in shards of 1.5 GiB every
		// 6 s from minute 40 (42 s), the old freed 3 minutes later: a rise at rest as
		// steep as any leak's that stops within a bucket or two.
		shard := func(el time.Duration) float64 {
			v := 8192.0 * mib
			if el >= 40*time.Minute {
				v += 1536 * mib * math.Min(float64((el-40*time.Minute)/(6*time.Second))+1, 8)
			}
			if el >= 43*time.Minute {
				v -= 12 * 1024 * mib
			}
			return v
		}
		ralloc, rload := busyAtRest(seed, 0.2, shard)
		sc = roomy(ralloc, 60*time.Minute)
		sc.inFlight = rload
		if r := sc.run(t); r.alerted(0) >= 0 {
			t.Errorf("seed %d: a reload at rest paged at %s:%s", seed, r.alerted(0), r)
		}

		gc := func(el time.Duration) float64 {
			return 8192*mib + 120*mib*math.Mod(el.Minutes()+float64(seed), 8)
		}
		calloc, cload := busyAtRest(seed, 0.5, gc)
		sc = roomy(calloc, 70*time.Minute)
		sc.inFlight = cload
		if r := sc.run(t); r.alerted(0) >= 0 {
			t.Errorf("seed %d: a collector's sawtooth at rest paged at %s:%s", seed, r.alerted(0), r)
		}
	}
}

// TestUrgentLeakUnderHeldRequest: a 600 MiB/min leak near a full GPU whose onset a
// request of 1–1.8 GiB spans (its size varies as it runs), held from 30 s before it to
// 2.5 minutes after (requests last; the server is otherwise at rest in two samples of
// three). The held request lifts the floors of its buckets by its size and stretches
// them, so they neither pass the rigid test nor keep moments at rest; when it ends the
// floor falls onto the leak's line, and the steep run starts only there, with the leak's
// first minutes in the short window before it. The fast rule bridges the held buckets
// back to the quiet floor (see bridge) and pages within four and a half minutes of the
// onset, with the GPU 12 minutes from full (without the bridge the short rule flagged it
// 6m53s after its onset). The same held request without the leak stays quiet.
func TestUrgentLeakUnderHeldRequest(t *testing.T) {
	const gib = 1024 * mib
	onset := 30*time.Minute + 7*time.Second
	tick := func(el time.Duration) int { return int(el / (5 * time.Second)) }
	load := func(el time.Duration) float64 {
		switch {
		case el >= onset-30*time.Second && el < onset+150*time.Second:
			return float64(1050+100*(tick(el)*7%8)) * mib // held; its size varies as it runs
		case tick(el)%3 == 2:
			return float64(100+25*(tick(el)%4)) * mib
		}
		return 0
	}
	leak := func(el time.Duration) float64 { return 8*gib + 600*mib*math.Max((el-onset).Minutes(), 0) + load(el) }
	healthy := func(el time.Duration) float64 { return 8*gib + load(el) }
	for _, tc := range []struct {
		name  string
		alloc func(time.Duration) float64
		by    time.Duration // -1: quiet
	}{{"leak under a held request", leak, 270 * time.Second}, {"the held request alone", healthy, -1}} {
		sc := onGPU(tc.alloc, 7*gib, 45*time.Minute)
		sc.every = 5 * time.Second
		r := sc.run(t)
		a := r.alerted(0)
		switch {
		case tc.by < 0 && a >= 0:
			t.Errorf("%s flagged at %s, want quiet:%s", tc.name, a, r)
		case tc.by >= 0 && (a < onset || a > onset+tc.by):
			t.Errorf("%s flagged at %s, want within %s of %s:%s", tc.name, a, tc.by, onset, r)
		}
	}
}
