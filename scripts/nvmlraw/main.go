// Command nvmlraw times the NVML calls one steady poll of the daemon makes (nvml.Poller:
// the device count; per GPU memory v2, BAR1, MIG mode and the compute, graphics and MPS
// process lists; identity and unsupported calls are read once), straight through
// go-nvml, so scripts/gpu-e2e.sh can print vram_nvml_poll_duration_seconds next to the
// raw time of the same calls in the same run.
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
	calls := []struct {
		name string
		fn   func(gonvml.Device) gonvml.Return
	}{
		{"GetMemoryInfo_v2", func(d gonvml.Device) gonvml.Return { _, r := d.GetMemoryInfo_v2(); return r }},
		{"GetBAR1MemoryInfo", func(d gonvml.Device) gonvml.Return { _, r := d.GetBAR1MemoryInfo(); return r }},
		{"GetMigMode", func(d gonvml.Device) gonvml.Return { _, _, r := d.GetMigMode(); return r }},
		{"GetComputeRunningProcesses", func(d gonvml.Device) gonvml.Return { _, r := d.GetComputeRunningProcesses(); return r }},
		{"GetGraphicsRunningProcesses", func(d gonvml.Device) gonvml.Return { _, r := d.GetGraphicsRunningProcesses(); return r }},
		{"GetMPSComputeRunningProcesses", func(d gonvml.Device) gonvml.Return { _, r := d.GetMPSComputeRunningProcesses(); return r }},
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
	var polls []time.Duration
	for range *n {
		start := time.Now()
		_, _ = lib.DeviceGetCount()
		for _, c := range calls {
			if skip[c.name] {
				continue
			}
			t := time.Now()
			for _, d := range devs {
				c.fn(d)
			}
			per[c.name] = append(per[c.name], time.Since(t))
		}
		polls = append(polls, time.Since(start))
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
		fmt.Printf("  %-30s p50 %8.1fµs (all GPUs)\n", c.name, med(per[c.name]))
	}
	fmt.Printf("raw_poll_p50_us %.1f\n", med(polls))
}

func med(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2]) / 1e3
}
