package trend

import (
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
		{name: "allocated leak 10 MiB/min", alloc: line(65*mib, 10*mib, 0), reserved: line(gib, 10*mib, 0), used: line(gib+600*mib, 10*mib, 0), want: Leak, firstWantWithinMinutes: 15},
		{name: "used-only leak", used: line(gib, 20*mib, 0), want: Leak, firstWantWithinMinutes: 15},
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
		{name: "growing 100 MiB/min", used: line(10*1024*mib, 100*mib, 0), wantValid: true,
			wantSec: (total - (10*1024*mib + 100*mib*60)) / (100 * MiBPerMinute)},
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
		want string // substring of the error; "" for valid
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
		{name: "NaN rate", mod: func(c *Config) { c.MinRate = math.NaN() }, want: "trend: MinRate: NaN bytes per second would call any growth a leak"},
		{name: "infinite rate", mod: func(c *Config) { c.MinRate = math.Inf(1) }, want: "trend: MinRate: +Inf bytes per second would never call growth a leak"},
		{name: "fit above 1", mod: func(c *Config) { c.MinFit = 1.5 }, want: "trend: MinFit: 1.5 is out of range; use 0 to 1"},
		{name: "fit NaN", mod: func(c *Config) { c.MinFit = math.NaN() }, want: "trend: MinFit: NaN is out of range; use 0 to 1"},
		{name: "negative warm-up", mod: func(c *Config) { c.WarmUp = -time.Second },
			want: `trend: WarmUp: -1s is negative; use 0 to turn warm-up off, or a duration like "10m"`},
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
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
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

// TestFastWindow: a fast leak is flagged from the fast window (half the short window)
// minutes before the short window alone would, and stays flagged; a slow leak still
// waits for the short window; a short run of rising floors inside a flat, noisy series
// does not pass (the short window must agree at the hysteresis level).
func TestFastWindow(t *testing.T) {
	onset := 30 * time.Minute
	firstLeak := func(alloc func(time.Duration) float64) (time.Duration, bool) {
		e, _ := NewEngine(DefaultConfig())
		rs := feed(t, e, Key{PID: 1, UUID: "GPU-a"}, time.Hour, alloc, nil, nil)
		var at time.Duration = -1
		for i, r := range rs {
			el := time.Duration(i) * time.Minute
			if r.Verdict == Leak && at < 0 {
				at = el - onset
			}
			if at >= 0 && r.Verdict != Leak {
				return at, false // flapped back
			}
		}
		return at, at >= 0
	}
	fast, ok := firstLeak(sawtooth(line(65*mib, 20*mib, onset), 300*mib))
	if !ok || fast > 5*time.Minute {
		t.Errorf("20 MiB/min leak: flagged %s after onset (stable %v), want within 5 minutes and stable", fast, ok)
	}
	slow, ok := firstLeak(sawtooth(line(65*mib, 0.6*mib, onset), 300*mib))
	if !ok || slow < 6*time.Minute {
		t.Errorf("0.6 MiB/min leak (below the fast window's rate): flagged %s after onset, want only once the short window shows it", slow)
	}

	// A flat floor with 20 MiB of jitter, except five minutes of floors rising in a clean
	// line by 15 MiB that then drop back: a perfect fit on the fast window, none on the
	// short one.
	bump := func(el time.Duration) float64 {
		b := int64(el / (30 * time.Second))
		v := 65*mib + float64(rand.New(rand.NewPCG(uint64(b), 7)).IntN(21))*mib
		if el >= 40*time.Minute && el < 45*time.Minute {
			v = 65*mib + 3*mib*(el-40*time.Minute).Minutes()
		}
		return v
	}
	e, _ := NewEngine(DefaultConfig())
	for _, r := range feed(t, e, Key{PID: 2, UUID: "GPU-a"}, time.Hour, bump, nil, nil) {
		if r.Verdict == Leak {
			t.Fatalf("a five-minute run of rising floors in noise was called a leak: %s", r.Reason)
		}
	}
}

// TestGPUForecastWarmUp: a GPU whose server warms its cache up (steps in the first
// minutes, then flat) gets no forecast at any time; a steady leak gets one within a
// short window of its onset, and, from the first sample, once the warm-up is over.
func TestGPUForecastWarmUp(t *testing.T) {
	const gib = 1024 * mib
	const total = 140 * gib
	cfg := DefaultConfig()
	warm := func(el time.Duration) float64 { // 0.9 GiB in six steps over 3 minutes, then flat
		v := float64(2 * gib)
		for i := range 6 {
			if el >= time.Duration(i)*30*time.Second {
				v += 150 * mib
			}
		}
		return v
	}
	tests := []struct {
		name      string
		used      func(time.Duration) float64
		wantFirst time.Duration // -1: never
	}{
		{name: "cache warm-up then plateau", used: warm, wantFirst: -1},
		{name: "leak of 50 MiB/min from minute 30", used: func(el time.Duration) float64 {
			return warm(el) + math.Max(el.Minutes()-30, 0)*50*mib
		}, wantFirst: 30*time.Minute + cfg.ShortWindow},
		{name: "leak of 20 MiB/min from the start", used: func(el time.Duration) float64 {
			return warm(el) + el.Minutes()*20*mib
		}, wantFirst: cfg.WarmUp + time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := NewEngine(cfg)
			first := time.Duration(-1)
			for el := time.Duration(0); el <= time.Hour; el += 5 * time.Second {
				r := e.ObserveGPU(GPUSample{UUID: "GPU-a", T: t0.Add(el), Used: tc.used(el), Total: total})
				if r.ExhaustionValid && first < 0 {
					first = el
				}
				if r.ExhaustionValid && el < cfg.WarmUp {
					t.Fatalf("forecast at %s, during the %s warm-up", el, cfg.WarmUp)
				}
			}
			switch {
			case tc.wantFirst < 0 && first >= 0:
				t.Errorf("forecast at %s on a GPU that stops growing", first)
			case tc.wantFirst >= 0 && (first < 0 || first > tc.wantFirst):
				t.Errorf("first forecast at %s, want by %s", first, tc.wantFirst)
			}
		})
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
