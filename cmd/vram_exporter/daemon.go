package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"

	"github.com/vram-exporter/vram_exporter/clock"
	"github.com/vram-exporter/vram_exporter/collector"
	"github.com/vram-exporter/vram_exporter/config"
	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/leak/trend"
	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/procinfo"
	"github.com/vram-exporter/vram_exporter/push"
)

// runDaemon wires the sources, the join and the readers, serves HTTP until ctx is done,
// then shuts everything down and returns the exit code.
func runDaemon(ctx context.Context, valid config.Valid, stdout, stderr io.Writer) int {
	cfg := valid.Config()
	logger, err := newLogger(cfg.Log.Level, cfg.Log.Format, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "vram_exporter: %v\n", err)
		return 1
	}
	defer func() { _ = logger.Sync() }()
	if err := serve(ctx, cfg, logger); err != nil {
		logger.Error("vram_exporter stopped with an error", zap.Error(err))
		return 1
	}
	logger.Info("vram_exporter stopped cleanly")
	return 0
}

// daemon holds what serve wires, so tests and later subsystems can reach the pieces.
type daemon struct {
	cfg    config.Config
	log    *zap.Logger
	poller *nvml.Poller
	store  *push.Store
	pushes *push.Server
	joiner *join.Joiner
	reg    *prometheus.Registry
	// gatherer serves /metrics: the vram_* families from the view plus reg's.
	gatherer prometheus.TransactionalGatherer
}

func serve(ctx context.Context, cfg config.Config, logger *zap.Logger) error {
	logger.Info("starting vram_exporter", zap.String("version", version.Info()), zap.String("build", version.BuildContext()))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	d := &daemon{cfg: cfg, log: logger}
	var clk clock.Clock = clock.Real{}
	var facts join.FactsReader
	lib := nvml.Open(cfg.NVML.LibraryPath)
	var sim *demoNode
	if cfg.Demo.Enabled {
		var err error
		if sim, err = newDemo(cfg, logger.Named("demo")); err != nil {
			return fmt.Errorf("demo mode: %w", err)
		}
		clk, lib, facts = sim.clock, sim.nvml, sim.facts
		logger.Warn("DEMO MODE: every GPU, process and allocator figure is simulated, not read from this machine",
			zap.Int("gpus", cfg.Demo.GPUs), zap.Float64("speed", cfg.Demo.Speed), zap.Int64("seed", cfg.Demo.Seed))
	} else {
		r, err := procinfo.NewReader(cfg.Paths.Procfs)
		if err != nil {
			return fmt.Errorf("process facts: %w", err)
		}
		facts = r
	}

	// Everything that can fail on bad settings comes before the push socket is created,
	// so a failed start leaves no socket file behind.
	engine, err := trend.NewEngine(trendConfig(cfg))
	if err != nil {
		return fmt.Errorf("trend settings: %w", err)
	}
	recorder, closeRecorder, err := openRecorder(cfg, logger)
	if err != nil {
		return err
	}
	defer closeRecorder()

	d.poller = nvml.NewPoller(lib, nvml.Options{Interval: cfg.NVML.PollInterval, Clock: clk}, logger.Named("nvml"))

	var pushSource join.PushSource
	if cfg.Push.Socket != "" || sim != nil {
		d.store = push.NewStore(cfg.Push.TTL, cfg.Push.MaxConnections, clk)
		pushSource = d.store
	}
	if cfg.Push.Socket != "" {
		d.pushes, err = listenPush(cfg, d.store, clk, logger.Named("push"))
		if err != nil {
			return err
		}
	} else {
		logger.Info("push socket disabled (push.socket is empty): no allocator stats are received")
	}

	d.joiner = join.New(d.poller, pushSource, facts, join.Options{
		Interval: cfg.NVML.PollInterval, Clock: clk, Trend: engine, Recorder: recorder, Demo: sim != nil,
	}, logger.Named("state"))

	d.reg = prometheus.NewRegistry()
	d.reg.MustRegister(
		versioncollector.NewCollector("vram_exporter"),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	var ps collector.PushStats
	if d.pushes != nil {
		ps = d.pushes
	}
	d.gatherer = collector.NewTransactional(collector.New(d.joiner, ps, logger.Named("collector")).
		WithNow(clk.Now).WithHeadroomMargin(cfg.Headroom.SafetyMarginBytes), d.reg)

	var wg sync.WaitGroup
	start := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	start(func() { d.poller.Run(ctx) })
	start(func() { d.joiner.Run(ctx) })
	if sim != nil {
		start(func() { sim.run(ctx, d.store) })
	}
	if d.pushes != nil {
		start(func() {
			if err := d.pushes.Serve(ctx); err != nil && ctx.Err() == nil {
				logger.Error("push socket server failed; pushed stats are no longer received", zap.Error(err))
			}
		})
	}

	httpErr := d.serveHTTP(ctx)
	cancel()
	if d.pushes != nil {
		if err := d.pushes.Close(); err != nil {
			logger.Warn("closing push socket", zap.Error(err))
		}
	}
	wg.Wait()
	return httpErr
}

// listenPush opens the push socket. When the default path is not writable (a newcomer
// running `go run` as an ordinary user), it falls back to a per-user runtime directory
// and says so, so the daemon still starts; an explicitly chosen path never falls back.
func listenPush(cfg config.Config, store *push.Store, clk clock.Clock, logger *zap.Logger) (*push.Server, error) {
	open := func(path string) (*push.Server, error) {
		srv, err := push.NewServer(push.ServerOptions{
			Path: path, Mode: cfg.Push.SocketMode, Group: cfg.Push.SocketGroup,
			MaxConnections: cfg.Push.MaxConnections, Clock: clk,
		}, store, logger)
		if err != nil {
			return nil, err
		}
		if err := srv.Listen(); err != nil {
			return nil, err
		}
		return srv, nil
	}
	srv, err := open(cfg.Push.Socket)
	if err == nil {
		logger.Info("push socket listening", zap.String("path", cfg.Push.Socket))
		return srv, nil
	}
	if cfg.Push.Socket != config.Default().Push.Socket || !errors.Is(err, fs.ErrPermission) {
		return nil, fmt.Errorf("push socket: %w", err)
	}
	alt := fallbackSocketPath()
	srv, err2 := open(alt)
	if err2 != nil {
		return nil, fmt.Errorf("push socket: %w (fallback %s: %v)", err, alt, err2)
	}
	logger.Warn("cannot create the default push socket (run as root or set --push.socket); using a per-user socket instead: point clients at it with VRAM_EXPORTER_SOCKET",
		zap.String("default", cfg.Push.Socket), zap.String("path", alt), zap.NamedError("cause", err))
	return srv, nil
}

func fallbackSocketPath() string {
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" {
		return filepath.Join(dir, "vram_exporter", "push.sock")
	}
	return filepath.Join(os.TempDir(), "vram_exporter-"+strconv.Itoa(os.Getuid()), "push.sock")
}

// trendConfig is config's conversion, the one --config.check validated.
func trendConfig(cfg config.Config) trend.Config { return cfg.Trend.EngineConfig() }

// serveHTTP serves /metrics, the landing page and health endpoints until ctx is done.
func (d *daemon) serveHTTP(ctx context.Context) error {
	cfg := d.cfg
	mux := http.NewServeMux()
	mux.Handle(cfg.Web.TelemetryPath, promhttp.InstrumentMetricHandler(d.reg, promhttp.HandlerForTransactional(d.gatherer, promhttp.HandlerOpts{
		ErrorLog:            zap.NewStdLog(d.log.Named("promhttp")),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 8,
		Timeout:             10 * time.Second,
	})))
	mux.Handle("/api/v1/", newAPIHandler(d))
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "OK\n") })
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "OK\n") })
	if cfg.Web.TelemetryPath != "/" {
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "vram_exporter",
			Description: landingDescription(cfg),
			Version:     version.Info(),
			Links: []web.LandingLinks{
				{Address: cfg.Web.TelemetryPath, Text: "Metrics"},
				{Address: "/api/v1/status", Text: "JSON API", Description: "status, /api/v1/gpus, /api/v1/processes (docs/api.md)"},
				{Address: "/-/healthy", Text: "Health"},
			},
		})
		if err != nil {
			return fmt.Errorf("landing page: %w", err)
		}
		mux.Handle("/", landing)
	}

	ln, err := net.Listen("tcp", cfg.Web.ListenAddress)
	if err != nil {
		return fmt.Errorf("cannot listen on --web.listen-address %s: %w", cfg.Web.ListenAddress, err)
	}
	d.log.Info("listening", zap.String("address", ln.Addr().String()), zap.String("telemetry_path", cfg.Web.TelemetryPath))

	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	webCfg := cfg.Web.ConfigFile
	systemd := false
	addrs := []string{cfg.Web.ListenAddress}
	flagCfg := &web.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &systemd, WebConfigFile: &webCfg}
	slogger := slog.New(zapslog.NewHandler(d.log.Named("web").Core()))

	errc := make(chan error, 1)
	go func() { errc <- web.ServeMultiple([]net.Listener{ln}, srv, flagCfg, slogger) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	d.log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("http shutdown: %w", err)
	}
	<-errc
	return nil
}
