// Command rssfloor is the RSS floor of any exporter built on this project's required
// parts: it does what scripts/nvmlbaseline does (load libnvidia-ml through go-nvml,
// initialise it, read each GPU's memory once) and also serves one gauge with
// client_golang's promhttp (its own registry with the Go and process collectors, as the
// daemon's), logs through zap and reads its own /proc/self/stat through procfs. It does
// nothing a Prometheus exporter could leave out, so the daemon's RSS against it is what
// the daemon's own features cost, and its RSS against nvmlbaseline is what linking the
// required libraries costs before a feature is written (issue 13's RSS target).
//
// It prints "ready <gpus> <address>" once it listens; scripts/gpu-e2e.sh scrapes it a
// few times (so the HTTP and gzip paths are paged in, as a scraped daemon's are) and
// reports its RSS next to the daemon's and nvmlbaseline's.
//
//	go build -o bin/rssfloor ./scripts/rssfloor && bin/rssfloor
//	bin/rssfloor -library-path /nonexistent/libnvidia-ml.so.1 -allow-missing
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/procfs"
	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/scripts/internal/nvmlfloor"
)

func main() {
	path, allowMissing := nvmlfloor.Flags()
	listen := flag.String("listen", "127.0.0.1:0", "address to serve /metrics on")
	flag.Parse()
	log, err := zap.NewProduction()
	if err != nil {
		fmt.Fprintln(os.Stderr, "rssfloor: logger:", err)
		os.Exit(1)
	}
	lib, n, err := nvmlfloor.Open(*path)
	if err != nil {
		if !*allowMissing {
			log.Fatal("NVML failed (-allow-missing runs without it)", zap.Error(err))
		}
		log.Warn("running without NVML", zap.Error(err))
	}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		log.Fatal("procfs", zap.Error(err))
	}
	self, err := fs.Self()
	if err != nil {
		log.Fatal("procfs self", zap.Error(err))
	}
	st, err := self.Stat()
	if err != nil {
		log.Fatal("procfs self stat", zap.Error(err))
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "rssfloor_start_ticks", Help: "This process's start time, clock ticks since boot (procfs)."})
	g.Set(float64(st.Starttime))
	reg.MustRegister(g)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal("listen", zap.Error(err))
	}
	go func() { _ = http.Serve(ln, mux) }()
	fmt.Println("ready", n, ln.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	if lib != nil {
		_ = lib.Shutdown()
	}
}
