# gpu-e2e.sh phase 3, sourced by it (not run on its own): fifteen serving loops
# (scripts/gpu/serve_loop.py) push through the real client while the daemon records a
# trace: a cache that fills in steps and plateaus, one that fills smoothly and ever
# slower to a 1.5 GiB budget, an adapter cache at capacity swapping one of six adapters
# of 32–256 MiB for another every 10–40 s (a bounded random walk: a look-alike), a burst that holds 1 GiB for two minutes, a healthy loop, one that pushes nothing (NVML only), a slow leak (20 MiB/min)
# and a fast leak (400 MiB/min for FAST_SECONDS, 180 by default: 1.2 GiB, stopped long
# before the GPU is full; a young process's steep rise waits half a short window more
# before it pages, so 90 s, as before round 7, ended before the fast rule could page), the
# burst and both leaks from LEAK_ONSET seconds in; and two loops under a climbing load
# that count their requests in flight with the client's request(), one with a 20 MiB/min
# leak from LEAK_ONSET; and fast_leak_counted, the fast leak from COUNTED_ONSET (400 s:
# past a young process's probation, two short windows after its warm-up, where a young
# process's steep rise waits half a short window whatever the counts) whose every request
# goes through request(); and a collector's sawtooth (30 MiB/min of garbage in reference
# cycles, collected after cycles of 90, 300, 100 and 280 s: the second outlasts the
# envelope of the first), alone and over the fast leak from LEAK_ONSET, part way up its
# long cycle, scored on a replay with scripts/gpu/sawtooth-trace.yml (the defaults five
# times faster: short-trace.yml's long window is shorter than the long cycle); the same
# sawtooth over cache_fill's cache, a probe printed at both settings, not scored
# (outside the ranges the detector was built on: vram_eval -stress,
# x_gc_sawtooth_cache_fill); and
# first_traffic, a model loaded and left idle until LEAK_ONSET, long past its warm-up,
# whose first requests (every one through request(), so the client's counts begin with
# them) load the kernels lazily and create four workspaces that stay: a look-alike. The trace
# is replayed once more without the counts, as the
# control (printed, not scored: without them the climb may page). Triage runs while they do; then the
# trace is replayed with the scaled trend settings of scripts/gpu/short-trace.yml and
# scripts/gpu/verdicts.py prints each loop's verdicts and the delay from its onset: a
# look-alike flagged, or a leak missed, sets fail=1. Wall time: TRACE_SECONDS + ~20 s.
#
# Uses from gpu-e2e.sh: here, work, OUT, sock, PORT, TRACE_SECONDS, LEAK_ONSET (default
# 240), the pids array, fail, scrape.
# shellcheck shell=bash disable=SC2154,SC2034 # variables of gpu-e2e.sh, read and set there
LEAK_ONSET=${LEAK_ONSET:-240}
FAST_SECONDS=${FAST_SECONDS:-180}
LOAD_RISE=${LOAD_RISE:-120}
COUNTED_ONSET=${COUNTED_ONSET:-400}
echo "== phase 3: serving loops for ${TRACE_SECONDS}s (behaviours from ${LEAK_ONSET}s), recording a trace"
if [ "$TRACE_SECONDS" -le "$((LEAK_ONSET + FAST_SECONDS))" ]; then
  echo "FAIL TRACE_SECONDS=$TRACE_SECONDS leaves under FAST_SECONDS=$FAST_SECONDS after LEAK_ONSET=$LEAK_ONSET to see the leaks"
  fail=1
fi
if [ "$TRACE_SECONDS" -lt "$((COUNTED_ONSET + 90))" ]; then
  echo "FAIL TRACE_SECONDS=$TRACE_SECONDS leaves under 90 s after COUNTED_ONSET=$COUNTED_ONSET to see the counted fast leak"
  fail=1
fi
loops=()
metas=()
saw_metas=()
: > "$OUT/trace-pids.txt"
for loop in staircase cache_fill adapter_churn burst healthy nvml_only slow_leak fast_leak load_climb load_climb_leak fast_leak_counted gc_sawtooth gc_sawtooth_fast_leak gc_sawtooth_cache_fill first_traffic; do
  # fast_leak: 400 MiB/min for FAST_SECONDS, then it holds what it has. The load loops
  # count their requests with the client's request(): traffic from 60 s that climbs for
  # LOAD_RISE s to 24 requests in flight, holds 60 s and falls back. From 60 s, not 90
  # (rounds 8-21): the leak under it is hidden until the traffic ends, and from 90 s that
  # left it 2 minutes at rest before the trace ends; rounds 13-21 flagged it 16-33 s
  # before the end, and round 22's first H100 run not at all.
  mode=$loop onset=$LEAK_ONSET extra=()
  case $loop in
    load_climb*) extra=(--report-load --load-at 60 --load-rise "$LOAD_RISE" --load-hold 60 --load-peak 24) ;;
    fast_leak_counted) mode=fast_leak onset=$COUNTED_ONSET extra=(--report-load --name "$loop") ;;
  esac
  python3 "$here/gpu/serve_loop.py" --mode "$mode" --socket "$sock" --seconds "$TRACE_SECONDS" \
    --onset "$onset" --stop "$((onset + FAST_SECONDS))" --hold 120 --meta "$OUT/loop-$loop.json" \
    "${extra[@]}" > "$OUT/loop-$loop.log" 2>&1 &
  loops+=("$!")
  pids+=("$!")
  case $loop in
    # The probe is printed at both settings: at sawtooth-trace.yml's (a 12-minute
    # MaxWarmUp) a trace this short ends inside its warm-up.
    gc_sawtooth_cache_fill) saw_metas+=("$OUT/loop-$loop.json"); metas+=("$OUT/loop-$loop.json") ;;
    gc_sawtooth*) saw_metas+=("$OUT/loop-$loop.json") ;; # scored on their own settings, below
    *) metas+=("$OUT/loop-$loop.json") ;;
  esac
  echo "$loop $!" >> "$OUT/trace-pids.txt"
done
sleep $((TRACE_SECONDS - 5))
scrape "$OUT/metrics-phase3.txt" # while the loops still run
echo "-- triage while the loops run"
"$work/vram_exporter" triage --url "http://127.0.0.1:$PORT" --no-color | tee "$OUT/triage.txt" || fail=1
"$work/vram_exporter" triage --url "http://127.0.0.1:$PORT" --output json > "$OUT/triage.json" || fail=1
for p in "${loops[@]}"; do wait "$p" || { echo "FAIL a serving loop (pid $p) exited non-zero; see $OUT/loop-*.log"; fail=1; }; done
cat "$OUT"/loop-*.log
echo "-- replay of the recorded trace with scripts/gpu/short-trace.yml"
"$work/vram_exporter" replay --config.file="$here/gpu/short-trace.yml" --input "$OUT/trace.jsonl" | tee "$OUT/replay.txt"
"$work/vram_exporter" replay --config.file="$here/gpu/short-trace.yml" --input "$OUT/trace.jsonl" --output json > "$OUT/replay.json" || fail=1
echo "-- each loop's verdicts and the delay from its onset"
python3 "$here/gpu/verdicts.py" "$OUT/replay.json" "${metas[@]}" | tee "$OUT/verdicts.txt"
[ "${PIPESTATUS[0]}" = 0 ] || fail=1
echo "-- the collector's sawtooth loops, replayed with scripts/gpu/sawtooth-trace.yml (the defaults five times faster; the 4-minute long window above forgets a 300 s cycle's collection)"
"$work/vram_exporter" replay --config.file="$here/gpu/sawtooth-trace.yml" --input "$OUT/trace.jsonl" --output json > "$OUT/replay-sawtooth.json" || fail=1
python3 "$here/gpu/verdicts.py" "$OUT/replay-sawtooth.json" "${saw_metas[@]}" | tee "$OUT/verdicts-sawtooth.txt"
[ "${PIPESTATUS[0]}" = 0 ] || fail=1
echo "-- control: the same trace without the load loops' requests in flight (as a client that does not count them)"
sed -E 's/,"in_flight":[0-9]+//' "$OUT/trace.jsonl" > "$OUT/trace-no-load.jsonl"
"$work/vram_exporter" replay --config.file="$here/gpu/short-trace.yml" --input "$OUT/trace-no-load.jsonl" --output json > "$OUT/replay-no-load.json" || fail=1
python3 "$here/gpu/verdicts.py" "$OUT/replay-no-load.json" "$OUT/loop-load_climb.json" "$OUT/loop-load_climb_leak.json" "$OUT/loop-fast_leak_counted.json" | tee "$OUT/verdicts-no-load.txt" || true
grep -E '^vram_leak_verdict\{.*\} 1$|^vram_growth_bytes_per_second|^vram_gpu_exhaustion_seconds' "$OUT/metrics-phase3.txt" | head -60
