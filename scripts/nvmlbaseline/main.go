// Command nvmlbaseline is the RSS floor for any Go program that uses NVML: it loads
// libnvidia-ml through go-nvml as the daemon does, initialises it, reads each GPU's
// memory once (so the driver's per-device state exists) and sleeps until killed.
// scripts/gpu-e2e.sh reports its RSS next to the daemon's.
//
//	go build -o bin/nvmlbaseline ./scripts/nvmlbaseline && bin/nvmlbaseline
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

func main() {
	lib := gonvml.New()
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		fmt.Fprintln(os.Stderr, "nvmlbaseline: NVML init:", gonvml.ErrorString(ret))
		os.Exit(1)
	}
	n, _ := lib.DeviceGetCount()
	for i := range n {
		if d, ret := lib.DeviceGetHandleByIndex(i); ret == gonvml.SUCCESS {
			_, _ = d.GetMemoryInfo_v2()
		}
	}
	fmt.Println("ready", n)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	_ = lib.Shutdown()
}
