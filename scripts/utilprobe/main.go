// Command utilprobe measures what NVML's per-process utilization
// (nvmlDeviceGetProcessUtilization) would give the leak detector as a load signal, on
// GPU 0: how long the call takes, and for each process how many polls carried a sample
// of it and what its SM utilization read. It polls every -every for -for, each call
// asking for the samples since the newest one seen, as a poller would.
//
// The daemon does not read it (docs/leak-detection.md, Round 10, says why): this is the
// measurement behind that, run beside scripts/gpu/utilprobe.py's workloads:
//
//	go build -o bin/utilprobe ./scripts/utilprobe && bin/utilprobe -every 1s -for 15s
//
// It prints call_p50_us, call_p90_us, the return codes, then one line per process:
// pid, how many samples of it came back over all the polls (one a poll at 1 s apart,
// more when polled faster than the driver samples), and their SM utilization.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

func main() {
	every := flag.Duration("every", time.Second, "poll interval")
	dur := flag.Duration("for", 15*time.Second, "how long to poll")
	raw := flag.String("raw", "", "also write each poll's samples here, a line each: Unix time of the call, then pid:sm pairs")
	flag.Parse()
	if *dur <= 0 || *every <= 0 {
		fmt.Fprintln(os.Stderr, "utilprobe: -every and -for must be positive durations")
		os.Exit(2)
	}
	out := io.Discard
	if *raw != "" {
		f, err := os.Create(*raw)
		if err != nil {
			fmt.Fprintln(os.Stderr, "utilprobe:", err)
			os.Exit(1)
		}
		defer f.Close()
		out = f
	}
	lib := gonvml.New()
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		fmt.Fprintln(os.Stderr, "utilprobe: NVML init:", gonvml.ErrorString(ret))
		os.Exit(1)
	}
	defer lib.Shutdown()
	d, ret := lib.DeviceGetHandleByIndex(0)
	if ret != gonvml.SUCCESS {
		fmt.Fprintln(os.Stderr, "utilprobe: GPU 0:", gonvml.ErrorString(ret))
		os.Exit(1)
	}
	var (
		last  uint64
		calls []time.Duration
		rets  = map[string]int{}
		seen  = map[uint32][]uint32{}
	)
	for end := time.Now().Add(*dur); time.Now().Before(end); {
		t0 := time.Now()
		samples, ret := d.GetProcessUtilization(last)
		calls = append(calls, time.Since(t0))
		rets[gonvml.ErrorString(ret)]++
		fmt.Fprintf(out, "%.3f", float64(t0.UnixMilli())/1e3)
		for _, s := range samples {
			last = max(last, s.TimeStamp)
			// The driver also returns entries for pid 0 (no process; 72 of them in 14
			// polls of an idle H200, all 0): not a process, left out.
			if s.Pid == 0 {
				continue
			}
			fmt.Fprintf(out, " %d:%d", s.Pid, s.SmUtil)
			seen[s.Pid] = append(seen[s.Pid], s.SmUtil)
		}
		fmt.Fprintln(out)
		time.Sleep(*every - time.Since(t0))
	}
	slices.Sort(calls)
	fmt.Printf("polls %d every %s\ncall_p50_us %d\ncall_p90_us %d\nreturns %v\n", len(calls), *every,
		calls[len(calls)/2].Microseconds(), calls[len(calls)*9/10].Microseconds(), rets)
	pids := make([]uint32, 0, len(seen))
	for p := range seen {
		pids = append(pids, p)
	}
	slices.Sort(pids)
	for _, p := range pids {
		fmt.Printf("pid %d: %d samples over %d polls, sm %v\n", p, len(seen[p]), len(calls), seen[p])
	}
}
