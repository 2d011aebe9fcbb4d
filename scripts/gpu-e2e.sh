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
#   phase 3 (optional, TRACE_SECONDS>0): six serving loops (scripts/gpu/serve_loop.py)
#           push through the real client while the daemon records a trace
#           (--trace.record): a cache that fills in steps and plateaus, a burst that
#           holds 1 GiB for two minutes, a healthy loop, one that pushes nothing (NVML
#           only), a slow leak and a fast leak stopped long before the GPU is full (both
#           from LEAK_ONSET seconds in). Triage runs while they do; then the trace is
#           replayed with the scaled trend settings of scripts/gpu/short-trace.yml and
#           scripts/gpu/verdicts.py prints each loop's verdicts and the delay from its
#           onset (a look-alike flagged, or a leak missed, fails the run). Wall time:
#           TRACE_SECONDS plus about 20 s.
#
# usage: OUT=/some/dir BIN=bin/vram_exporter [TRACE_SECONDS=390] [LEAK_ONSET=240]
#        [DAEMON_CONFIG=scripts/gpu/short-trace.yml] scripts/gpu-e2e.sh
# Exits non-zero when a check fails. Logs and scrapes are written under $OUT.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$(mktemp -d)}
BIN=${BIN:-$here/../bin/vram_exporter}
TRACE_SECONDS=${TRACE_SECONDS:-0}

PORT=${PORT:-10090}
mkdir -p "$OUT"
work=$(mktemp -d /tmp/vram-e2e.XXXX)
cp "$BIN" "$work/vram_exporter"
sock="$work/run/push.sock"
fail=0
pids=()
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT

scrape() { curl -sf "http://127.0.0.1:$PORT/metrics" > "$1" || python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$PORT/metrics').read().decode())" > "$1"; }
wait_file() { for _ in $(seq 1 600); do [ -s "$1" ] && return 0; sleep 0.1; done; echo "timed out waiting for $1" >&2; return 1; }

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

if [ "$TRACE_SECONDS" -gt 0 ]; then
  # shellcheck source=scripts/gpu/phase3.sh
  . "$here/gpu/phase3.sh"
fi

scrape "$OUT/metrics-final.txt"
kill -TERM "$daemon"; wait "$daemon"; rc=$?
echo "daemon exit code after SIGTERM: $rc"
[ "$rc" = 0 ] || fail=1
[ -e "$sock" ] && { echo "FAIL socket left behind"; fail=1; }
echo "gpu-e2e: $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
