"""A small PyTorch serving loop that reports through the real client (gpu-e2e phase 3).

Modes: the look-alikes of issue 12 and their leaking twins, plus the three handlers the
first real-GPU traces were recorded with.

  healthy            varying batch and sequence lengths under inference_mode; nothing kept
  staircase          healthy, and an app-level cache that loads one 64 MiB item every 20 s
                     for the first two minutes (adapters loaded on demand), then no more
  burst              healthy, and from --onset a burst of long inputs that holds 1 GiB for
                     --hold seconds, then lets it go
  cache_fill         healthy, and from 60 s a cache of tensors with a 1.5 GiB budget that
                     fills ever slower, budget·(1 − e^(−t/τ)) with τ = 60 s (a response or
                     prefix cache; 1.5 GiB/min at first), in 8 MiB items, then stays full
  adapter_churn      healthy, and an adapter cache at capacity: six adapters of 32–256 MiB
                     loaded over the first 60 s, then every 10–40 s the oldest is evicted
                     and another of a different size loaded in its place (a bounded random
                     walk of the floor, in steps both ways)
  nvml_only          healthy, pushing nothing: the daemon sees NVML's used bytes only
  slow_leak          healthy until --onset, then keeps --rate-mib MiB/min of outputs
                     (20 by default) for good
  fast_leak          healthy until --onset, then keeps --rate-mib MiB/min (400 by default)
                     until --stop, then keeps what it holds: stopped long before the GPU
                     is full
  load_climb         healthy, and from --load-at a day's traffic in miniature: requests in
                     flight, Poisson with a mean that climbs over --load-rise seconds to
                     --load-peak, holds --load-hold and falls back over --load-rise, each
                     holding 6–32 MiB of activations, the next ones taken on before the
                     last ones end (a server never idle): its allocated floor climbs with
                     the load. Each request goes through reporter.request() when
                     --report-load is given.
  load_climb_leak    the same, and a --rate-mib leak (20 by default) from --onset
  gc_sawtooth        healthy, and --gc-rate-mib MiB/min (30) of tensors kept alive by
                     reference cycles, which only Python's cyclic collector frees: automatic
                     collection off, gc.collect() at the end of each cycle of
                     --gc-cycles seconds (90,300,100,280: a cycle drawn anew each time, the
                     second more than three times the first), then the last again
  gc_sawtooth_fast_leak  the same sawtooth, and a --rate-mib leak (400 by default) from
                     --onset until --stop, as fast_leak
  gc_sawtooth_cache_fill  the same sawtooth, and cache_fill's cache: a look-alike outside
                     the ranges the detector was built on (vram_eval -stress), a probe
                     whose verdicts are printed, not scored ("probe" in --meta)
  first_traffic      a model deployed and left idle: loaded, no request until --onset, then
                     healthy traffic, every request through reporter.request() (so the
                     client's counts begin with it), whose first requests load the kernels
                     lazily (CUDA's default) and create four workspaces of 64–96 MiB over
                     110 s that stay
  leak               keeps every output tensor in a global list from the first request
  no_inference_mode  no inference_mode/no_grad, and a running metric accumulated as a
                     tensor, so every request's autograd graph (activations) stays alive

Writes a JSON line to --meta before serving: mode (--name, if given), pid, GPU uuid, the Unix times of the
onset and stop of what it does (null when not applicable) and what the detector should
say ("leak" or "none"), for scripts/gpu/verdicts.py.

usage: serve_loop.py --mode MODE --socket PATH --seconds N [--onset S] [--stop S]
                     [--hold S] [--rate-mib R] [--rate 5] [--meta FILE] [--name NAME]
                     [--report-load] [--load-at S --load-rise S --load-hold S --load-peak N]
                     [--gc-rate-mib R] [--gc-cycles S,S,...]
"""
import argparse
import gc
import json
import math
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "client", "python"))
import torch  # noqa: E402

import vram_exporter_client as vc  # noqa: E402

MODES = ["healthy", "staircase", "adapter_churn", "burst", "cache_fill", "nvml_only", "slow_leak", "fast_leak", "load_climb", "load_climb_leak",
         "gc_sawtooth", "gc_sawtooth_fast_leak", "gc_sawtooth_cache_fill", "first_traffic", "leak", "no_inference_mode"]
MIB = 2**20

ap = argparse.ArgumentParser()
ap.add_argument("--mode", required=True, choices=MODES)
ap.add_argument("--socket", required=True)
ap.add_argument("--seconds", type=float, required=True)
ap.add_argument("--onset", type=float, default=240.0, help="seconds after start: burst or leak onset")
ap.add_argument("--stop", type=float, default=330.0, help="seconds after start: fast_leak stops growing")
ap.add_argument("--hold", type=float, default=120.0, help="seconds the burst holds its memory")
ap.add_argument("--rate-mib", type=float, default=None, help="leak rate, MiB per minute")
ap.add_argument("--rate", type=float, default=5.0, help="requests per second")
ap.add_argument("--meta", default="", help="write the loop's timeline (JSON) here")
ap.add_argument("--load-at", type=float, default=90.0, help="load_climb: seconds after start the traffic begins to climb")
ap.add_argument("--load-rise", type=float, default=150.0, help="load_climb: seconds the traffic climbs (and falls)")
ap.add_argument("--load-hold", type=float, default=120.0, help="load_climb: seconds the traffic holds its peak")
ap.add_argument("--load-peak", type=float, default=24.0, help="load_climb: mean requests in flight at the peak")
ap.add_argument("--report-load", action="store_true", help="count every request with reporter.request() (requests_in_flight)")
ap.add_argument("--gc-rate-mib", type=float, default=30.0, help="gc_sawtooth: MiB/min of cyclic garbage")
ap.add_argument("--gc-cycles", default="90,300,100,280", help="gc_sawtooth: seconds of each collector's cycle, comma-separated; the last repeats")
ap.add_argument("--name", default="", help="the loop's name in --meta and its service label (default: the mode)")
args = ap.parse_args()

mode = args.mode
name = args.name or mode
rate_mib = args.rate_mib if args.rate_mib is not None else {
    "slow_leak": 20.0, "fast_leak": 400.0, "load_climb_leak": 20.0, "gc_sawtooth_fast_leak": 400.0}.get(mode, 0.0)
LEAKS = ("slow_leak", "fast_leak", "load_climb_leak", "gc_sawtooth_fast_leak")
try:
    gc_cycles = [float(c) for c in args.gc_cycles.split(",")]
except ValueError:
    ap.error("--gc-cycles %r: want seconds separated by commas, e.g. 90,300,100,280" % args.gc_cycles)
if not gc_cycles or min(gc_cycles) <= 0:
    ap.error("--gc-cycles %r: every cycle must last more than 0 s" % args.gc_cycles)
sawtooth = mode.startswith("gc_sawtooth")
if sawtooth:
    # Python's gen-2 collector, by hand: the garbage lives until gc.collect().
    gc.disable()

torch.manual_seed(0)
rng = random.Random(1)
dev = "cuda"
hidden = 2048
model = torch.nn.Sequential(
    torch.nn.Linear(hidden, 4 * hidden), torch.nn.GELU(), torch.nn.Linear(4 * hidden, hidden),
).to(dev, dtype=torch.bfloat16)

start = time.time()
onset = stop = None
expect = "none"
if mode in LEAKS:
    onset, expect = start + args.onset, "leak"
    if mode in ("fast_leak", "gc_sawtooth_fast_leak"):
        stop = start + args.stop
elif mode == "gc_sawtooth":
    onset = start + gc_cycles[0]  # the first collection
elif mode == "burst":
    onset, stop = start + args.onset, start + args.onset + args.hold
elif mode == "staircase":
    onset, stop = start + 30, start + 130
elif mode in ("cache_fill", "gc_sawtooth_cache_fill"):
    onset = start + 60
elif mode == "adapter_churn":
    onset = start + 60  # the first swap comes after the six loads
elif mode == "first_traffic":
    onset, stop = start + args.onset, start + args.onset + 110  # the first request; the last workspace
elif mode == "load_climb":
    onset, stop = start + args.load_at, start + args.load_at + 2 * args.load_rise + args.load_hold
elif mode in ("leak", "no_inference_mode"):
    onset, expect = start, "leak"
if args.meta:
    with open(args.meta, "w") as f:
        json.dump({"mode": name, "pid": os.getpid(), "uuid": "GPU-" + str(torch.cuda.get_device_properties(0).uuid),
                   "start": start, "onset": onset, "stop": stop, "expect": expect, "rate_mib_per_min": rate_mib,
                   # Outside the ranges the detector was built on (vram_eval -stress,
                   # x_gc_sawtooth_cache_fill): measured and printed, not scored.
                   "probe": mode == "gc_sawtooth_cache_fill"}, f)
        f.write("\n")

reporter = None
if mode != "nvml_only":
    reporter = vc.Reporter(socket_path=args.socket, interval=1.0,
                           labels={"service": "gpu-e2e-" + name.replace("_", "-"), "model": "mlp"},
                           sources=[vc.torch_source()])
    reporter.start()



def load_mean(el):
    """Mean requests in flight el seconds in: a raised cosine up, a hold, and down."""
    d = el - args.load_at
    up = lambda f: args.load_peak * (1 - math.cos(math.pi * f)) / 2  # noqa: E731
    if d < 0 or d >= 2 * args.load_rise + args.load_hold:
        return 0.0
    if d < args.load_rise:
        return up(d / args.load_rise)
    if d < args.load_rise + args.load_hold:
        return args.load_peak
    return up(1 - (d - args.load_rise - args.load_hold) / args.load_rise)


def poisson(m):
    l, k, p = math.exp(-m), 0, rng.random()
    while p > l:
        k += 1
        p *= rng.random()
    return k


class Request(object):
    """One request in flight under load_climb: its activations, counted by
    reporter.request() while it holds them when --report-load is given."""

    def __init__(self):
        self.ctx = reporter.request() if (reporter is not None and report_load) else None
        if self.ctx is not None:
            self.ctx.__enter__()
        self.t = torch.empty(int(rng.uniform(6, 32) * MIB), dtype=torch.uint8, device=dev).fill_(1)

    def end(self):
        self.t = None
        if self.ctx is not None:
            self.ctx.__exit__(None, None, None)


def cyclic_garbage(nbytes):
    """A tensor in a reference cycle, dropped at once: only the cyclic collector frees it."""
    box = [torch.empty(nbytes, dtype=torch.uint8, device=dev).fill_(1)]
    box.append(box)


# first_traffic's workspaces: seconds after the first request, MiB.
WORKSPACES = [(0, 96), (30, 64), (75, 80), (110, 64)]
report_load = args.report_load or mode == "first_traffic"
flight = []     # load_climb's requests in flight
garbage_bytes = 0.0
next_gc, gc_i = start + gc_cycles[0], 0
kept = []       # what a leak keeps
cache = []      # the staircase's items, the cache fill's and the adapters
churn_rng = random.Random(2)
next_swap = start + 60  # adapter_churn's first swap
held = None     # the burst's memory
running = None
kept_bytes = 0.0
last = start
n = 0
while True:
    now = time.time()
    el = now - start
    if el >= args.seconds:
        break
    if mode == "first_traffic" and now < onset:
        time.sleep(0.2)  # loaded and idle: the reporter pushes, no request runs
        last = now
        continue
    # What this mode holds besides the request itself.
    if mode == "first_traffic":
        while len(cache) < len(WORKSPACES) and now - onset >= WORKSPACES[len(cache)][0]:
            cache.append(torch.empty(WORKSPACES[len(cache)][1] * MIB, dtype=torch.uint8, device=dev).fill_(1))
    if mode == "staircase" and 30 <= el < 131 and len(cache) < 1 + int((el - 30) // 20):
        cache.append(torch.empty(64 * MIB, dtype=torch.uint8, device=dev).fill_(1))
    if mode == "adapter_churn":
        # Six slots: filled over the first 60 s, then one swap every 10–40 s, the oldest
        # out, one of another size in (sizes drawn apart from the requests' stream).
        if len(cache) < 6 and el >= 10 * len(cache):
            cache.append(torch.empty(churn_rng.randint(32, 256) * MIB, dtype=torch.uint8, device=dev).fill_(1))
        elif len(cache) == 6 and now >= next_swap:
            cache.pop(0)
            cache.append(torch.empty(churn_rng.randint(32, 256) * MIB, dtype=torch.uint8, device=dev).fill_(1))
            next_swap = now + churn_rng.uniform(10, 40)
    if mode in ("cache_fill", "gc_sawtooth_cache_fill") and el >= 60:
        # The budget's share the cache holds by now, in 8 MiB items.
        while len(cache) * 8 < 1536 * (1 - math.exp(-(el - 60) / 60.0)) - 8:
            cache.append(torch.empty(8 * MIB, dtype=torch.uint8, device=dev).fill_(1))
    if mode == "burst":
        if held is None and onset <= now < stop:
            held = torch.empty(1024 * MIB, dtype=torch.uint8, device=dev).fill_(1)
        elif held is not None and now >= stop:
            held = None
    if mode in ("load_climb", "load_climb_leak"):
        # The next requests are taken on before the last ones end: while the mean is well
        # above zero the server is never idle, and its floor is the least load in flight.
        nxt = [Request() for _ in range(poisson(load_mean(el)))]
        for r in flight:
            r.end()
        flight = nxt
    if sawtooth:
        garbage_bytes += args.gc_rate_mib * MIB * (now - last) / 60.0
        while garbage_bytes >= MIB:
            cyclic_garbage(MIB)
            garbage_bytes -= MIB
        if now >= next_gc:
            gc.collect()
            gc_i += 1
            next_gc += gc_cycles[min(gc_i, len(gc_cycles) - 1)]
    if mode in LEAKS and now >= onset and (stop is None or now < stop):
        kept_bytes += rate_mib * MIB * (now - max(last, onset)) / 60.0
        while kept_bytes >= MIB:  # keep it in 1 MiB tensors, as outputs kept per request
            kept.append(torch.empty(MIB, dtype=torch.uint8, device=dev).fill_(1))
            kept_bytes -= MIB
    last = now

    batch = rng.choice([1, 2, 4, 8, 16])
    seq = rng.choice([32, 64, 128, 256]) if mode != "leak" else 32
    if mode == "no_inference_mode":
        batch, seq = 1, 8  # each kept graph holds ~0.3 MiB of activations: ~100 MiB/min
    x = torch.randn(batch, seq, hidden, device=dev, dtype=torch.bfloat16)
    ctx = reporter.request() if (reporter is not None and report_load) else None
    if ctx is not None:
        ctx.__enter__()
    if mode == "no_inference_mode":
        out = model(x)
        score = out.float().pow(2).mean()
        running = score if running is None else running + score  # keeps every graph alive
    else:
        with torch.inference_mode():
            out = model(x)
        if mode == "leak":
            kept.append(out[:, :8].clone())  # outputs kept across requests
    torch.cuda.synchronize()
    if ctx is not None:
        ctx.__exit__(None, None, None)
    if reporter is not None:
        reporter.sample_now()  # request boundary: the cleanest allocated floor
    n += 1
    time.sleep(max(0.0, 1.0 / args.rate))
s = torch.cuda.memory_stats(0)
sent = reporter.sent if reporter is not None else 0
dropped = reporter.dropped if reporter is not None else 0
print("mode=%s requests=%d allocated=%d reserved=%d sent=%d dropped=%d" % (
    mode, n, s["allocated_bytes.all.current"], s["reserved_bytes.all.current"], sent, dropped))
if reporter is not None:
    reporter.stop()
