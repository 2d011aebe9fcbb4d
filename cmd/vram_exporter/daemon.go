package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/clock"
	"github.com/vram-exporter/vram_exporter/config"
	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/leak/trend"
	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/procinfo"
	"github.com/vram-exporter/vram_exporter/push"
)

// daemonCmd is the exporter itself, the default command: its flags live on it, not on
// the application, so the subcommands' help lists only their own flags, and kingpin
// still takes them without the word "run" (the documented invocations never name it).
type daemonCmd struct {
	cmd   *kingpin.CmdClause
	flags *config.Flags
}

func registerDaemon(app *kingpin.Application) *daemonCmd {
	c := app.Command("run", "Run the exporter daemon (the default command: its flags work without naming it).").Default()
	return &daemonCmd{cmd: c, flags: config.RegisterFlags(c)}
}

func (c *daemonCmd) run(ctx context.Context, stdout, stderr io.Writer) int {
	valid, err := c.flags.Load()
	if err == nil {
		err = checkFiles(valid.Config())
	}
	if err != nil {
		fmt.Fprintf(stderr, "vram_exporter: invalid configuration:\n%v\n", err)
		return 1
	}
	if c.flags.CheckOnly() {
		fmt.Fprintln(stdout, "configuration is valid")
		return 0
	}
	return runDaemon(ctx, valid, stderr)
}

// checkFiles checks the files the settings name, for --config.check and the daemon's
// start alike, so that a configuration the check accepts does not fail at start over a
// file: the web config (TLS and basic auth, loaded as exporter-toolkit loads it, with
// its certificates) and the trace file (see openTraceFile). What only the start can
// find (a busy port, a group that is not there) is still found there.
func checkFiles(cfg config.Config) error {
	var errs []error
	if err := web.Validate(cfg.Web.ConfigFile); err != nil {
		errs = append(errs, fmt.Errorf("web.config_file %s: %w", cfg.Web.ConfigFile, err))
	}
	if err := checkTraceFile(cfg.Trace.Record); err != nil {
		errs = append(errs, fmt.Errorf("trace.record: %w", err))
	}
	return errors.Join(errs...)
}

// runDaemon serves until ctx is done, then shuts everything down and returns the exit
// code.
func runDaemon(ctx context.Context, valid config.Valid, stderr io.Writer) int {
	cfg := valid.Config()
	logger, err := newLogger(cfg.Log.Level, cfg.Log.Format, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "vram_exporter: %v\n", err)
		return 1
	}
	defer func() { _ = logger.Sync() }()
	defer handleHangup(logger)()
	if err := serve(ctx, cfg, logger); err != nil {
		logger.Error("vram_exporter stopped with an error", zap.Error(err))
		return 1
	}
	logger.Info("vram_exporter stopped cleanly")
	return 0
}

// handleHangup catches SIGHUP for as long as the daemon runs and returns the function
// that stops catching it. Its default action would kill the daemon and leave the socket
// behind, and `systemctl reload` or a habit of "kill -HUP after editing the config" must
// not take a node's GPU view down. There is nothing to reload in place: the web config
// (TLS, basic auth) is already re-read by exporter-toolkit on every request and TLS
// handshake, and every other setting (socket, limits, detector) is applied at start, so
// it says so and keeps serving.
func handleHangup(logger *zap.Logger) func() {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-hup:
				logger.Info("SIGHUP received: nothing to reload in place; the web config file is re-read on every request, other settings apply at start, so restart the daemon to change them")
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
		<-stopped
	}
}

// serve wires the daemon in the order data flows: sources, the join, the readers, HTTP.
// Everything that can fail on bad settings comes before the push socket is created, so
// a failed start leaves no socket file behind.
func serve(ctx context.Context, cfg config.Config, logger *zap.Logger) error {
	logger.Info("starting vram_exporter", zap.String("version", version.Info()), zap.String("build", version.BuildContext()))
	limitMemory(logger)

	src, err := newSources(cfg, logger)
	if err != nil {
		return err
	}
	engine, err := trend.NewEngine(trendConfig(cfg))
	if err != nil {
		return fmt.Errorf("trend settings: %w", err)
	}
	recorder, closeRecorder, err := openRecorder(cfg, logger)
	if err != nil {
		return err
	}
	defer closeRecorder()
	lns, err := listenHTTP(cfg)
	if err != nil {
		return err
	}
	defer closeAll(lns) // a no-op once the HTTP server has closed them
	cfg, removeDemoSocket, err := demoPushSocket(cfg, logger)
	if err != nil {
		return err
	}
	defer removeDemoSocket()
	pushes, err := openPush(cfg, src.store, src.clock, src.processStart, logger.Named("push"))
	if err != nil {
		return err
	}
	if pushes != nil {
		defer func() {
			if err := pushes.Close(); err != nil {
				logger.Warn("closing push socket", zap.Error(err))
			}
		}()
	}

	joiner := join.New(src.nvml, src.pushSource(), src.facts, join.Options{
		Interval: cfg.NVML.PollInterval, Clock: src.clock, Trend: engine, Recorder: recorder, Demo: cfg.Demo.Enabled,
	}, logger.Named("state"))

	handler, err := newHTTPHandler(cfg, joiner, pushStats(pushes), src.clock, logger)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { src.nvml.Run(ctx) })
	for _, loop := range src.loops {
		wg.Go(func() { loop(ctx) })
	}
	wg.Go(func() { joiner.Run(ctx) })
	wg.Go(func() { returnMemory(ctx) })
	if pushes != nil {
		wg.Go(func() {
			if err := pushes.Serve(ctx); err != nil && ctx.Err() == nil {
				logger.Error("push socket server failed; pushed stats are no longer received", zap.Error(err))
			}
		})
	}
	httpErr := serveHTTP(ctx, lns, handler, cfg, logger)
	cancel()
	wg.Wait()
	return httpErr
}

// nvmlSource is the poller the daemon runs and the join reads: nvml.Poller over the
// library (or its stand-in in a build without cgo), or over demo mode's fake.
type nvmlSource interface {
	join.NVMLSource
	Run(ctx context.Context)
}

// sources are what the join reads, on one clock (demo mode's runs faster than the wall).
type sources struct {
	clock clock.Clock
	nvml  nvmlSource
	facts join.FactsReader // nil when there is no procfs (not built in)
	store *push.Store      // nil when nothing pushes: socket disabled, not demo mode
	loops []func(ctx context.Context)
	// processStart reads a process's start time for the push server (nil: not
	// recorded, and a reused PID is not told apart).
	processStart func(pid uint32) (uint64, error)
}

// pushSource is the store as the join wants it: a nil interface, not a typed nil, when
// nothing pushes.
func (s *sources) pushSource() join.PushSource {
	if s.store == nil {
		return nil
	}
	return s.store
}

// newSources builds this machine's sources, or demo mode's simulated ones.
func newSources(cfg config.Config, logger *zap.Logger) (*sources, error) {
	if cfg.Demo.Enabled {
		return newDemoSources(cfg, logger)
	}
	s := &sources{clock: clock.Real{}}
	s.nvml = nvml.NewLibraryPoller(cfg.NVML.LibraryPath, nvml.Options{Interval: cfg.NVML.PollInterval, Clock: s.clock}, logger.Named("nvml"))
	facts, err := procinfo.NewReader(cfg.Paths.Procfs)
	switch {
	case errors.Is(err, procinfo.ErrNotBuiltIn):
		logger.Warn("process facts are off: processes are exported without name, command line or container", zap.Error(err))
	case err != nil:
		return nil, fmt.Errorf("process facts: %w", err)
	default:
		s.processStart = facts.StartTicks
		// Read once per process what does not change while it lives; RSS every
		// procinfo.StatRefresh, PID reuse through pidfds where they work.
		s.facts = procinfo.NewCache(facts, s.clock)
	}
	if cfg.Push.Socket != "" {
		if s.store, err = newStore(cfg, s.clock); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// newStore is the push store bounded as configured (config's conversion, the options
// --config.check validated).
func newStore(cfg config.Config, clk clock.Clock) (*push.Store, error) {
	o := cfg.Push.StoreOptions()
	o.Clock = clk
	store, err := push.NewStoreWithOptions(o)
	if err != nil {
		return nil, fmt.Errorf("push store: %w", err)
	}
	return store, nil
}

// demoPushSocket gives demo mode a private push socket in a new temporary directory
// unless the file or a flag names one: opening the real default would mix real pushes
// into the simulated node and take the socket from a real daemon on the same host. The
// private one still serves (the push families stay live, and a client pointed at it
// joins the demo); the returned function removes it.
func demoPushSocket(cfg config.Config, logger *zap.Logger) (config.Config, func(), error) {
	if !cfg.Demo.Enabled || cfg.Push.SocketChosen {
		return cfg, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "vram_exporter-demo-")
	if err != nil {
		return cfg, nil, fmt.Errorf("demo mode's private push socket directory: %w (or name one with --push.socket)", err)
	}
	cfg.Push.Socket = filepath.Join(dir, "push.sock")
	logger.Info("demo mode: private push socket, not the real one; point a client at it with VRAM_EXPORTER_SOCKET, or name a socket with --push.socket",
		zap.String("path", cfg.Push.Socket))
	return cfg, func() { _ = os.RemoveAll(dir) }, nil
}

// openPush opens the push socket feeding store; nil without error when it is disabled
// or not built in (then the log says so once).
func openPush(cfg config.Config, store *push.Store, clk clock.Clock, start func(uint32) (uint64, error), logger *zap.Logger) (*push.Server, error) {
	if cfg.Push.Socket == "" {
		logger.Info("push socket disabled (push.socket is empty): no allocator stats are received")
		return nil, nil
	}
	srv, err := listenPush(cfg, store, clk, start, logger)
	if errors.Is(err, push.ErrNotBuiltIn) {
		logger.Warn("push socket is off", zap.Error(err))
		return nil, nil
	}
	return srv, err
}

// listenPush opens the push socket. When the default path is not writable (a newcomer
// running `go run` as an ordinary user), it falls back to a per-user runtime directory
// and says so, so the daemon still starts; an explicitly chosen path never falls back.
// The server logs the path it listens on.
func listenPush(cfg config.Config, store *push.Store, clk clock.Clock, start func(uint32) (uint64, error), logger *zap.Logger) (*push.Server, error) {
	open := func(path string) (*push.Server, error) {
		opts := cfg.Push.ServerOptions() // the options --config.check validated
		opts.Path, opts.Clock = path, clk
		// Pushed stats are joined once per poll: reading them once per poll too spares
		// the daemon a wakeup per message (push.ServerOptions.ReadPace).
		opts.ReadPace = cfg.NVML.PollInterval
		srv, err := push.NewServer(opts, store, logger)
		if err != nil {
			return nil, err
		}
		if start != nil {
			srv.WithProcessStart(start)
		}
		if err := srv.Listen(); err != nil {
			return nil, err
		}
		return srv, nil
	}
	srv, err := open(cfg.Push.Socket)
	if err == nil || errors.Is(err, push.ErrNotBuiltIn) {
		return srv, err
	}
	if cfg.Push.SocketChosen || cfg.Push.Socket != config.Default().Push.Socket || !errors.Is(err, fs.ErrPermission) {
		return nil, fmt.Errorf("push socket: %w", err)
	}
	alt := fallbackSocketPath()
	if err2 := prepareFallbackDir(filepath.Dir(alt)); err2 != nil {
		return nil, fmt.Errorf("push socket: %w (fallback: %v)", err, err2)
	}
	srv, err2 := open(alt)
	if err2 != nil {
		return nil, fmt.Errorf("push socket: %w (fallback %s: %v)", err, alt, err2)
	}
	logger.Warn("cannot create the default push socket (run as root or set --push.socket); using a per-user socket instead: point clients at it with VRAM_EXPORTER_SOCKET",
		zap.String("default", cfg.Push.Socket), zap.String("path", alt), zap.NamedError("cause", err))
	return srv, nil
}

// prepareFallbackDir makes the per-user socket directory, 0700, or accepts an existing
// one only if this user owns it and nobody else can write it. The fallback lives in a
// shared place (/tmp without XDG_RUNTIME_DIR): a directory someone else made there
// beforehand would let them replace the socket and collect, or forge, every pushed stat.
func prepareFallbackDir(dir string) error {
	err := os.Mkdir(dir, 0o700)
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating the per-user socket directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("checking the per-user socket directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s exists and is not a directory (a symlink?); remove it or set --push.socket", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d), who may have made it to take over the socket; remove it or set --push.socket", dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is writable by group or others (mode %#o), who could replace the socket; chmod go-w it or set --push.socket", dir, fi.Mode().Perm())
	}
	return nil
}

func fallbackSocketPath() string {
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" {
		return filepath.Join(dir, "vram_exporter", "push.sock")
	}
	return filepath.Join(os.TempDir(), "vram_exporter-"+strconv.Itoa(os.Getuid()), "push.sock")
}

// trendConfig is config's conversion, the one --config.check validated.
func trendConfig(cfg config.Config) trend.Config { return cfg.Trend.EngineConfig() }
