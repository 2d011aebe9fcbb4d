package eval

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Class is a family of traces: one behaviour of a serving process, drawn anew for
// every seed (sizes, timings, rates, cadence and the server's own shape), so that the
// detector is measured on the behaviour and not on one trace of it. Look-alikes (Leak
// false) must never raise leak or unattributed_growth; their twins (Leak true) are the
// same behaviour with a leak in it, and must be flagged.
type Class struct {
	Name string
	Note string
	Leak bool
	Make func(seed uint64) Spec
}

// server draws a healthy serving process: model weights, request activations, how busy
// it is and how often it is sampled vary from seed to seed; the warm-up is what was
// measured on an H200 (cache up in steps in the first minutes, CUDA context and library
// workspaces 520 → ≈ 700 MiB).
func server(r *rand.Rand, name string, seed uint64) Spec {
	cadences := []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 5 * time.Second, 10 * time.Second}
	return Spec{
		Name: name, Seed: seed, Duration: 3 * time.Hour, Cadence: cadences[r.IntN(len(cadences))], Push: true,
		AllocBase: 65 + float64(r.IntN(4))*4096*r.Float64(), ActPeak: 100 + 1900*r.Float64(), Busy: 0.2 + 0.6*r.Float64(),
		FloorJit:  4 * r.Float64(),
		CacheWarm: 200 + 700*r.Float64(), UnattrBase: 520, UnattrWarm: 120 + 100*r.Float64(),
		WarmSpan: time.Duration(1+3*r.Float64()) * time.Minute,
	}
}

func minutes(f float64) time.Duration { return time.Duration(f * float64(time.Minute)) }

func uniform(r *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }

// logUniform draws between lo and hi (both > 0) evenly on a log scale.
func logUniform(r *rand.Rand, lo, hi float64) float64 {
	return math.Exp(uniform(r, math.Log(lo), math.Log(hi)))
}

// staircase is n steps on col between start and start+span, their times as drawn by
// pattern, each of size ≈ size (±spread).
func staircase(r *rand.Rand, col Column, n int, start, span time.Duration, size, spread float64, pattern string) []Step {
	at := make([]float64, n)
	switch pattern {
	case "regular": // contexts created one by one as their engines load
		for i := range at {
			at[i] = (float64(i) + 0.4*(r.Float64()-0.5)) / float64(n-1)
		}
	case "on_demand": // first use of n items of Zipf popularity: a coupon collector
		for i := range at {
			at[i] = r.ExpFloat64() * math.Pow(float64(i+1), 1.1)
		}
		m := slices.Max(at)
		for i := range at {
			at[i] /= m
		}
	default: // "decelerating": arrivals ever rarer, as rarer code paths are first hit
		for i := range at {
			u := r.Float64()
			at[i] = u * u
		}
	}
	out := make([]Step, n)
	for i := range out {
		f := math.Min(math.Max(at[i], 0), 1)
		out[i] = Step{At: start + time.Duration(f*float64(span)), Size: size * (1 + spread*(2*r.Float64()-1)), Col: col}
	}
	slices.SortFunc(out, func(a, b Step) int { return int(a.At - b.At) })
	return out
}

// unbounded continues a staircase after its span at its own mean pace: the twin of a
// bounded fill, a cache that never stops filling. It returns the steps and their rate
// in MiB/min.
func unbounded(r *rand.Rand, steps []Step, from, until time.Duration) ([]Step, float64) {
	first, last := steps[0].At, steps[len(steps)-1].At
	var total float64
	for _, s := range steps {
		total += s.Size
	}
	every := (last - first) / time.Duration(len(steps))
	if every < 10*time.Second {
		every = 10 * time.Second
	}
	mean := total / float64(len(steps))
	for t := from; t <= until; t += time.Duration(float64(every) * (0.5 + r.Float64())) {
		steps = append(steps, Step{At: t, Size: mean * (0.8 + 0.4*r.Float64()), Col: steps[0].Col})
	}
	return steps, mean / every.Minutes()
}

// gcTimes are the collections of a gen-2 garbage collector whose cycle is drawn anew each
// time between lo and hi minutes.
func gcTimes(r *rand.Rand, lo, hi float64, until time.Duration) []time.Duration {
	var out []time.Duration
	for t := minutes(uniform(r, lo, hi)); t < until; t += minutes(uniform(r, lo, hi)) {
		out = append(out, t)
	}
	return out
}

// classRand is the parameter stream of one class and seed.
func classRand(seed uint64, class string) *rand.Rand {
	var h uint64 = 1469598103934665603
	for _, c := range class {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return rand.New(rand.NewPCG(seed, h))
}

// Classes returns the look-alike classes of issue 12, their leaking twins, and the
// committed suite's own traces as classes (their seed varies, not their shape), in a
// stable order.
func Classes() []Class {
	var out []Class
	add := adder(&out, "")

	// 1. Bounded staircases right after the warm-up, and the ones that never stop: fill
	// draws the look-alike's steps and returns when its fill ends; the twin keeps
	// stepping at the fill's own pace from there, a leak from that end.
	stairs := func(name, note, twinNote string, fill func(r *rand.Rand, s *Spec) time.Duration) {
		add(name, note, false, func(r *rand.Rand, s *Spec) { fill(r, s) })
		add(name+"_unbounded", twinNote, true, func(r *rand.Rand, s *Spec) {
			end := fill(r, s)
			s.Leak, s.Onset = StairLeak, end
			s.Steps, s.Rate = unbounded(r, s.Steps, end, s.Duration)
		})
	}
	stairs("stair_adapters", "LoRA adapters loaded on first use (Zipf popularity), 6–24 of 16–256 MiB over 15–30 min, then none",
		"the same adapter cache never evicts and keeps loading at its own pace: a leak from the end of the look-alike's fill",
		func(r *rand.Rand, s *Spec) time.Duration {
			n, span, start := 6+r.IntN(19), minutes(uniform(r, 15, 30)), minutes(uniform(r, 1, 5))
			s.Steps = staircase(r, ColAllocated, n, start, span, uniform(r, 16, 256), 0.1, "on_demand")
			return start + span
		})
	stairs("stair_trt_contexts", "TensorRT-style execution contexts created one by one outside the allocator: 3–8 of 64–512 MiB at regular intervals over 15–30 min",
		"contexts keep being created at the same pace: unattributed growth from the end of the look-alike's fill",
		func(r *rand.Rand, s *Spec) time.Duration {
			n, span, start := 3+r.IntN(6), minutes(uniform(r, 15, 30)), minutes(uniform(r, 1, 5))
			s.Steps = staircase(r, ColUnattributed, n, start, span, uniform(r, 64, 512), 0.05, "regular")
			return start + span
		})
	stairs("stair_kernels", "lazily loaded modules and kernels: 30–120 steps of 1–8 MiB outside the allocator, ever rarer, over 15–30 min",
		"module loads that never stop (a kernel compiled per new shape, forever)",
		func(r *rand.Rand, s *Spec) time.Duration {
			n, span := 30+r.IntN(91), minutes(uniform(r, 15, 30))
			s.Steps = staircase(r, ColUnattributed, n, 0, span, uniform(r, 1, 8), 0.5, "decelerating")
			return span
		})
	stairs("stair_used_only", "a process that pushes nothing: NVML sees its cache grow in 8–32 steps of 2–120 MiB, ever rarer, over 15–30 min",
		"the same, never plateauing: a leak seen through NVML only",
		func(r *rand.Rand, s *Spec) time.Duration {
			s.Push = false
			n, span := 8+r.IntN(25), minutes(uniform(r, 15, 30))
			s.Steps = staircase(r, ColReserved, n, minutes(1), span, uniform(r, 2, 120), 0.8, "decelerating")
			return minutes(1) + span
		})

	// 2. and 3. A gen-2 garbage collector's sawtooth, with and without a rising floor.
	gc := func(r *rand.Rand, s *Spec) {
		s.GCRate = uniform(r, 5, 60)
		s.GCAt = gcTimes(r, 6, 14, s.Duration)
	}
	add("gc_sawtooth", "garbage of 5–60 MiB/min freed by the cyclic collector every 6–14 min: every ramp a clean line, no net growth", false, gc)
	add("gc_sawtooth_rising_floor", "the same sawtooth over a leak of 1–20 MiB/min from minute 30–60: the floor after each collection rises", true,
		withLeak(gc, 1, 20, 30, 60))

	// 4. A saturated server: the floor rises with load for minutes, then drops back.
	saturate := func(r *rand.Rand, s *Spec) {
		n := 1 + r.IntN(3)
		for i := range n {
			at := minutes(uniform(r, 30, 60) + 45*float64(i))
			s.Saturations = append(s.Saturations, Saturation{At: at, Dur: minutes(uniform(r, 2, 8)),
				Peak: uniform(r, 512, 6144), Up: uniform(r, 0.2, 0.6)})
		}
	}
	add("saturated_burst", "1–3 bursts of long inputs, 2–8 min each, the server never idle: the floor rises 0.2–4 GiB with load and drops back", false, saturate)
	add("saturated_burst_leak", "the same bursts over a leak of 2–50 MiB/min that starts up to 10 min before the first", true,
		func(r *rand.Rand, s *Spec) {
			saturate(r, s)
			s.Leak, s.Rate = LinearLeak, uniform(r, 2, 50)
			s.Onset = s.Saturations[0].At - minutes(uniform(r, 0, 10))
		})

	// 5. A fresh process at the scaled settings of the real-GPU run: CUDA context and
	// kernels grow 520 → ≈ 680 MiB over the first two minutes.
	cuda := func(r *rand.Rand, s *Spec) {
		s.Short, s.Duration, s.Cadence = true, 20*time.Minute, time.Second
		s.UnattrWarm, s.CacheWarm, s.WarmSpan = 0, uniform(r, 100, 600), minutes(uniform(r, 0.5, 1.5))
		n := 20 + r.IntN(41)
		s.Steps = staircase(r, ColUnattributed, n, 0, minutes(uniform(r, 1.5, 2.5)), uniform(r, 120, 200)/float64(n), 0.6, "decelerating")
	}
	add("cuda_context_short", "scaled settings: a fresh CUDA context, 20–60 module loads outside the allocator adding 120–200 MiB over the first 1.5–2.5 min", false, cuda)
	add("cuda_context_short_used_only", "the same fresh process, pushing nothing (NVML only)", false,
		func(r *rand.Rand, s *Spec) { cuda(r, s); s.Push = false })
	add("cuda_context_short_leak", "the same fresh process, then a leak of 20–200 MiB/min from minute 3–8 (scaled settings)", true,
		withLeak(cuda, 20, 200, 3, 8))

	// 6. Processes that push nothing: NVML's used holds the allocator cache's high-water
	// mark, which rarer, larger requests keep raising.
	creep := func(r *rand.Rand, s *Spec) {
		s.Push, s.ActTail, s.ActPeak, s.ActCap = false, uniform(r, 1.5, 3), uniform(r, 20, 200), uniform(r, 2048, 8192)
	}
	add("used_only_creep", "pushes nothing; request sizes Pareto-tailed (shape 1.5–3): the cache's high-water mark keeps stepping up, ever more rarely", false, creep)
	add("used_only_creep_leak", "the same (largest request 0.5–2 GiB), with a leak of 10–40 MiB/min from minute 30–60: NVML sees it once it has filled the cache's spare room", true,
		func(r *rand.Rand, s *Spec) {
			creep(r, s)
			s.ActCap = uniform(r, 512, 2048)
			s.Leak, s.Rate, s.Onset = LinearLeak, uniform(r, 10, 40), minutes(uniform(r, 30, 60))
		})

	// 7. A nearly full GPU: caches flush and regrow; a fast leak runs it out of memory.
	add("near_full_flush", "a GPU 1–4 GiB from full: the caching allocator flushes and regrows as large requests come, the GPU's used bytes oscillate", false,
		func(r *rand.Rand, s *Spec) {
			headroom := uniform(r, 1024, 4096)
			nearFull(r, s, headroom, headroom*uniform(r, 0.5, 0.9))
			s.Duration = 2 * time.Hour
		})
	add("fast_leak_near_full", "a leak of 100–1000 MiB/min from minute 20–40 on a nearly full GPU: out of memory 4–15 min after the onset", true,
		leakNearFull(100, 1000, 4, 15))

	add("saturated_burst_near_full", "the saturated bursts on a nearly full GPU: 1.3–3× the largest burst's activations free besides this process's working set; the floor ramps as steeply as a fast leak, the GPU does not run out", false,
		func(r *rand.Rand, s *Spec) {
			saturate(r, s)
			peak := 0.0
			for _, b := range s.Saturations {
				peak = math.Max(peak, b.Peak)
			}
			largest := uniform(r, 256, 1024)
			nearFull(r, s, peak*uniform(r, 1.3, 3)+largest, largest)
			s.Duration = 3 * time.Hour
		})

	// A load ramp on a roomy GPU: the steep, minutes-long rise the fast rule must not
	// take for a leak where the GPU has room.
	add("load_ramp", "a roomy GPU whose load climbs for 2–4 min, the server never idle: the floor rises 100–1000 MiB/min, holds 1–10 min and drops back, 1–3 times", false,
		func(r *rand.Rand, s *Spec) {
			n := 1 + r.IntN(3)
			for i := range n {
				ramp, hold, rate := uniform(r, 2, 4), uniform(r, 1, 10), uniform(r, 100, 1000)
				dur := (ramp + hold) / 0.8 // the load falls over the last fifth
				// The least in flight is about 0.3 of the peak (see Saturation).
				s.Saturations = append(s.Saturations, Saturation{At: minutes(uniform(r, 30, 60) + 45*float64(i)), Dur: minutes(dur),
					Peak: rate * ramp / 0.3, Up: ramp / dur})
			}
		})

	// A day's traffic on a server that allocates per request: once the server has no
	// idle moment left, its floor is the least load in flight and climbs with the load for
	// an hour, as smoothly as a slow leak (see Traffic).
	diurnal := func(r *rand.Rand, s *Spec) { s.Traffic = day(r, 20, 300) }
	add("load_diurnal", "traffic that climbs for 30–90 min to a mean of 4–40 requests in flight of 20–300 MiB each, holds 10–40 min and falls back: the floor rises with the load once no bucket has an idle moment", false, diurnal)
	// Its twin: a leak under the same day, from before the climb to well into it, so
	// that the test of idle moments, which holds a rise while the server is never idle,
	// is measured on what it costs a leak.
	add("load_diurnal_leak", "the same traffic over a leak of 2–20 MiB/min from 10 min before the climb to half way up it", true,
		func(r *rand.Rand, s *Spec) { diurnal(r, s); leakInClimb(r, s) })

	// Long generations on a server that allocates each request's key-value cache as it
	// goes: while one runs its cache grows with every token, smoothly and steeply
	// (0.5 MiB a token for a 7B model at 30 tokens/s is 900 MiB/min), and every other
	// request comes and goes on top of it; it is freed when the generation ends.
	add("long_generation", "every 5–30 min a generation of 1–4 min whose cache grows 100–1000 MiB/min and is freed at its end, under the server's ordinary traffic", false,
		func(r *rand.Rand, s *Spec) {
			for t := uniform(r, 15, 30); t < 170; t += uniform(r, 5, 30) {
				s.Generations = append(s.Generations, Generation{At: minutes(t), Dur: minutes(uniform(r, 1, 4)), Rate: uniform(r, 100, 1000)})
			}
		})

	// A cache of tensors with a budget (responses, prefixes, embeddings) that fills
	// smoothly after the warm-up, fast at first and ever slower: 1 − e^(−t/τ) of its
	// budget, in 200 small steps; and the same fill over a leak.
	fill := func(r *rand.Rand, s *Spec) (start, tau float64) {
		budget := uniform(r, 512, 4096)
		start, tau = uniform(r, 1, 20), uniform(r, 3, 10)
		fillSteps(s, budget, start, tau, 200)
		return start, tau
	}
	add("cache_fill_smooth", "a cache of 0.5–4 GiB of tensors filling smoothly from minute 1–20, 1 − e^(−t/τ) with τ 3–10 min (95 % in 9–30 min), then full", false,
		func(r *rand.Rand, s *Spec) { fill(r, s) })
	add("cache_fill_smooth_leak", "the same fill over a leak of 2–20 MiB/min from two to four τ into the fill", true,
		func(r *rand.Rand, s *Spec) {
			start, tau := fill(r, s)
			s.Leak, s.Rate, s.Onset = LinearLeak, uniform(r, 2, 20), minutes(start+tau*uniform(r, 2, 4))
		})

	// One or two busy buckets in a row (a server never idle for a minute) must not spoil
	// a window.
	add("busy_server", "85–95% of samples mid-request with up to 1–4 GiB of activations: consecutive buckets without an idle moment", false, busy)
	add("busy_leak", "the same busy server over a leak of 1–20 MiB/min from minute 30–60", true,
		withLeak(busy, 1, 20, 30, 60))
	add("busy_leak_used_only", "a busy server that pushes nothing, leaking 5–20 MiB/min from minute 30–60", true,
		func(r *rand.Rand, s *Spec) {
			busy(r, s)
			s.Push = false
			s.Leak, s.Rate, s.Onset = LinearLeak, uniform(r, 5, 20), minutes(uniform(r, 30, 60))
		})

	// 8. Steep and very slow leaks, and a leak that stops.
	add("fast_leak", "a leak of 100–1000 MiB/min from minute 30–60 on a roomy GPU", true,
		leakFor(100, 1000, 30, 60, 30*time.Minute))
	add("slow_leak", "a leak of 0.3–0.5 MiB/min (430–720 MiB a day) from minute 20–40", true,
		leakFor(0.3, 0.5, 20, 40, 150*time.Minute))
	add("leak_stops", "a leak of 2–50 MiB/min from minute 30–60 that stops after 10–40 min: steady again within a short window", true,
		stops(2, 50, 10, 40))

	// The committed suite's traces, their shape fixed, their seed drawn.
	for _, sp := range Suite() {
		sp := sp
		out = append(out, Class{Name: "suite/" + sp.Name, Note: sp.Note, Leak: sp.Leak != NoLeak, Make: func(seed uint64) Spec {
			s := sp
			s.Seed = seed
			return s
		}})
	}
	return out
}

// adder returns the function that appends a class named prefix+name to out: a server
// drawn from the class's own stream of the seed (see server), then shaped by f.
func adder(out *[]Class, prefix string) func(name, note string, leak bool, f func(r *rand.Rand, s *Spec)) {
	return func(name, note string, leak bool, f func(r *rand.Rand, s *Spec)) {
		name = prefix + name
		*out = append(*out, Class{Name: name, Note: note, Leak: leak, Make: func(seed uint64) Spec {
			r := classRand(seed, name)
			s := server(r, name, seed)
			f(r, &s)
			return s
		}})
	}
}

// nearFull puts s on a nearly full GPU: caches flush and regrow; a fast leak runs it out
// of memory.
func nearFull(r *rand.Rand, s *Spec, headroom, largest float64) {
	s.Neighbour, s.OOM, s.Frag = true, true, uniform(r, 0.2, 0.6)
	// Requests up to the largest: a healthy server on a full GPU fits its largest
	// request, but its fragmented cache does not, and is flushed and regrown.
	s.ActTail, s.ActPeak, s.ActCap = 2, uniform(r, 100, 400), largest
	// Other tenants take the GPU but for the headroom above this process's working set.
	s.Other = 143771 - headroom - (s.AllocBase + s.CacheWarm + s.UnattrBase + s.UnattrWarm)
}

// fillSteps adds to s a cache of budget MiB of tensors filling smoothly from start
// (minutes) as 1 − e^(−t/τ), in n equal steps.
func fillSteps(s *Spec, budget, start, tau float64, n int) {
	for i := range n {
		f := (float64(i) + 0.5) / float64(n) // the share of the budget filled at this step
		s.Steps = append(s.Steps, Step{At: minutes(start - tau*math.Log(1-f)), Size: budget / float64(n), Col: ColAllocated})
	}
}

// leakNearFull is a leak of lo–hi MiB/min from minute 20–40 on a nearly full GPU that
// runs it out of memory oomLo–oomHi minutes after its onset (plus the largest request's
// room); the trace ends 10 minutes after.
func leakNearFull(lo, hi, oomLo, oomHi float64) func(r *rand.Rand, s *Spec) {
	return func(r *rand.Rand, s *Spec) {
		s.Leak, s.Rate, s.Onset = LinearLeak, uniform(r, lo, hi), minutes(uniform(r, 20, 40))
		largest := uniform(r, 256, 2048)
		headroom := s.Rate*uniform(r, oomLo, oomHi) + largest
		nearFull(r, s, headroom, largest)
		s.Duration = s.Onset + minutes(headroom/s.Rate) + 10*time.Minute
	}
}

// withLeak is base with a linear leak of lo–hi MiB/min from minute onLo–onHi on top: a
// look-alike's leaking twin.
func withLeak(base func(r *rand.Rand, s *Spec), lo, hi, onLo, onHi float64) func(r *rand.Rand, s *Spec) {
	return func(r *rand.Rand, s *Spec) {
		base(r, s)
		s.Leak, s.Rate, s.Onset = LinearLeak, uniform(r, lo, hi), minutes(uniform(r, onLo, onHi))
	}
}

// day is a day's traffic (see Traffic): it climbs from minute 15–40 over 30–90 min to a
// mean of 4–40 requests in flight of reqLo–reqHi MiB each, holds 10–40 min and falls back.
func day(r *rand.Rand, reqLo, reqHi float64) *Traffic {
	return &Traffic{At: minutes(uniform(r, 15, 40)), Rise: minutes(uniform(r, 30, 90)), Hold: minutes(uniform(r, 10, 40)),
		Peak: uniform(r, 4, 40), Req: uniform(r, reqLo, reqHi)}
}

// leakInClimb puts a leak of 2–20 MiB/min under s's day of traffic, from 10 min before
// the climb to half way up it.
func leakInClimb(r *rand.Rand, s *Spec) {
	s.Leak, s.Rate = LinearLeak, uniform(r, 2, 20)
	s.Onset = s.Traffic.At + minutes(uniform(r, -10, s.Traffic.Rise.Minutes()/2))
}

// busy is a server mid-request in 85–95 % of its samples, with up to 1–4 GiB of
// activations and up to 64 MiB of floor jitter: consecutive buckets without an idle moment.
func busy(r *rand.Rand, s *Spec) {
	s.Busy, s.ActPeak, s.FloorJit = uniform(r, 0.85, 0.95), uniform(r, 1024, 4096), uniform(r, 2, 64)
}

// stops is a linear leak of lo–hi MiB/min from minute 30–60 that stops after forLo–forHi
// minutes, the trace ending an hour after the stop.
func stops(lo, hi, forLo, forHi float64) func(r *rand.Rand, s *Spec) {
	return func(r *rand.Rand, s *Spec) {
		s.Leak, s.Rate, s.Onset = LinearLeak, uniform(r, lo, hi), minutes(uniform(r, 30, 60))
		s.StopAt = s.Onset + minutes(uniform(r, forLo, forHi))
		s.Duration = s.StopAt + time.Hour
	}
}

// leakFor is a linear leak of lo–hi MiB/min from minute onLo–onHi on an ordinary server,
// the trace ending after past its onset.
func leakFor(lo, hi, onLo, onHi float64, after time.Duration) func(r *rand.Rand, s *Spec) {
	return func(r *rand.Rand, s *Spec) {
		s.Leak, s.Rate, s.Onset = LinearLeak, uniform(r, lo, hi), minutes(uniform(r, onLo, onHi))
		s.Duration = s.Onset + after
	}
}
