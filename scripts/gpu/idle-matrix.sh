#!/usr/bin/env bash
# Idle CPU of the daemon with 16 pushing processes (no scrapes) over a matrix of settings,
# to choose defaults from: CASES is a list of poll,gomaxprocs,push-interval,nvml triples
# ("-" = the default); each case runs the daemon fresh, starts 16 pushers through the real
# client, waits for them, then sums the daemon's threads' on-CPU time (schedstat, ns) over
# WINDOW seconds. Run from the repository root on a GPU host with bin/vram_exporter built.
set -u
w=$(mktemp -d); win=${WINDOW:-45}
oncpu() { cat /proc/$1/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%d", s}'; }
ticks() { sed 's/^.*) //' /proc/$1/stat | awk '{print $12 " " $13}'; }
for c in ${CASES:-"1s,-,1,nvml"}; do
  IFS=, read -r poll procs every mode <<< "$c"
  args=(--web.listen-address=127.0.0.1:10191 --push.socket=$w/s.sock)
  [ "$poll" != - ] && args+=(--nvml.poll-interval=$poll)
  [ "$mode" = nonvml ] && args+=(--nvml.library-path=/nonexistent/libnvidia-ml.so.1)
  env_procs=(); [ "$procs" != - ] && env_procs=(GOMAXPROCS=$procs)
  rm -f $w/s.sock $w/r-*
  env "${env_procs[@]}" bin/vram_exporter "${args[@]}" > $OUT/im-$poll-$procs-$every-$mode.log 2>&1 &
  d=$!; sleep 1
  ps=()
  for i in $(seq 1 16); do PUSH_INTERVAL=$every python3 scripts/gpu/pusher.py $w/s.sock $w/r-$i > /dev/null 2>&1 & ps+=($!); done
  for i in $(seq 1 16); do for _ in $(seq 1 300); do [ -s $w/r-$i ] && break; sleep 0.1; done; done
  sleep 6
  a=$(oncpu $d); ta=($(ticks $d)); sleep $win; b=$(oncpu $d); tb=($(ticks $d))
  hz=$(getconf CLK_TCK)
  echo "poll=$poll GOMAXPROCS=$procs push every ${every}s $mode: on-CPU $(( (b - a) * 60 / win / 1000000 )) ms/min (utime $(( (tb[0]-ta[0])*1000*60/hz/win )) + stime $(( (tb[1]-ta[1])*1000*60/hz/win )) ms/min); threads $(ls /proc/$d/task | wc -l); RssAnon/RssFile $(awk '/^RssAnon:/ {a=$2} /^RssFile:/ {f=$2} END {printf "%.1f / %.1f MB", a/1024, f/1024}' /proc/$d/status)"
  kill ${ps[@]}; wait ${ps[@]} 2>/dev/null; kill $d; wait $d
done
