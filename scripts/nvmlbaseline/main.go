// Command nvmlbaseline is the RSS floor for any Go program that uses NVML: it loads
// libnvidia-ml through go-nvml as the daemon does, initialises it, reads each GPU's
// memory once (so the driver's per-device state exists) and sleeps until killed.
// scripts/gpu-e2e.sh reports its RSS next to the daemon's.
//
// With -allow-missing it keeps sleeping when the library cannot be loaded, so that on a
// machine without a GPU it is the floor of the same Go program without NVML, to compare
// with the daemon run with --nvml.library-path=/nonexistent/libnvidia-ml.so.1 (the NVML
// library itself is most of the floor on a GPU machine).
//
//	go build -o bin/nvmlbaseline ./scripts/nvmlbaseline && bin/nvmlbaseline
//	bin/nvmlbaseline -library-path /nonexistent/libnvidia-ml.so.1 -allow-missing
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/vram-exporter/vram_exporter/scripts/internal/nvmlfloor"
)

func main() {
	path, allowMissing := nvmlfloor.Flags()
	flag.Parse()
	lib, n, err := nvmlfloor.Open(*path)
	if err != nil {
		if !*allowMissing {
			fmt.Fprintln(os.Stderr, "nvmlbaseline:", err, "(-allow-missing runs without it)")
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "nvmlbaseline: running without NVML:", err)
	}
	fmt.Println("ready", n)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	if lib != nil {
		_ = lib.Shutdown()
	}
}
