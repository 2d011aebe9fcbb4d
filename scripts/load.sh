#!/usr/bin/env bash
# Push load test: N clients each sending R messages/s for D against a real daemon on this
# machine (loopback and a unix socket only). Reports what pushload measured and the
# daemon's RSS before, at the peak of, and after the load.
#   usage: scripts/load.sh [CLIENTS=1000] [RATE=10] [DURATION=30s]
# It runs at the default limits: 1000 connections of one uid fit
# --push.max-connections-per-uid and its connect burst (1024 each), and all clients are one
# process reporting the same two pools on one GPU, which the per-process bounds count once.
# More than 1024 clients need --push.max-connections-per-uid and
# --push.connect-burst-per-uid raised on the daemon's command line below.
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENTS=${1:-1000}; RATE=${2:-10}; DURATION=${3:-30s}
export CGO_CFLAGS=${CGO_CFLAGS:--Wno-deprecated-declarations}
ulimit -n 16384
work=$(mktemp -d)
go build -o "$work/vram_exporter" ./cmd/vram_exporter
go build -o "$work/pushload" ./scripts/pushload
port=$((20000 + RANDOM % 20000))
"$work/vram_exporter" --web.listen-address=127.0.0.1:$port --push.socket="$work/push.sock" \
  --nvml.library-path=/nonexistent --log.level=warn > "$work/daemon.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do [ -S "$work/push.sock" ] && break; sleep 0.1; done
rss() { awk '/VmRSS/ {print $2 " kB"}' /proc/$daemon/status; }
echo "daemon RSS before: $(rss)"
peak=0
( while kill -0 $daemon 2>/dev/null; do awk '/VmHWM/ {print $2}' /proc/$daemon/status > "$work/hwm"; sleep 1; done ) &
"$work/pushload" --socket "$work/push.sock" --clients "$CLIENTS" --rate "$RATE" --duration "$DURATION" \
  --metrics-url "http://127.0.0.1:$port/metrics"
rc=$?
echo "daemon RSS after:  $(rss); peak (VmHWM): $(cat "$work/hwm") kB"
curl -s "http://127.0.0.1:$port/metrics" | grep -E '^vram_push_(messages_total|rejected_total\{reason="rate_limited"\}|connections |disconnects_total\{reason="client_closed"\})' || true
exit $rc
