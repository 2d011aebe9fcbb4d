// Package nvmlfloor is what the RSS baselines (scripts/nvmlbaseline, scripts/rssfloor) do
// with NVML, so that both measure the same library state: load libnvidia-ml through
// go-nvml as the daemon does, initialise it and read each GPU's memory once (so the
// driver's per-device state exists).
package nvmlfloor

import (
	"flag"
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Open loads libnvidia-ml from path (empty: the loader's search, as the daemon's
// default), initialises it and reads every GPU's memory once. It returns the library, to
// shut down on exit, and the number of GPUs.
func Open(path string) (gonvml.Interface, int, error) {
	var opts []gonvml.LibraryOption
	if path != "" {
		opts = append(opts, gonvml.WithLibraryPath(path))
	}
	lib := gonvml.New(opts...)
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		return nil, 0, fmt.Errorf("NVML init: %s", gonvml.ErrorString(ret))
	}
	n, _ := lib.DeviceGetCount()
	for i := range n {
		if d, ret := lib.DeviceGetHandleByIndex(i); ret == gonvml.SUCCESS {
			_, _ = d.GetMemoryInfo_v2()
		}
	}
	return lib, n, nil
}

// Flags defines the baselines' two flags on the default flag set: the library to load,
// and whether to keep running without it (on a machine without a GPU, the floor of the
// same Go program without the library).
func Flags() (path *string, allowMissing *bool) {
	path = flag.String("library-path", "", "libnvidia-ml to load (empty: the loader's search, as the daemon's default)")
	allowMissing = flag.Bool("allow-missing", false, "keep running without NVML when it cannot be initialised")
	return path, allowMissing
}
