// Command nvmlraw times the NVML calls the daemon's polls make (nvml.Poller), straight
// through go-nvml, so scripts/gpu-e2e.sh can print vram_nvml_poll_duration_seconds next
// to the raw time of the same calls in the same run. A steady poll makes the device count
// and, per GPU, memory v2 and the compute process list; the graphics and MPS lists, BAR1
// and MIG mode are read on slower cadences (nvml.Default*Interval), and identity and
// unsupported calls once. It prints:
//
//	raw_poll_p50_us      a steady poll's calls (what most polls make, and so what the
//	                     median of vram_nvml_poll_duration_seconds is compared with)
//	raw_all_calls_p50_us every call on every poll (what a poll made before the cadences)
//	raw_mean_poll_us     the mean over a minute of 1 s polls at the default cadences
//
//	go build -o bin/nvmlraw ./scripts/nvmlraw && bin/nvmlraw -n 200
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vram-exporter/vram_exporter/nvml"
)

func main() {
	n := flag.Int("n", 200, "polls to time")
	flag.Parse()
	lib := gonvml.New()
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		fmt.Fprintln(os.Stderr, "nvmlraw: NVML init:", gonvml.ErrorString(ret))
		os.Exit(1)
	}
	defer lib.Shutdown()
	count, _ := lib.DeviceGetCount()
	var devs []gonvml.Device
	for i := range count {
		if d, ret := lib.DeviceGetHandleByIndex(i); ret == gonvml.SUCCESS {
			devs = append(devs, d)
		}
	}
	// every is how often a 1 s poller makes the call, in polls.
	every := func(d time.Duration) float64 { return d.Seconds() / nvml.DefaultPollInterval.Seconds() }
	calls := []struct {
		name  string
		every float64
		fn    func(gonvml.Device) gonvml.Return
	}{
		{"GetMemoryInfo_v2", 1, func(d gonvml.Device) gonvml.Return { _, r := d.GetMemoryInfo_v2(); return r }},
		{"GetBAR1MemoryInfo", every(nvml.DefaultBAR1Interval), func(d gonvml.Device) gonvml.Return { _, r := d.GetBAR1MemoryInfo(); return r }},
		{"GetMigMode", every(nvml.DefaultMIGModeInterval), func(d gonvml.Device) gonvml.Return { _, _, r := d.GetMigMode(); return r }},
		{"GetComputeRunningProcesses", 1, func(d gonvml.Device) gonvml.Return { _, r := d.GetComputeRunningProcesses(); return r }},
		{"GetGraphicsRunningProcesses", every(nvml.DefaultGraphicsMPSInterval), func(d gonvml.Device) gonvml.Return { _, r := d.GetGraphicsRunningProcesses(); return r }},
		{"GetMPSComputeRunningProcesses", every(nvml.DefaultGraphicsMPSInterval), func(d gonvml.Device) gonvml.Return { _, r := d.GetMPSComputeRunningProcesses(); return r }},
	}
	// The poller stops calling what a GPU does not support; so does this.
	skip := map[string]bool{}
	for _, c := range calls {
		for _, d := range devs {
			if r := c.fn(d); r == gonvml.ERROR_NOT_SUPPORTED || r == gonvml.ERROR_FUNCTION_NOT_FOUND {
				skip[c.name] = true
			}
		}
	}
	per := map[string][]time.Duration{}
	var steady, all []time.Duration
	for range *n {
		start := time.Now()
		_, _ = lib.DeviceGetCount()
		// The steady poll's calls first, timed on their own, then the slower ones.
		var steadyTime time.Duration
		for _, slow := range []bool{false, true} {
			for _, c := range calls {
				if skip[c.name] || (c.every > 1) != slow {
					continue
				}
				t := time.Now()
				for _, d := range devs {
					c.fn(d)
				}
				per[c.name] = append(per[c.name], time.Since(t))
			}
			if !slow {
				steadyTime = time.Since(start)
			}
		}
		steady = append(steady, steadyTime)
		all = append(all, time.Since(start))
	}
	procs := 0
	for _, d := range devs {
		l, _ := d.GetComputeRunningProcesses()
		procs += len(l)
	}
	fmt.Printf("gpus %d compute_processes %d polls %d\n", len(devs), procs, *n)
	for _, c := range calls {
		if skip[c.name] {
			fmt.Printf("  %-30s not supported (not called by the poller either)\n", c.name)
			continue
		}
		fmt.Printf("  %-30s p50 %8.1fµs (all GPUs), every %g polls\n", c.name, med(per[c.name]), c.every)
	}
	mean := med(steady)
	for _, c := range calls {
		if !skip[c.name] && c.every > 1 {
			mean += med(per[c.name]) / c.every
		}
	}
	fmt.Printf("raw_poll_p50_us %.1f\n", med(steady))
	fmt.Printf("raw_all_calls_p50_us %.1f\n", med(all))
	fmt.Printf("raw_mean_poll_us %.1f (%.1f ms/min of NVML at 1 s polls)\n", mean, mean*60/1e3)
}

func med(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2]) / 1e3
}
