// Command nvmlraw times the NVML calls the daemon's polls make (nvml.Poller), straight
// against the driver, so scripts/gpu-e2e.sh can print vram_nvml_poll_duration_seconds
// next to the raw time of the same calls in the same run. A steady poll makes the device
// count and, per GPU, memory v2 and the compute process list; the graphics and MPS lists,
// BAR1 and MIG mode are read on slower cadences (nvml.Default*Interval), and identity and
// unsupported calls once. The process lists are read as the poller reads them: one
// driver call each into a buffer sized from the last list (nvml.ReadList over
// nvml.DeviceListsInto), not through go-nvml's wrappers, which start with room for one
// process and retry. It prints:
//
//	raw_poll_p50_us          a steady poll's calls, polls back to back (a warm driver
//	                         and CPU: the floor)
//	raw_poll_spaced_p50_us   the same, polls spaced by -interval as the daemon's are (a
//	                         driver and CPU that went idle in between: what the median of
//	                         vram_nvml_poll_duration_seconds compares with); only with
//	                         -interval
//	raw_poll_gonvml_p50_us   the steady poll through go-nvml's list wrappers, back to
//	                         back, for reference (what the poller did before ReadList)
//	raw_all_calls_p50_us     every call on every poll (what a poll made before the cadences)
//	raw_mean_poll_us         the mean over a minute of 1 s polls at the default cadences
//	list_calls               driver calls per compute list: ReadList's steady count and
//	                         go-nvml's (which depends on whether the driver reports the
//	                         count it needs on ERROR_INSUFFICIENT_SIZE)
//
//	go build -o bin/nvmlraw ./scripts/nvmlraw && bin/nvmlraw -n 200 -interval 1s -spaced 25
package main

import (
	"flag"
	"fmt"
	"math/bits"
	"os"
	"slices"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vram-exporter/vram_exporter/nvml"
)

func main() {
	n := flag.Int("n", 200, "polls to time back to back")
	interval := flag.Duration("interval", 0, "also time -spaced polls this far apart, as the daemon polls (0: not)")
	spaced := flag.Int("spaced", 30, "polls to time with -interval between them")
	flag.Parse()
	lib := gonvml.New()
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		fmt.Fprintln(os.Stderr, "nvmlraw: NVML init:", gonvml.ErrorString(ret))
		os.Exit(1)
	}
	defer lib.Shutdown()
	count, _ := lib.DeviceGetCount()
	var devs []dev
	for i := range count {
		if d, ret := lib.DeviceGetHandleByIndex(i); ret == gonvml.SUCCESS {
			devs = append(devs, dev{h: d, lists: nvml.DeviceListsInto(d)})
		}
	}
	for _, d := range devs {
		if d.lists == nil {
			fmt.Fprintln(os.Stderr, "nvmlraw: this driver lacks the v3 process list calls; the poller uses go-nvml's wrappers, and so does this")
			break
		}
	}
	// every is how often a 1 s poller makes the call, in polls.
	every := func(d time.Duration) float64 { return d.Seconds() / nvml.DefaultPollInterval.Seconds() }
	list := func(kind int) func(*dev) gonvml.Return {
		return func(d *dev) gonvml.Return {
			if d.lists == nil {
				return gonvmlList(d.h, kind)
			}
			_, _, r := nvml.ReadList(d.lists, kind, &d.buf[kind])
			return r
		}
	}
	calls := []call{
		{"GetMemoryInfo_v2", 1, func(d *dev) gonvml.Return { _, r := d.h.GetMemoryInfo_v2(); return r }},
		{"GetBAR1MemoryInfo", every(nvml.DefaultBAR1Interval), func(d *dev) gonvml.Return { _, r := d.h.GetBAR1MemoryInfo(); return r }},
		{"GetMigMode", every(nvml.DefaultMIGModeInterval), func(d *dev) gonvml.Return { _, _, r := d.h.GetMigMode(); return r }},
		{"GetComputeRunningProcesses", 1, list(0)},
		{"GetGraphicsRunningProcesses", every(nvml.DefaultGraphicsMPSInterval), list(1)},
		{"GetMPSComputeRunningProcesses", every(nvml.DefaultGraphicsMPSInterval), list(2)},
	}
	// The poller stops calling what a GPU does not support; so does this.
	skip := map[string]bool{}
	for _, c := range calls {
		for i := range devs {
			if r := c.fn(&devs[i]); r == gonvml.ERROR_NOT_SUPPORTED || r == gonvml.ERROR_FUNCTION_NOT_FOUND {
				skip[c.name] = true
			}
		}
	}
	per := map[string][]time.Duration{}
	var steady, all []time.Duration
	for range *n {
		s, a := poll(lib, devs, calls, skip, per)
		steady, all = append(steady, s), append(all, a)
	}
	// The same steady poll with go-nvml's list wrappers (a fresh buffer from one entry).
	gonvmlCalls := slices.Clone(calls)
	for i := range gonvmlCalls {
		if kind := listKind(gonvmlCalls[i].name); kind >= 0 {
			gonvmlCalls[i].fn = func(d *dev) gonvml.Return { return gonvmlList(d.h, kind) }
		}
	}
	var wrapped []time.Duration
	for range *n {
		s, _ := poll(lib, devs, gonvmlCalls, skip, map[string][]time.Duration{})
		wrapped = append(wrapped, s)
	}
	var spacedPolls []time.Duration
	if *interval > 0 {
		for i := range *spaced {
			if i > 0 {
				time.Sleep(*interval) // the point here: a driver and CPU left idle in between
			}
			s, _ := poll(lib, devs, calls, skip, map[string][]time.Duration{})
			spacedPolls = append(spacedPolls, s)
		}
	}

	procs, ours, theirs := 0, 0, 0
	for i := range devs {
		d := &devs[i]
		l, _ := d.h.GetComputeRunningProcesses()
		procs += len(l)
		if d.lists != nil {
			_, c, _ := nvml.ReadList(d.lists, 0, &d.buf[0])
			ours += c
			theirs += gonvmlListCalls(d.lists, len(l))
		}
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
	if len(spacedPolls) > 0 {
		fmt.Printf("raw_poll_spaced_p50_us %.1f (%d polls %v apart)\n", med(spacedPolls), len(spacedPolls), *interval)
	}
	fmt.Printf("raw_poll_gonvml_p50_us %.1f (lists through go-nvml's wrappers)\n", med(wrapped))
	fmt.Printf("raw_all_calls_p50_us %.1f\n", med(all))
	fmt.Printf("raw_mean_poll_us %.1f (%.1f ms/min of NVML at 1 s polls)\n", mean, mean*60/1e3)
	if ours > 0 {
		fmt.Printf("list_calls compute, all GPUs: %d steady (the poller), %d through go-nvml's wrapper\n", ours, theirs)
	}
}

type dev struct {
	h     gonvml.Device
	lists nvml.ListsInto
	buf   [3][]gonvml.ProcessInfo
}

type call struct {
	name  string
	every float64
	fn    func(*dev) gonvml.Return
}

// poll makes one poll's calls: the steady ones first, timed on their own, then the
// slower ones. It returns the steady calls' time and every call's.
func poll(lib gonvml.Interface, devs []dev, calls []call, skip map[string]bool, per map[string][]time.Duration) (steady, all time.Duration) {
	start := time.Now()
	_, _ = lib.DeviceGetCount()
	for _, slow := range []bool{false, true} {
		for _, c := range calls {
			if skip[c.name] || (c.every > 1) != slow {
				continue
			}
			t := time.Now()
			for i := range devs {
				c.fn(&devs[i])
			}
			per[c.name] = append(per[c.name], time.Since(t))
		}
		if !slow {
			steady = time.Since(start)
		}
	}
	return steady, time.Since(start)
}

func listKind(name string) int {
	switch name {
	case "GetComputeRunningProcesses":
		return 0
	case "GetGraphicsRunningProcesses":
		return 1
	case "GetMPSComputeRunningProcesses":
		return 2
	}
	return -1
}

func gonvmlList(h gonvml.Device, kind int) gonvml.Return {
	var r gonvml.Return
	switch kind {
	case 0:
		_, r = h.GetComputeRunningProcesses()
	case 1:
		_, r = h.GetGraphicsRunningProcesses()
	default:
		_, r = h.GetMPSComputeRunningProcesses()
	}
	return r
}

// gonvmlListCalls is how many driver calls go-nvml's wrapper makes for a list of n: it
// offers room for one, then doubles what the driver left in the count. One call with a
// one-entry buffer tells whether the driver reports the count it needs.
func gonvmlListCalls(l nvml.ListsInto, n int) int {
	if n <= 1 {
		return 1
	}
	need, ret := l.GetComputeRunningProcessesInto(make([]gonvml.ProcessInfo, 1))
	if ret == gonvml.ERROR_INSUFFICIENT_SIZE && need > 1 {
		return 2 // 1, then 2×need
	}
	return 1 + bits.Len(uint(n-1)) // 1, 2, 4, … until n fits
}

func med(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return float64(ds[len(ds)/2]) / 1e3
}
