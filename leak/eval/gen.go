// Package eval is the leak detector's proving ground: a deterministic generator of
// labelled traces that reproduce what was measured on real serving loops (an H200,
// PyTorch, see ../../shared/DESIGN.md), and a scorer that replays every labelled trace
// (synthetic or recorded on a real GPU) through the detector and through the naive
// PromQL rule it replaces, and reports precision, recall, false-positive rate and
// detection delay for both.
package eval

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/vram-exporter/vram_exporter/leak/trace"
	"github.com/vram-exporter/vram_exporter/leak/trend"
)

const mib = 1024 * 1024

// Epoch is the start time of every synthetic trace.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// LeakKind says where a synthetic leak grows.
type LeakKind string

const (
	NoLeak           LeakKind = ""
	LinearLeak       LeakKind = "linear"       // allocated floor, straight line
	StepLeak         LeakKind = "step"         // allocated floor, a step every StepEvery
	UnattributedLeak LeakKind = "unattributed" // memory outside the allocator, straight line
	// StairLeak is a staircase that does not plateau: the leak is in Steps, from Onset on,
	// at Rate MiB/min on average (unattributed_growth when every step is outside the
	// allocator of a process that pushes its stats).
	StairLeak LeakKind = "stairs"
)

// Spec describes one synthetic trace. The model of one serving process, per sample:
//
//	allocated    = AllocBase + leak(t) + burst(t) + activation   (activation: with
//	               probability Busy a request is in flight, uniform in [0, ActPeak])
//	reserved     = max(previous reserved, allocated rounded up to 2 MiB + warm-up cache
//	               steps + dynamic-shape steps): the caching allocator never gives back
//	unattributed = UnattrBase + warm-up steps (+ leak for UnattributedLeak)
//	used         = reserved + unattributed (what NVML reports for the process)
//
// plus one GPU line per sample (gpu_used = used + 600 MiB of other tenants/driver).
// A process that pushes nothing (Push false) writes only used.
type Spec struct {
	Name     string
	Note     string
	Seed     uint64
	Duration time.Duration
	Cadence  time.Duration

	Push bool // the process pushes allocator stats (allocated, reserved)

	AllocBase float64 // MiB
	ActPeak   float64 // MiB, request activations
	Busy      float64 // 0..1, share of samples taken mid-request
	FloorJit  float64 // MiB, uniform jitter on the allocated floor (short-lived tensors)

	CacheWarm  float64 // MiB of cache added in steps during the first WarmSpan
	UnattrBase float64 // MiB
	UnattrWarm float64 // MiB added in steps during the first WarmSpan
	WarmSpan   time.Duration

	Leak      LeakKind
	Onset     time.Duration
	Rate      float64 // MiB/min for linear leaks
	StepSize  float64 // MiB per step for step leaks
	StepEvery time.Duration

	BurstAt   time.Duration // 0: none
	BurstSize float64       // MiB held for BurstHold
	BurstHold time.Duration

	DynShapes float64       // MiB of reserved added by new shapes over DynOver
	DynOver   time.Duration // shape arrivals slow down quadratically: a plateau

	RestartAt time.Duration // 0: none; the PID is reused by a new process

	// The fields below model the look-alikes of issue 12 and their leaking twins. They
	// draw their randomness from a second stream, so a Spec that leaves them zero writes
	// the same bytes as before they existed.

	// Steps are staircase steps, at an elapsed time, that stay for good: a cache filled on
	// demand (adapters, lazily loaded modules, TensorRT contexts). A bounded staircase
	// stops; its twin keeps stepping.
	Steps []Step
	// StopAt ends a linear leak's growth (0: never): the floor stays where it got to.
	StopAt time.Duration
	// GCRate is the garbage (MiB/min) that only the cyclic collector frees: tensors kept
	// alive by reference cycles until Python's gen-2 collection, at each time in GCAt.
	GCRate float64
	GCAt   []time.Duration
	// GCPace, where it has an entry for a cycle, is that cycle's garbage pace (MiB/min)
	// instead of GCRate: the ramp before GCAt[i] gathers at GCPace[i]. A collector
	// triggered by an amount of garbage gathers it at the pace of the traffic, so its
	// ramps differ in slope where its cycles differ in length.
	GCPace []float64
	// Saturations are load bursts during which the server is never idle.
	Saturations []Saturation
	// ActTail > 0 draws request activations from a Pareto tail of that shape (ActPeak is
	// then the scale, ActCap the largest): rarer, larger requests keep raising the
	// allocator cache's high-water mark long after the warm-up.
	ActTail float64
	ActCap  float64
	// Frag is the share of a request's activations the caching allocator cannot serve
	// from blocks it already holds (fragmentation), so its cache creeps above the peak.
	Frag float64
	// Other is what the GPU holds besides this process, MiB (driver and other tenants);
	// 0 means the driver's 600 MiB. Neighbour shows Other − 600 MiB as a second process
	// that pushes nothing.
	Other     float64
	Neighbour bool
	// OOM makes the process exit once it cannot fit on the GPU, after its allocator has
	// flushed its cache to try (the caches of a nearly full GPU flush and regrow).
	OOM bool
	// Short marks a trace judged at the scaled settings of scripts/gpu/short-trace.yml.
	Short bool
	// ReportsLoad: the client pushes how many requests were in flight with each sample
	// (its request(), an opt-in), counted from the requests the Spec models: the base
	// traffic's, the long generations, the day's traffic and the saturations. It draws
	// nothing, so a Spec writes the same samples with or without it.
	ReportsLoad bool
	// BusyRun > 0 makes the base traffic's requests last: whether one is in flight is a
	// two-state chain whose busy stretches average BusyRun (idle ones as long as keeps
	// Busy the share of samples mid-request), each request holding one activation size
	// (±25 % from sample to sample) until it ends, instead of a fresh draw at every
	// sample. Requests of seconds to a minute against a 30 s bucket: whole buckets
	// without an idle moment, and idle moments that come in runs, not independently.
	// Drawn from a stream of its own (rng3).
	BusyRun time.Duration
	// Traffic is a day's load on a server that allocates per request: how many requests
	// are in flight at a sample is Poisson, its mean climbing to the peak and back (see
	// Traffic); each holds its own activations. The floor stays put while the server has
	// idle moments and rises with the load once it has none.
	Traffic *Traffic
	// Generations are long generations whose key-value cache grows with every token
	// while they run and is freed when they end (a server that allocates the cache per
	// request, not from a pool).
	Generations []Generation
}

// Generation is one long request from At for Dur whose cache grows by Rate MiB/min.
type Generation struct {
	At, Dur time.Duration
	Rate    float64
}

// Traffic is a smooth climb of load from At over Rise to a mean of Peak requests in
// flight, held for Hold, and back down over Rise; each request in flight holds
// U(0.2, 1) × Req MiB.
type Traffic struct {
	At, Rise, Hold time.Duration
	Peak, Req      float64
}

// mean is the mean number of requests in flight el into the trace: a raised cosine up,
// a hold, and down again.
func (tr *Traffic) mean(el time.Duration) float64 {
	up := func(f float64) float64 { return tr.Peak * (1 - math.Cos(math.Pi*f)) / 2 }
	d := el - tr.At
	switch {
	case d < 0 || d >= 2*tr.Rise+tr.Hold:
		return 0
	case d < tr.Rise:
		return up(float64(d) / float64(tr.Rise))
	case d < tr.Rise+tr.Hold:
		return tr.Peak
	}
	return up(1 - float64(d-tr.Rise-tr.Hold)/float64(tr.Rise))
}

// poisson draws a Poisson count of mean m (a normal approximation above 50).
func poisson(r *rand.Rand, m float64) int {
	if m <= 0 {
		return 0
	}
	if m > 50 {
		return max(0, int(math.Round(m+math.Sqrt(m)*r.NormFloat64())))
	}
	l, k, p := math.Exp(-m), 0, r.Float64()
	for p > l {
		k++
		p *= r.Float64()
	}
	return k
}

// Column is a memory series a staircase step lands on.
type Column string

const (
	ColAllocated    Column = "allocated"
	ColUnattributed Column = "unattributed"
	ColReserved     Column = "reserved"
)

// Step is one stair of a staircase: Size MiB added to Col at At (elapsed), for good.
type Step struct {
	At   time.Duration
	Size float64
	Col  Column
}

// Saturation is a burst of long inputs: from At for Dur, every sample is mid-request and
// carries Load(t) × Peak × U(0.3, 1) MiB of activations, where Load rises linearly over
// the first Up fraction of the burst, holds, and falls over the last fifth.
type Saturation struct {
	At, Dur time.Duration
	Peak    float64
	Up      float64
}

func (b Saturation) load(el time.Duration) float64 {
	if el < b.At || el >= b.At+b.Dur {
		return 0
	}
	f := float64(el-b.At) / float64(b.Dur)
	up := math.Max(b.Up, 0.05)
	switch {
	case f < up:
		return f / up
	case f > 0.8:
		return (1 - f) / 0.2
	}
	return 1
}

// Label is the ground truth of one trace, as stored in testdata/labels.json.
type Label struct {
	Name string `json:"name"`
	// File is relative to the testdata directory (real traces: "real/NAME.jsonl").
	File string `json:"file"`
	Leak bool   `json:"leak"`
	// OnsetSeconds is the leak's start, in seconds after the trace's first record.
	OnsetSeconds float64 `json:"onset_seconds,omitempty"`
	// RateMiBPerMin is the leak's average rate.
	RateMiBPerMin float64 `json:"rate_mib_per_min,omitempty"`
	// Expect is the verdict the detector should reach (leak or unattributed_growth).
	Expect string `json:"expect,omitempty"`
	// PID, when set, restricts scoring to that process (real traces with neighbours).
	PID  uint32 `json:"pid,omitempty"`
	Note string `json:"note,omitempty"`
	// Trend, when set, overrides detector settings for this trace only: a real trace
	// minutes long cannot be judged with the defaults' 10-minute warm-up and window.
	Trend *TrendOverride `json:"trend,omitempty"`
	// StopSeconds, when set, is when the leak stopped growing: the verdict must be back to
	// steady within one short window of it.
	StopSeconds float64 `json:"stop_seconds,omitempty"`
	// OOM says the leak runs the GPU out of memory: the labelled process's last sample is
	// the out-of-memory error, and the exhaustion forecast must come before it.
	OOM bool `json:"oom,omitempty"`
}

// Label returns the ground truth of s.
func (s Spec) Label() Label {
	l := Label{Name: s.Name, File: s.Name + ".jsonl.gz", Note: s.Note}
	if s.Short {
		l.Trend = ShortTrace()
	}
	if s.Leak == NoLeak {
		return l
	}
	l.Leak, l.OnsetSeconds, l.Expect = true, s.Onset.Seconds(), string(trend.Leak)
	if s.StopAt > 0 {
		l.StopSeconds = s.StopAt.Seconds()
	}
	l.OOM = s.OOM
	switch s.Leak {
	case StepLeak:
		l.RateMiBPerMin = s.StepSize / s.StepEvery.Minutes()
	case UnattributedLeak:
		l.RateMiBPerMin, l.Expect = s.Rate, string(trend.UnattributedGrowth)
	case StairLeak:
		l.RateMiBPerMin = s.Rate
		outside := s.Push
		for _, st := range s.Steps {
			if st.At >= s.Onset && st.Col != ColUnattributed {
				outside = false
			}
		}
		if outside {
			l.Expect = string(trend.UnattributedGrowth)
		}
	default:
		l.RateMiBPerMin = s.Rate
	}
	return l
}

// healthy is a healthy server as measured on an H200: allocated floor flat at 65 MiB,
// cache up ≈ 0.5–0.9 GiB within two minutes, unattributed 520 → ≈ 700 MiB meanwhile.
func healthy(name string, seed uint64) Spec {
	return Spec{
		Name: name, Seed: seed, Duration: 3 * time.Hour, Cadence: 5 * time.Second, Push: true,
		AllocBase: 65, ActPeak: 600, Busy: 0.5, FloorJit: 2,
		CacheWarm: 300, UnattrBase: 520, UnattrWarm: 180, WarmSpan: 2 * time.Minute,
	}
}

// Suite returns the synthetic traces, in a stable order.
func Suite() []Spec {
	var out []Spec
	add := func(s Spec, f func(*Spec)) {
		f(&s)
		out = append(out, s)
	}
	linear := func(name string, seed uint64, rate float64, onset time.Duration, note string) {
		add(healthy(name, seed), func(s *Spec) { s.Leak, s.Rate, s.Onset, s.Note = LinearLeak, rate, onset, note })
	}
	linear("leak_alloc_0.25mib", 1, 0.25, 30*time.Minute, "linear leak of 0.25 MiB/min on allocated from minute 30")
	linear("leak_alloc_1mib", 2, 1, 30*time.Minute, "linear leak of 1 MiB/min on allocated from minute 30")
	linear("leak_alloc_10mib", 3, 10, 30*time.Minute, "linear leak of 10 MiB/min on allocated from minute 30")
	linear("leak_alloc_100mib", 4, 100, 60*time.Minute, "linear leak of 100 MiB/min on allocated from minute 60")
	linear("leak_from_start_12mib", 5, 12, 0, "outputs kept in a global list: 12 MiB/min from the first request")
	add(healthy("leak_used_only_10mib", 6), func(s *Spec) {
		s.Push, s.Leak, s.Rate, s.Onset = false, LinearLeak, 10, 30*time.Minute
		s.Note = "process pushes nothing: 10 MiB/min leak seen through NVML used only, from minute 30"
	})
	add(healthy("leak_step_16mib", 7), func(s *Spec) {
		s.Leak, s.StepSize, s.StepEvery, s.Onset = StepLeak, 32, 2*time.Minute, 30*time.Minute
		s.Note = "step leak: 32 MiB every 2 min from minute 30"
	})
	add(healthy("leak_step_2mib", 8), func(s *Spec) {
		s.Leak, s.StepSize, s.StepEvery, s.Onset = StepLeak, 10, 5*time.Minute, 30*time.Minute
		s.Note = "step leak: 10 MiB every 5 min from minute 30"
	})
	add(healthy("leak_unattributed_20mib", 9), func(s *Spec) {
		s.Leak, s.Rate, s.Onset = UnattributedLeak, 20, 30*time.Minute
		s.Note = "raw allocations outside the allocator: unattributed rises 20 MiB/min from minute 30"
	})

	add(healthy("sawtooth_flat", 20), func(s *Spec) {
		s.ActPeak, s.Busy, s.CacheWarm = 2048, 0.6, 200
		s.Note = "requests of up to 2 GiB of activations on a flat floor"
	})
	add(healthy("cache_warmup_plateau", 21), func(s *Spec) {
		s.CacheWarm, s.WarmSpan = 900, 3*time.Minute
		s.Note = "reserved jumps 0.9 GiB in steps in the first 3 minutes, then flat"
	})
	add(healthy("dynamic_shapes_plateau", 22), func(s *Spec) {
		s.DynShapes, s.DynOver = 1536, 40*time.Minute
		s.Note = "new input shapes grow reserved by 1.5 GiB over 40 minutes, ever more slowly, then flat"
	})
	add(healthy("unattributed_warmup", 23), func(s *Spec) {
		s.UnattrWarm, s.WarmSpan = 230, 4*time.Minute
		s.Note = "unattributed 520 -> 750 MiB in steps over the first 4 minutes, then flat"
	})
	add(healthy("load_burst_cache", 24), func(s *Spec) {
		s.BurstAt, s.BurstSize, s.BurstHold = 60*time.Minute, 2048, 3*time.Minute
		s.Note = "a load burst holds 2 GiB for 3 minutes at minute 60; the cache keeps it"
	})
	add(healthy("load_burst_used_only", 25), func(s *Spec) {
		s.Push = false
		s.BurstAt, s.BurstSize, s.BurstHold = 60*time.Minute, 2048, 3*time.Minute
		s.Note = "the same burst seen through NVML used only: a permanent 2 GiB step"
	})
	add(healthy("pid_reuse_restart", 26), func(s *Spec) {
		s.RestartAt, s.AllocBase = 80*time.Minute, 2048
		s.Note = "the process exits at minute 80 and a new one reuses its PID (new start ticks), warming up again"
	})
	add(healthy("heavy_noise", 27), func(s *Spec) {
		s.Cadence, s.ActPeak, s.Busy, s.FloorJit = 2*time.Second, 4096, 0.9, 64
		s.Note = "90% busy with up to 4 GiB of activations and 64 MiB of floor jitter, flat underneath"
	})
	add(healthy("idle", 28), func(s *Spec) {
		s.Cadence, s.Busy, s.FloorJit, s.CacheWarm, s.UnattrWarm = 10*time.Second, 0, 0, 0, 0
		s.Note = "loaded model, no requests: every series constant"
	})
	return out
}

// procState is one simulated process lifetime.
type procState struct {
	start      uint64
	born       time.Duration
	reserved   float64
	cacheSteps []step
	unattSteps []step
	dynSteps   []step
}

type step struct {
	at   time.Duration
	size float64
}

// warmSteps spreads total over n steps at random times in [0, span).
func warmSteps(rng *rand.Rand, total float64, n int, span time.Duration) []step {
	if total == 0 || span <= 0 {
		return nil
	}
	out := make([]step, n)
	for i := range out {
		out[i] = step{at: time.Duration(rng.Float64() * float64(span)), size: total / float64(n)}
	}
	return out
}

func sumSteps(steps []step, el time.Duration) float64 {
	var s float64
	for _, st := range steps {
		if el >= st.at {
			s += st.size
		}
	}
	return s
}

// activation is one request's activations in bytes for a uniform draw u in [0, 1):
// uniform up to ActPeak, or from ActTail's Pareto tail (ActPeak its scale) up to ActCap.
func (s *Spec) activation(u float64) float64 {
	if s.ActTail > 0 {
		return math.Min(s.ActPeak*mib*(math.Pow(1-u, -1/s.ActTail)-1), s.ActCap*mib)
	}
	return s.ActPeak * mib * u
}

// Generate writes the trace of s to w. The same Spec always writes the same bytes.
func Generate(s Spec, w io.Writer) error {
	rng := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	// New behaviour draws from its own stream so that older specs keep their bytes.
	rng2 := rand.New(rand.NewPCG(s.Seed, 0x1ea4))
	rng3 := rand.New(rand.NewPCG(s.Seed, 0x3a57))
	// BusyRun's chain: leave a busy stretch, or an idle one, with these chances a sample.
	var leaveBusy, leaveIdle float64
	if s.BusyRun > 0 && s.Busy > 0 && s.Busy < 1 {
		idleRun := float64(s.BusyRun) * (1 - s.Busy) / s.Busy
		leaveBusy = -math.Expm1(-float64(s.Cadence) / float64(s.BusyRun))
		leaveIdle = -math.Expm1(-float64(s.Cadence) / idleRun)
	}
	held, holding := 0.0, false // the request in flight under BusyRun, its activations
	tw := trace.NewWriter(w, 0)
	const pid, neighbourPID = 4242, 4343
	const uuid = "GPU-5f1e3c2a-8b7d-4e09-a6c1-93d2f4b8e710"
	const total = 143771 * mib // an H200
	other := 600.0 * mib
	if s.Other > 0 {
		other = s.Other * mib
	}
	newProc := func(born time.Duration, n uint64) *procState {
		p := &procState{start: 1_000_000 + s.Seed*1000 + n*500_000, born: born}
		p.cacheSteps = warmSteps(rng, s.CacheWarm*mib, 5, s.WarmSpan)
		p.unattSteps = warmSteps(rng, s.UnattrWarm*mib, 4, s.WarmSpan)
		if s.DynShapes > 0 {
			const k = 10
			for i := 1; i <= k; i++ {
				f := float64(i) / k
				p.dynSteps = append(p.dynSteps, step{at: time.Duration(f * f * float64(s.DynOver)),
					size: s.DynShapes * mib / k * (0.5 + rng.Float64())})
			}
		}
		return p
	}
	stairs := func(col Column, el time.Duration) float64 {
		var v float64
		for _, st := range s.Steps {
			if st.Col == col && el >= st.At {
				v += st.Size * mib
			}
		}
		return v
	}
	p := newProc(0, 0)
	restarted, dead, counting := false, false, false
	lastGC := time.Duration(0)
	gcNext := 0
	for el := time.Duration(0); el <= s.Duration; el += s.Cadence {
		if s.RestartAt > 0 && !restarted && el >= s.RestartAt {
			restarted, counting = true, false
			p = newProc(el, 1)
		}
		life := el - p.born
		leak, unLeak := 0.0, 0.0
		if el >= s.Onset {
			grown := el
			if s.StopAt > 0 && grown > s.StopAt {
				grown = s.StopAt
			}
			since := (grown - s.Onset).Minutes()
			switch s.Leak {
			case LinearLeak:
				leak = s.Rate * mib * since
			case StepLeak:
				leak = s.StepSize * mib * math.Floor(since/s.StepEvery.Minutes()+1)
			case UnattributedLeak:
				unLeak = s.Rate * mib * since
			}
		}
		floor := s.AllocBase*mib + leak + s.FloorJit*mib*rng.Float64()
		if s.BurstAt > 0 && el >= s.BurstAt && el < s.BurstAt+s.BurstHold {
			floor += s.BurstSize * mib
		}
		floor += stairs(ColAllocated, el)
		if s.GCRate > 0 {
			for gcNext < len(s.GCAt) && el >= s.GCAt[gcNext] {
				lastGC = s.GCAt[gcNext]
				gcNext++
			}
			// Garbage comes with requests: a ramp with a little noise of its own.
			pace := s.GCRate
			if gcNext < len(s.GCPace) {
				pace = s.GCPace[gcNext]
			}
			floor += pace * mib * (el - lastGC).Minutes() * (0.97 + 0.06*rng2.Float64())
		}
		act, inFlight := 0.0, 0
		if leaveBusy > 0 {
			switch {
			case holding && rng3.Float64() < leaveBusy:
				holding = false
			case !holding && rng3.Float64() < leaveIdle:
				holding, held = true, s.activation(rng3.Float64())
			}
			if holding {
				inFlight++
				act = held * (0.75 + 0.5*rng3.Float64())
			}
		} else if rng.Float64() < s.Busy {
			inFlight++
			act = s.activation(rng.Float64())
		}
		for _, g := range s.Generations {
			if el >= g.At && el < g.At+g.Dur {
				act += g.Rate * mib * (el - g.At).Minutes()
				inFlight++
			}
		}
		if s.Traffic != nil {
			k := poisson(rng2, s.Traffic.mean(el))
			for range k {
				act += s.Traffic.Req * mib * (0.2 + 0.8*rng2.Float64())
			}
			inFlight += k
		}
		for _, b := range s.Saturations {
			if l := b.load(el); l > 0 {
				act += l * b.Peak * mib * (0.3 + 0.7*rng2.Float64())
				inFlight++ // never idle while saturated: at least one
			}
		}
		// The client counts from its first request() (the protocol leaves
		// requests_in_flight out until then): the first sample with one in flight, or
		// the day's traffic beginning, whose first requests create its pools.
		counting = counting || inFlight > 0 || (s.Traffic != nil && el >= s.Traffic.At)
		allocated := math.Round(floor + act)
		unatt := s.UnattrBase*mib + sumSteps(p.unattSteps, life) + math.Round(unLeak) + stairs(ColUnattributed, el)
		want := math.Ceil(allocated/(2*mib))*2*mib + sumSteps(p.cacheSteps, life) + sumSteps(p.dynSteps, life) + stairs(ColReserved, el)
		grow := want
		if s.Frag > 0 && act > 0 {
			grow = math.Max(want, p.reserved+math.Ceil(s.Frag*act*rng2.Float64()/(2*mib))*2*mib)
		}
		if !dead && math.Max(p.reserved, grow)+unatt+other > total {
			// The allocator cannot grow: it frees its cached blocks and retries (PyTorch's
			// behaviour on a failed cudaMalloc); if what is in use still does not fit, the
			// request fails and the process exits with an out-of-memory error.
			inUse := math.Ceil(allocated/(2*mib)) * 2 * mib
			p.reserved = math.Min(want, total-unatt-other)
			if s.OOM && inUse+unatt+other > total {
				dead = true
			}
			p.reserved = math.Max(p.reserved, inUse)
		}
		if !dead || !s.OOM {
			p.reserved = math.Max(p.reserved, math.Min(grow, math.Max(total-unatt-other, p.reserved)))
		}
		used := p.reserved + unatt
		t := epoch.Add(el)
		gpuUsed := other
		if !dead {
			gpuUsed += used
			rec := trend.Sample{Key: trend.Key{PID: pid, Start: p.start, UUID: uuid}, T: t, Used: used, HasUsed: true}
			if s.Push {
				rec.Allocated, rec.HasAllocated = allocated, true
				rec.Reserved, rec.HasReserved = p.reserved, true
				rec.InFlight, rec.HasInFlight = uint32(inFlight), s.ReportsLoad && counting
			}
			if err := tw.WriteProcess(rec); err != nil {
				return fmt.Errorf("generating %s: %w", s.Name, err)
			}
		}
		if s.Neighbour {
			rec := trend.Sample{Key: trend.Key{PID: neighbourPID, Start: 2_000_000 + s.Seed, UUID: uuid}, T: t, Used: other - 600*mib, HasUsed: true}
			if err := tw.WriteProcess(rec); err != nil {
				return fmt.Errorf("generating %s: %w", s.Name, err)
			}
		}
		if err := tw.WriteGPU(trend.GPUSample{T: t, UUID: uuid, Used: gpuUsed, Total: total}); err != nil {
			return fmt.Errorf("generating %s: %w", s.Name, err)
		}
	}
	return nil
}
