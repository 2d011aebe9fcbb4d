package collector

import (
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// benchHandler is the daemon's /metrics handler (cmd/vram_exporter's newMetricsHandler
// without the instrumentation the benchmarks add). On main before the per-view cache
// this file built promhttp.HandlerForTransactional(NewTransactional(c, reg), …) instead:
// keep it the only difference when comparing.
func benchHandler(c *Collector, reg, handlerReg prometheus.Gatherer) http.Handler {
	return NewHandler(c, ScrapeOptions{Sampled: reg, Others: handlerReg, ErrorLog: zap.NewStdLog(zap.NewNop()), MaxRequestsInFlight: 8, Timeout: 10 * time.Second})
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
