#!/usr/bin/env bash
# Splits the daemon's idle CPU with 16 pushing processes into user and kernel time, with
# NVML and without it (a library path that does not exist), to tell the driver's share
# from the daemon's own (POLL sets --nvml.poll-interval, default the daemon's;
# PUSH_INTERVAL the pushers' interval, default 1 s). Run from the repository root on a GPU host with bin/vram_exporter
# built; writes daemon logs under $OUT. About 75 s per mode; MODES picks them (default
# "nvml nonvml"; nvml-gomaxprocs2 is the NVML run with the Go runtime held to 2 Ps, to
# tell how much of the idle cost is the scheduler's spinning over a many-core host's Ps).
set -u
w=$(mktemp -d); hz=$(getconf CLK_TCK)
ticks() { sed 's/^.*) //' /proc/$1/stat | awk '{print $12 " " $13}'; }
for mode in ${MODES:-nvml nonvml}; do
  extra=""; [ $mode = nonvml ] && extra="--nvml.library-path=/nonexistent/libnvidia-ml.so.1"
  procs=""; [ $mode = nvml-gomaxprocs2 ] && procs=2
  GOMAXPROCS=$procs bin/vram_exporter --web.listen-address=127.0.0.1:10190 --push.socket=$w/$mode.sock ${POLL:+--nvml.poll-interval=$POLL} $extra > $OUT/d-$mode.log 2>&1 &
  d=$!; sleep 1
  ps=()
  for i in $(seq 1 16); do PUSH_INTERVAL=${PUSH_INTERVAL:-1} python3 scripts/gpu/pusher.py $w/$mode.sock $w/r-$mode-$i > /dev/null 2>&1 & ps+=($!); done
  for i in $(seq 1 16); do for _ in $(seq 1 300); do [ -s $w/r-$mode-$i ] && break; sleep 0.1; done; done
  sleep 5
  # Per thread too (on-CPU ns from schedstat, and context switches): a thread of the
  # NVML library's own would stand out from the Go runtime's.
  for t in /proc/$d/task/*; do echo "${t##*/} $(cut -d' ' -f1,3 $t/schedstat)"; done | sort > $w/t0
  a=($(ticks $d)); sleep 60; b=($(ticks $d))
  for t in /proc/$d/task/*; do echo "${t##*/} $(cut -d' ' -f1,3 $t/schedstat)"; done | sort > $w/t1
  echo "$mode: utime $(( (b[0]-a[0])*1000/hz )) ms stime $(( (b[1]-a[1])*1000/hz )) ms per minute; threads $(ls /proc/$d/task | wc -l)"
  join $w/t0 $w/t1 | awk '{printf "  thread %s: %.1f ms on CPU, %d switches per minute\n", $1, ($4-$2)/1e6, $5-$3}' | sort -t: -k2 -rn | head -6
  kill ${ps[@]}; wait ${ps[@]} 2>/dev/null; kill $d; wait $d
done
