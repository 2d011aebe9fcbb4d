package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"

	"github.com/vram-exporter/vram_exporter/apiserver"
	"github.com/vram-exporter/vram_exporter/clock"
	"github.com/vram-exporter/vram_exporter/collector"
	"github.com/vram-exporter/vram_exporter/config"
	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/push"
)

// pushStats is the push server as the collector wants it: a nil interface, not a typed
// nil, when there is no socket.
func pushStats(s *push.Server) collector.PushStats {
	if s == nil {
		return nil
	}
	return s
}

// newHTTPHandler builds the readers of the joined view, /metrics and /api/v1/, and the
// landing page and health endpoints around them.
func newHTTPHandler(cfg config.Config, joiner *join.Joiner, ps collector.PushStats, clk clock.Clock, logger *zap.Logger) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		versioncollector.NewCollector("vram_exporter"),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	mux := http.NewServeMux()
	api := newAPIHandler(cfg, joiner)
	// The API's refusals are counted per scrape, not sampled with the view.
	others := apiRejected(api)
	mux.Handle(cfg.Web.TelemetryPath, newMetricsHandler(cfg, joiner, ps, clk, reg, others, logger))
	mux.Handle("/api/v1/", api)
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "OK\n") })
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "OK\n") })
	if cfg.Web.TelemetryPath != "/" {
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "vram_exporter",
			Description: landingDescription(cfg),
			Version:     version.Info(),
			Links: []web.LandingLinks{
				{Address: cfg.Web.TelemetryPath, Text: "Metrics"},
				{Address: "/api/v1/status", Text: "/api/v1/status", Description: "the daemon's sources and settings (JSON API, docs/api.md)"},
				{Address: "/api/v1/gpus", Text: "/api/v1/gpus", Description: "each GPU's memory and exhaustion forecast"},
				{Address: "/api/v1/processes", Text: "/api/v1/processes", Description: "each process's memory, pools and verdict"},
				{Address: "/-/healthy", Text: "Health"},
				{Address: "/-/ready", Text: "Readiness"},
			},
			// The toolkit links /debug/pprof/ by default; the daemon serves no
			// profiling endpoint, so the links were dead.
			Profiling: "false",
		})
		if err != nil {
			return nil, fmt.Errorf("landing page: %w", err)
		}
		mux.Handle("/", landing)
	}
	return mux, nil
}

// apiRejected exports the API's in-flight refusals, so a dashboard refreshing too often
// shows up as a rate rather than as silent 503s. It is gathered on every scrape, so it
// builds its one family itself: a Registry's Gather makes two 1,000-slot channels per
// call, 32 KiB of garbage a scrape, most of what a scrape allocated and so most of the
// collections a busy scraper caused.
func apiRejected(h *apiserver.Handler) prometheus.Gatherer {
	name := "vram_api_requests_rejected_total"
	help := "Requests to /api/v1 answered 503 because the most requests the daemon builds at once were already being served; retry later or refresh less often."
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		v := float64(h.Rejected())
		return []*dto.MetricFamily{{
			Name: &name, Help: &help, Type: dto.MetricType_COUNTER.Enum(),
			Metric: []*dto.Metric{{Counter: &dto.Counter{Value: &v}}},
		}}, nil
	})
}

// newMetricsHandler serves /metrics: the vram_* families encoded once per view plus
// reg's (Go runtime, process, build info and promhttp_*) per scrape.
func newMetricsHandler(cfg config.Config, joiner *join.Joiner, ps collector.PushStats, clk clock.Clock, reg *prometheus.Registry, others prometheus.Gatherer, logger *zap.Logger) http.Handler {
	c := collector.New(joiner, ps, logger.Named("collector")).WithNow(clk.Now).WithHeadroomMargin(cfg.Headroom.SafetyMarginBytes).WithCmdline(cfg.Collector.ProcessCmdline)
	// reg's collectors are gathered once per view with the vram_* families; the handler
	// counts its scrapes itself (promhttp_metric_handler_*).
	return collector.NewHandler(c, collector.ScrapeOptions{
		Sampled:             reg,
		Others:              others,
		ErrorLog:            zap.NewStdLog(logger.Named("promhttp")),
		MaxRequestsInFlight: 8,
		Timeout:             10 * time.Second,
	})
}

// newAPIHandler serves /api/v1/… (docs/api.md) from the joined view.
func newAPIHandler(cfg config.Config, joiner *join.Joiner) *apiserver.Handler {
	node, err := os.Hostname()
	if err != nil {
		node = ""
	}
	return apiserver.NewHandler(joiner, apiserver.Options{
		SafetyMarginBytes: cfg.Headroom.SafetyMarginBytes,
		Node:              node,
		Version:           version.Version,
		Cmdline:           cfg.Collector.ProcessCmdline,
	})
}

// landingDescription is the landing page's description; in demo mode it says first, in
// capitals, that nothing on the page comes from this machine.
func landingDescription(cfg config.Config) string {
	const desc = "GPU memory explained: NVML joined with pushed allocator stats, leak verdicts."
	if cfg.Demo.Enabled {
		return "DEMO MODE: simulated GPUs, processes and allocator stats, not this machine's. " + desc
	}
	return desc
}

// listenHTTP binds every --web.listen-address early, so a busy port fails the start
// before the push socket exists, or takes the sockets systemd passed
// (--web.systemd-socket). It binds them itself rather than leaving it to the toolkit's
// web.ListenAndServe (which does the same, then serves through web.ServeMultiple as
// serveHTTP does) for that early failure and to log each resolved address (":0").
func listenHTTP(cfg config.Config) ([]net.Listener, error) {
	if cfg.Web.SystemdSocket {
		lns, err := activation.Listeners()
		if err != nil {
			return nil, fmt.Errorf("--web.systemd-socket: reading the sockets systemd passed: %w", err)
		}
		var out []net.Listener
		for _, ln := range lns {
			if ln != nil { // a passed descriptor that is not a stream socket
				out = append(out, ln)
			}
		}
		if len(out) == 0 {
			return nil, errors.New("--web.systemd-socket: systemd passed no listening socket (LISTEN_FDS unset or 0); start the daemon from a .socket unit, or drop the flag to listen on --web.listen-address")
		}
		return out, nil
	}
	var out []net.Listener
	for _, a := range cfg.Web.ListenAddress {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			closeAll(out)
			return nil, fmt.Errorf("cannot listen on --web.listen-address %s: %w", a, err)
		}
		out = append(out, ln)
	}
	return out, nil
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		_ = ln.Close()
	}
}

// serveHTTP serves handler on every listener through the exporter-toolkit (TLS and
// basic auth from --web.config.file) until ctx is done, then shuts the server down. Its
// "listening" lines name the addresses (tests and scripts read them to find a :0 port),
// and they come last at start: everything else is up by then.
func serveHTTP(ctx context.Context, lns []net.Listener, handler http.Handler, cfg config.Config, logger *zap.Logger) error {
	addrs := make([]string, 0, len(lns))
	for _, ln := range lns {
		addrs = append(addrs, ln.Addr().String())
		logger.Info("listening", zap.String("address", ln.Addr().String()), zap.String("telemetry_path", cfg.Web.TelemetryPath),
			zap.Bool("systemd_socket", cfg.Web.SystemdSocket))
	}
	srv := newHTTPServer(handler, cfg.Web)
	webCfg := cfg.Web.ConfigFile
	systemd := cfg.Web.SystemdSocket
	flagCfg := &web.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &systemd, WebConfigFile: &webCfg}
	slogger := slog.New(toolkitLogHandler{zapslog.NewHandler(logger.Named("web").Core())})

	errc := make(chan error, 1)
	go func() { errc <- web.ServeMultiple(lns, srv, flagCfg, slogger) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownHTTP(srv, shutdownGrace, logger)
	<-errc
	return nil
}

// shutdownGrace is how long requests in flight may finish after SIGTERM. It is short of
// the stop timeouts of systemd (90 s) and Kubernetes (30 s), so the daemon removes its
// socket itself instead of being killed.
const shutdownGrace = 5 * time.Second

// newHTTPServer bounds every phase of a connection: net/http's zero values mean no
// limit, and one stuck client per zero would be held for ever.
func newHTTPServer(handler http.Handler, w config.Web) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: min(10*time.Second, w.ReadTimeout),
		ReadTimeout:       w.ReadTimeout,
		WriteTimeout:      w.WriteTimeout,
		IdleTimeout:       w.IdleTimeout,
		MaxHeaderBytes:    w.MaxHeaderBytes,
	}
}

// shutdownHTTP stops accepting, lets requests in flight finish for up to grace, then
// closes whatever is left. A client that stops reading is a client's problem: the
// daemon still stops cleanly, and its exit code says nothing went wrong on its side.
func shutdownHTTP(srv *http.Server, grace time.Duration, logger *zap.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(ctx)
	if err == nil {
		return
	}
	logger.Warn("HTTP requests still in flight after the shutdown grace period; closing their connections",
		zap.Duration("grace", grace), zap.Error(err))
	if err := srv.Close(); err != nil {
		logger.Warn("closing HTTP connections", zap.Error(err))
	}
}
