package collector

import (
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// benchHandler is the daemon's /metrics handler, as cmd/vram_exporter's
// newMetricsHandler builds it. On main before the per-view cache this file built
// promhttp.InstrumentMetricHandler(reg, promhttp.HandlerForTransactional(
// NewTransactional(c, reg), …)) instead: keep it the only difference when comparing.
func benchHandler(c *Collector, reg *prometheus.Registry) http.Handler {
	return NewHandler(c, ScrapeOptions{Sampled: reg, ErrorLog: zap.NewStdLog(zap.NewNop()), MaxRequestsInFlight: 8, Timeout: 10 * time.Second})
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
