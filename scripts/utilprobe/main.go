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
// pid, polls with a sample of it out of all polls, and its SM utilization samples.
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
			fmt.Fprintf(out, " %d:%d", s.Pid, s.SmUtil)
			seen[s.Pid] = append(seen[s.Pid], s.SmUtil)
			last = max(last, s.TimeStamp)
		}
		fmt.Fprintln(out)
		time.Sleep(*every - time.Since(t0))
	}
	if len(calls) == 0 {
		fmt.Fprintln(os.Stderr, "utilprobe: no poll made: give -for a positive duration")
		os.Exit(2)
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
		fmt.Printf("pid %d: a sample in %d of %d polls, sm %v\n", p, len(seen[p]), len(calls), seen[p])
	}
}
