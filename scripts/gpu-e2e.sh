#!/usr/bin/env bash
# Real-GPU check of vram_exporter. Runs the daemon on a machine with an NVIDIA GPU and
# PyTorch and checks what it exports against nvidia-smi and against torch's own figures.
#
#   phase 1 (driver view): a PyTorch process holds a known amount; per-GPU and per-process
#           bytes on /metrics must agree with nvidia-smi to the MiB.
#   phase 2 (allocator view): a PyTorch process allocates and caches known amounts and
#           pushes them with the real Python client; allocated/reserved must equal torch's
#           figures, cached = reserved - allocated, NVML used >= reserved, unattributed is
#           the CUDA context and library overhead.
#   phase 3 (optional, TRACE_SECONDS>0): fifteen serving loops (scripts/gpu/serve_loop.py)
#           push through the real client while the daemon records a trace
#           (--trace.record): a cache that fills in steps and plateaus, one that fills
#           smoothly and ever slower to a 1.5 GiB budget, an adapter cache at capacity swapping
#           adapters of different sizes (a bounded random walk), a burst that
#           holds 1 GiB for two minutes, a healthy loop, one that pushes nothing (NVML
#           only), a slow leak and a fast leak stopped long before the GPU is full (both
#           from LEAK_ONSET seconds in), two under a climbing load that count their
#           requests in flight (one leaking), a fast leak that counts them from
#           COUNTED_ONSET, a collector's sawtooth of uneven cycles, alone, over the
#           fast leak and (a probe, printed, not scored) over the cache fill, and a
#           model left idle until its first traffic at LEAK_ONSET
#           (scripts/gpu/phase3.sh). Triage runs while they do; then the trace is
#           replayed with the scaled trend settings of scripts/gpu/short-trace.yml and
#           scripts/gpu/verdicts.py prints each loop's verdicts and the delay from its
#           onset (a look-alike flagged, or a leak missed, fails the run). Wall time:
#           TRACE_SECONDS plus about 20 s.
#   phase OOM (optional, PHASE_OOM=1, about 80 s): three PyTorch processes each provoke
#           one kind of out-of-memory error under a 4 GiB per-process limit
#           (scripts/gpu/oom_kinds.py: shortage, fragmentation, peak) through the real
#           client; each must be counted once under its kind, and triage's words for
#           each are printed.
#
#   phase 4 (cost, COST=1, the default; about 4 minutes): a fresh daemon at its default
#           settings (a 5 s poll) with 1 and then 16 processes pushing through the real
#           client at its default interval (5 s; PUSH_INTERVAL=1 for once a second):
#           /metrics p50/p95 over 2,000 kept-alive gzip scrapes, idle CPU per minute (the
#           daemon's threads' on-CPU time from schedstat, with no scrapes), RSS,
#           vram_nvml_poll_duration_seconds next to the raw time of the same NVML calls
#           (scripts/nvmlraw: spaced a poll interval apart as the daemon polls, and back
#           to back), the RSS of an NVML-only Go program (scripts/nvmlbaseline) and of
#           one that also serves /metrics through the required libraries
#           (scripts/rssfloor: client_golang, zap, procfs; scraped 20 times), each RSS
#           also split into RssAnon and RssFile. Figures only: it fails nothing.
#           scripts/gpu/idle-matrix.sh gives idle CPU across poll and push intervals.
#
# usage: OUT=/some/dir BIN=bin/vram_exporter [TRACE_SECONDS=520] [LEAK_ONSET=240] [FAST_SECONDS=180] [COUNTED_ONSET=400] [DAEMON_CONFIG=scripts/gpu/short-trace.yml] [COST=0] [PHASE_OOM=1] scripts/gpu-e2e.sh
# Phase 4 needs bin/scrapetime, bin/nvmlraw, bin/nvmlbaseline and bin/rssfloor (or go to build them):
#   go build -o bin/ ./cmd/vram_exporter ./scripts/scrapetime ./scripts/nvmlraw ./scripts/nvmlbaseline ./scripts/rssfloor
# Exits non-zero when a check fails. Logs and scrapes are written under $OUT.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$(mktemp -d)}
BIN=${BIN:-$here/../bin/vram_exporter}
TRACE_SECONDS=${TRACE_SECONDS:-0}
COST=${COST:-1}
PORT=${PORT:-10090}
mkdir -p "$OUT"
work=$(mktemp -d /tmp/vram-e2e.XXXX)
cp "$BIN" "$work/vram_exporter"
sock="$work/run/push.sock"
fail=0
pids=()
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

scrape() { curl -sf "http://127.0.0.1:$PORT/metrics" > "$1" || python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$PORT/metrics').read().decode())" > "$1"; }
wait_file() { for _ in $(seq 1 "${2:-600}"); do [ -s "$1" ] && return 0; sleep 0.1; done; echo "timed out waiting for $1" >&2; return 1; }

echo "== environment"
nvidia-smi --query-gpu=index,uuid,name,driver_version,memory.total,memory.used,memory.reserved --format=csv | tee "$OUT/nvidia-smi-gpus.csv"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'

record=()
[ "$TRACE_SECONDS" -gt 0 ] && record=(--trace.record="$OUT/trace.jsonl")
[ -n "${DAEMON_CONFIG:-}" ] && record+=(--config.file="$DAEMON_CONFIG")
"$work/vram_exporter" --web.listen-address="127.0.0.1:$PORT" --push.socket="$sock" \
  --nvml.poll-interval=1s --log.level=debug "${record[@]}" > "$OUT/daemon.log" 2>&1 &
daemon=$!
pids+=("$daemon")
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/-/healthy" >/dev/null 2>&1 && break; sleep 0.1; done

echo "== phase 1: driver view vs nvidia-smi"
HOLD_MIB=1024
python3 "$here/gpu/hold.py" $HOLD_MIB "$work/hold.ready" &
hold=$!
pids+=("$hold")
wait_file "$work/hold.ready" || fail=1
sleep 3 # two poll intervals, so the daemon has sampled the held memory
scrape "$OUT/metrics-phase1.txt"
nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader,nounits > "$OUT/smi-apps.csv"
nvidia-smi --query-gpu=uuid,memory.used,memory.total,memory.reserved --format=csv,noheader,nounits > "$OUT/smi-gpus.csv"
scrape "$OUT/metrics-phase1b.txt" # a second scrape after nvidia-smi: both must agree with it
python3 "$here/gpu/compare.py" phase1 "$OUT/metrics-phase1.txt" "$OUT/smi-apps.csv" "$OUT/smi-gpus.csv" "$hold" $HOLD_MIB | tee "$OUT/phase1.txt" || fail=1
grep -E '^vram_(nvml_up|gpu_memory_[a-z_]+|process_gpu_memory_used_bytes|gpu_info)' "$OUT/metrics-phase1.txt"
cat "$OUT/smi-apps.csv" "$OUT/smi-gpus.csv"
kill "$hold"; wait "$hold" 2>/dev/null

echo "== phase 2: allocator view via the Python client"
python3 "$here/gpu/pushcheck.py" "$sock" "$work/pushcheck.json" "$work/push.ready" &
pc=$!
pids+=("$pc")
wait_file "$work/push.ready" || fail=1
sleep 3
scrape "$OUT/metrics-phase2.txt"
cp "$work/pushcheck.json" "$OUT/pushcheck.json"
python3 "$here/gpu/compare.py" phase2 "$OUT/metrics-phase2.txt" "$work/pushcheck.json" | tee "$OUT/phase2.txt" || fail=1
grep -E "^vram_(runtime_[a-z_]+|process_unattributed_bytes|process_gpu_memory_used_bytes)\{pid=\"$pc\"" "$OUT/metrics-phase2.txt"
kill "$pc"; wait "$pc" 2>/dev/null
sleep 2
scrape "$OUT/metrics-phase2-after-exit.txt"
if grep -q "pid=\"$pc\"" "$OUT/metrics-phase2-after-exit.txt"; then echo "FAIL series of exited pid $pc still exported"; fail=1; else echo "PASS exited client vanished from /metrics"; fi

if [ "${VISIBLE:-1}" = 1 ]; then
  # The join is by GPU UUID, never the CUDA index: CUDA_VISIBLE_DEVICES names the GPU by
  # its UUID here (on a multi-GPU host it would also renumber); the pushed pools must
  # still land on the UUID NVML reports, with the same figures as phase 2.
  echo "== phase 2b: CUDA_VISIBLE_DEVICES=<uuid> (one GPU: what a single-GPU host can check of the multi-GPU join)"
  vis=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)
  CUDA_VISIBLE_DEVICES="$vis" python3 "$here/gpu/pushcheck.py" "$sock" "$work/pushcheck-vis.json" "$work/push-vis.ready" &
  pv=$!
  pids+=("$pv")
  wait_file "$work/push-vis.ready" || fail=1
  sleep 3
  scrape "$OUT/metrics-phase2b.txt"
  cp "$work/pushcheck-vis.json" "$OUT/pushcheck-vis.json"
  python3 "$here/gpu/compare.py" phase2 "$OUT/metrics-phase2b.txt" "$work/pushcheck-vis.json" | tee "$OUT/phase2b.txt" || fail=1
  kill "$pv"; wait "$pv" 2>/dev/null
fi

if [ "$TRACE_SECONDS" -gt 0 ]; then
  # shellcheck source=scripts/gpu/phase3.sh
  . "$here/gpu/phase3.sh"
fi

if [ "$COST" = 1 ]; then
  echo "== phase 4: cost with 1 and 16 pushing processes"
  tool() { # tool NAME: the prebuilt bin/NAME, else built with go into $work
    if [ -x "$here/../bin/$1" ]; then echo "$here/../bin/$1"; return; fi
    (cd "$here/.." && go build -o "$work/$1" "./scripts/$1") >&2 && echo "$work/$1"
  }
  scrapetime=$(tool scrapetime); nvmlraw=$(tool nvmlraw); nvmlbaseline=$(tool nvmlbaseline); rssfloor=$(tool rssfloor)
  cport=$((PORT + 1))
  csock="$work/run-cost/push.sock"
  poll_s=5 # the daemon's default --nvml.poll-interval, which this phase runs with
  "$work/vram_exporter" --web.listen-address="127.0.0.1:$cport" --push.socket="$csock" \
    > "$OUT/daemon-cost.log" 2>&1 &
  cdaemon=$!
  pids+=("$cdaemon")
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$cport/-/healthy" >/dev/null 2>&1 && break; sleep 0.1; done
  # On-CPU nanoseconds of all of a process's threads (schedstat; utime+stime count in
  # 10 ms ticks, too coarse for a daemon near idle).
  cpu_ns() { cat "/proc/$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%d", s}'; }
  rss_mb() { awk '/^VmRSS:/ {printf "%.1f MB", $2 / 1024}' "/proc/$1/status"; }
  # RssAnon (heap, stacks, the driver's allocations) and RssFile (mapped binary and
  # library pages, clean and shared with the page cache) of a process.
  rss_split() { awk '/^RssAnon:/ {a = $2} /^RssFile:/ {f = $2} END {printf "%.1f / %.1f MB", a / 1024, f / 1024}' "/proc/$1/status"; }
  pushers=0
  pusher_pids=()
  declare -A res
  for n in 1 16; do
    while [ "$pushers" -lt "$n" ]; do
      PUSH_INTERVAL=${PUSH_INTERVAL:-5} python3 "$here/gpu/pusher.py" "$csock" "$work/pusher-$pushers.ready" > "$OUT/pusher-$pushers.log" 2>&1 &
      pids+=("$!")
      pusher_pids+=("$!")
      pushers=$((pushers + 1))
    done
    for i in $(seq 0 $((n - 1))); do wait_file "$work/pusher-$i.ready" || fail=1; done
    sleep $((2 * poll_s)) # a push and a tick after the last one connected
    st=$("$scrapetime" -url "http://127.0.0.1:$cport/metrics" -n 2000 -encoding gzip | tee -a "$OUT/cost-scrapes.txt")
    res[scrape,$n]=$(echo "$st" | awk '{print $8 " / " $10}')
    polls=()
    for _ in 1 2 3 4 5; do
      polls+=("$(curl -sf "http://127.0.0.1:$cport/metrics" | awk '/^vram_nvml_poll_duration_seconds / {printf "%.0f", $2 * 1e6}')")
      sleep "$poll_s"
    done
    res[poll,$n]="$(printf '%s\n' "${polls[@]}" | sort -n | sed -n 3p) µs"
    idle=$([ "$n" = 16 ] && echo 60 || echo 30)
    # nvmlraw times the same calls back to back (a warm driver), then polls a poll
    # interval apart as the daemon polls, during the idle window: it is another process,
    # so the daemon's CPU time does not include it, and the phase stays about 4 minutes.
    "$nvmlraw" -n 200 -interval "${poll_s}s" -spaced $((idle / poll_s - 1)) > "$work/raw.txt" 2>&1 &
    raw=$!
    t0=$(cpu_ns "$cdaemon"); sleep $((idle / 2))
    # nvmlraw is an NVML-only Go program too, one that makes the poll's calls: its RSS
    # midway tells the NVML library's allocations for them from the daemon's own.
    res[rawsplit,$n]=$(rss_split "$raw" 2>/dev/null || echo "gone")
    sleep $((idle - idle / 2)); t1=$(cpu_ns "$cdaemon")
    res[idle,$n]="$(( (t1 - t0) * 60 / idle / 1000000 )) ms/min"
    wait "$raw"
    tee -a "$OUT/cost-nvmlraw.txt" < "$work/raw.txt" > /dev/null
    res[raw,$n]="$(awk '/^raw_poll_p50_us/ {print $2}' "$work/raw.txt") µs"
    res[rawspaced,$n]="$(awk '/^raw_poll_spaced_p50_us/ {print $2}' "$work/raw.txt") µs"
    res[rawgonvml,$n]="$(awk '/^raw_poll_gonvml_p50_us/ {print $2}' "$work/raw.txt") µs"
    res[listcalls,$n]="$(sed -n 's/^list_calls compute, all GPUs: //p' "$work/raw.txt")"
    res[rss,$n]=$(rss_mb "$cdaemon")
    res[split,$n]=$(rss_split "$cdaemon")
  done
  "$nvmlbaseline" > "$work/baseline.out" 2>&1 &
  base=$!
  pids+=("$base")
  wait_file "$work/baseline.out"; sleep 2
  baserss=$(rss_mb "$base")
  basesplit=$(rss_split "$base")
  kill "$base"; wait "$base" 2>/dev/null
  # The floor of any exporter on the required libraries: NVML, then client_golang's
  # promhttp (gzip), zap and procfs; scraped like the daemon so its HTTP path is paged in.
  "$rssfloor" > "$work/floor.out" 2>&1 &
  floor=$!
  pids+=("$floor")
  wait_file "$work/floor.out"
  for _ in $(seq 1 50); do grep -q '^ready' "$work/floor.out" && break; sleep 0.1; done
  faddr=$(awk '/^ready/ {print $3}' "$work/floor.out")
  for _ in $(seq 1 20); do curl -sf --compressed "http://$faddr/metrics" > /dev/null; done
  sleep 2
  floorrss=$(rss_mb "$floor")
  floorsplit=$(rss_split "$floor")
  kill "$floor"; wait "$floor" 2>/dev/null
  {
    echo "| on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) | 1 process | 16 pushing processes |"
    echo "| --- | --- | --- |"
    echo "| /metrics p50 / p95 (gzip, 2,000 kept-alive) | ${res[scrape,1]} | ${res[scrape,16]} |"
    echo "| idle CPU (no scrapes) | ${res[idle,1]} | ${res[idle,16]} |"
    echo "| RSS | ${res[rss,1]} | ${res[rss,16]} |"
    echo "| NVML-only Go program RSS (scripts/nvmlbaseline) | $baserss | |"
    echo "| RssAnon / RssFile | ${res[split,1]} | ${res[split,16]} |"
    echo "| NVML-only Go program RssAnon / RssFile | $basesplit | |"
    echo "| NVML + client_golang + zap + procfs, serving /metrics (scripts/rssfloor) RSS | $floorrss | |"
    echo "| the same, RssAnon / RssFile | $floorsplit | |"
    echo "| NVML-only Go program making the poll's calls (scripts/nvmlraw, spaced) RssAnon / RssFile | ${res[rawsplit,1]} | ${res[rawsplit,16]} |"
    echo "| vram_nvml_poll_duration_seconds (median of 5) | ${res[poll,1]} | ${res[poll,16]} |"
    echo "| raw NVML, the same calls ${poll_s} s apart as the daemon polls (scripts/nvmlraw, p50) | ${res[rawspaced,1]} | ${res[rawspaced,16]} |"
    echo "| raw NVML, the same calls back to back, warm (p50 of 200) | ${res[raw,1]} | ${res[raw,16]} |"
    echo "| raw NVML back to back through go-nvml's list wrappers (before one call per list) | ${res[rawgonvml,1]} | ${res[rawgonvml,16]} |"
    echo "| compute list driver calls per poll: the poller / go-nvml's wrapper | ${res[listcalls,1]} | ${res[listcalls,16]} |"
  } | tee "$OUT/cost.md"
  kill "${pusher_pids[@]}"; wait "${pusher_pids[@]}" 2>/dev/null
  kill -TERM "$cdaemon"; wait "$cdaemon" 2>/dev/null
fi

if [ "${PHASE_OOM:-0}" = 1 ]; then
  echo "== phase OOM: one process per kind under a 4 GiB per-process limit"
  kinds=(shortage fragmentation peak)
  declare -A oompid
  for kind in "${kinds[@]}"; do
    env -u PYTORCH_CUDA_ALLOC_CONF python3 "$here/gpu/oom_kinds.py" "$kind" "$sock" "$work/oom-$kind.ready" > "$OUT/oom-$kind.log" 2>&1 &
    oompid[$kind]=$!
    pids+=("$!")
  done
  for kind in "${kinds[@]}"; do wait_file "$work/oom-$kind.ready" 1200 || fail=1; done
  sleep 3 # the pushes after the errors are joined
  scrape "$OUT/metrics-oom.txt"
  cat "$OUT"/oom-*.log
  grep -E '^vram_runtime_(oom_[a-z_]+|allocator_info)' "$OUT/metrics-oom.txt"
  for kind in "${kinds[@]}"; do
    p=${oompid[$kind]}
    if grep -qE "^vram_runtime_oom_events_total\{gpu=\"[0-9]+\",kind=\"$kind\",pid=\"$p\",uuid=\"[^\"]+\"\} 1\$" "$OUT/metrics-oom.txt"; then
      echo "PASS pid $p: one $kind event"
    else
      echo "FAIL pid $p: no single $kind event in vram_runtime_oom_events_total"; fail=1
    fi
  done
  echo "-- triage of the three"
  "$work/vram_exporter" triage --url "http://127.0.0.1:$PORT" --no-color | tee "$OUT/triage-oom.txt" || fail=1
  "$work/vram_exporter" triage --url "http://127.0.0.1:$PORT" --output json > "$OUT/triage-oom.json" || fail=1
  for kind in "${kinds[@]}"; do kill "${oompid[$kind]}" 2>/dev/null; wait "${oompid[$kind]}" 2>/dev/null; done
fi

scrape "$OUT/metrics-final.txt"
kill -TERM "$daemon"; wait "$daemon"; rc=$?
echo "daemon exit code after SIGTERM: $rc"
[ "$rc" = 0 ] || fail=1
[ -e "$sock" ] && { echo "FAIL socket left behind"; fail=1; }
echo "gpu-e2e: $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
