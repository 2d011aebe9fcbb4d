// Package config is the front door of the daemon's settings: it turns an optional YAML
// file plus command-line flags into one validated Config. A setting's default and its
// rules live with the package that uses it (trend.DefaultConfig and trend.Config.Check,
// push.DefaultServerOptions and push.ServerOptions.Check, nvml.DefaultPollInterval,
// demo.DefaultConfig and demo.Config.Check): Default reads those defaults, Validate runs
// those checks under the YAML key the user wrote, and keeps only the rules no single
// package owns (the HTTP and log settings the wiring reads, and rules across sections).
// The flag names live in RegisterFlags and nowhere else, and the runtime takes a Valid,
// which only Validate can make, so an unchecked setting never reaches it.
package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/vram-exporter/vram_exporter/demo"
	"github.com/vram-exporter/vram_exporter/internal/durfmt"
	"github.com/vram-exporter/vram_exporter/leak/trend"
	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/push"
)

// Config is the whole settings tree; each field's yaml tag is the key users write.
type Config struct {
	Web       Web       `yaml:"web"`
	Paths     Paths     `yaml:"paths"`
	Log       Log       `yaml:"log"`
	NVML      NVML      `yaml:"nvml"`
	Push      Push      `yaml:"push"`
	Trend     Trend     `yaml:"trend"`
	Trace     Trace     `yaml:"trace"`
	Headroom  Headroom  `yaml:"headroom"`
	Collector Collector `yaml:"collector"`
	Demo      Demo      `yaml:"demo"`
}

// Collector chooses what /metrics and /api/v1 publish beyond the defaults.
type Collector struct {
	// ProcessCmdline publishes each GPU process's command line (up to 128 bytes) in
	// vram_process_info and the JSON API. Off by default: a command line can carry
	// tokens and passwords, and the endpoints are unauthenticated unless a web config
	// adds auth. comm is always published.
	ProcessCmdline bool `yaml:"process_cmdline"`
}

// Web is the HTTP side: where /metrics and the JSON API are served.
type Web struct {
	// ListenAddress is every host:port served, each with the same handlers (YAML takes
	// one string, as before, or a list; the flag repeats).
	ListenAddress ListenAddresses `yaml:"listen_address"`
	// SystemdSocket serves the sockets systemd passes (socket activation, LISTEN_FDS)
	// instead of listening on ListenAddress.
	SystemdSocket bool   `yaml:"systemd_socket"`
	TelemetryPath string `yaml:"telemetry_path"`
	// ConfigFile is an exporter-toolkit web config (TLS, basic auth); "" serves plain HTTP.
	ConfigFile string `yaml:"config_file"`
	// The HTTP server's bounds, so idle keep-alive connections, slow readers and slow
	// senders of headers cannot hold connections (and their buffers) forever.
	ReadTimeout    time.Duration `yaml:"read_timeout"`
	WriteTimeout   time.Duration `yaml:"write_timeout"`
	IdleTimeout    time.Duration `yaml:"idle_timeout"`
	MaxHeaderBytes int           `yaml:"max_header_bytes"`
}

// Paths points at the host filesystems the daemon reads, so tests can use fixtures.
type Paths struct {
	Procfs string `yaml:"procfs"`
}

// Log selects the logger's level and encoding.
type Log struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

// NVML controls the poll loop that owns the driver library.
type NVML struct {
	PollInterval time.Duration `yaml:"poll_interval"`
	// LibraryPath "" lets go-nvml find libnvidia-ml.so.1 on the loader path.
	LibraryPath string `yaml:"library_path"`
}

// Push is the unix socket serving processes report their allocators through.
type Push struct {
	// Socket "" disables the push socket.
	Socket string `yaml:"socket"`
	// SocketMode is written in YAML as a quoted octal string; yaml.v3 would read a bare
	// 0660 as octal and 660 as decimal, so Push.UnmarshalYAML decodes it by hand. The
	// config tag names the key for error messages.
	SocketMode os.FileMode `yaml:"-" config:"socket_mode"`
	// SocketGroup is a group name or numeric gid; "" keeps the daemon's own group.
	SocketGroup    string        `yaml:"socket_group"`
	TTL            time.Duration `yaml:"ttl"`
	MaxConnections int           `yaml:"max_connections"`
	// What one sender may cost (docs/protocol.md, "Limits at a glance").
	MaxConnectionsPerUID int           `yaml:"max_connections_per_uid"`
	ConnectRatePerUID    float64       `yaml:"connect_rate_per_uid"`
	ConnectBurstPerUID   int           `yaml:"connect_burst_per_uid"`
	FirstMessageTimeout  time.Duration `yaml:"first_message_timeout"`
	IdleTimeout          time.Duration `yaml:"idle_timeout"`
	MaxProcesses         int           `yaml:"max_processes"`
	MaxDevicesPerProcess int           `yaml:"max_devices_per_process"`
	MaxPoolsPerProcess   int           `yaml:"max_pools_per_process"`
	MaxSeries            int           `yaml:"max_series"`
	// SocketChosen is true when the file or a flag names the socket, even with the
	// default path: the daemon then never falls back to a per-user socket, so a broken
	// socket directory on a production node fails the start instead of hiding the socket.
	SocketChosen bool `yaml:"-"`
}

// Trend tunes the leak detector. Slopes are fitted to the floor (minimum) of each
// bucket so that per-request sawtooth does not read as growth.
type Trend struct {
	Bucket                time.Duration `yaml:"bucket"`
	ShortWindow           time.Duration `yaml:"short_window"`
	LongWindow            time.Duration `yaml:"long_window"`
	WarmUp                time.Duration `yaml:"warm_up"`
	MinRateBytesPerSecond uint64        `yaml:"min_rate_bytes_per_second"`
	MinFit                float64       `yaml:"min_fit"`
	MinDuration           time.Duration `yaml:"min_duration"`
	MaxKeys               int           `yaml:"max_keys"`
}

// Trace records every joined sample as JSON lines for replay and labelling.
type Trace struct {
	// Record "" turns recording off.
	Record   string `yaml:"record"`
	MaxBytes uint64 `yaml:"max_bytes"`
}

// Headroom is what the out-of-memory projection keeps in reserve.
type Headroom struct {
	SafetyMarginBytes uint64 `yaml:"safety_margin_bytes"`
}

// Demo replaces NVML and the push socket with simulated GPUs and senders, so the
// exporter can be tried on a laptop.
type Demo struct {
	Enabled        bool    `yaml:"enabled"`
	GPUs           int     `yaml:"gpus"`
	GPUMemoryBytes uint64  `yaml:"gpu_memory_bytes"`
	Speed          float64 `yaml:"speed"`
	Seed           int64   `yaml:"seed"`
}

// Default is the settings with nothing set: each section's defaults come from the
// package that uses them, so a default changed there is changed here, in the flag help
// and in --config.check alike. LoadFile decodes over it.
func Default() Config {
	tc := trend.DefaultConfig()
	so := push.DefaultServerOptions()
	sto := push.DefaultStoreOptions()
	dc := demo.DefaultConfig()
	return Config{
		Web: Web{
			// 9100–9999 is fully allocated on the Prometheus default-port wiki page.
			ListenAddress: ListenAddresses{":10090"},
			TelemetryPath: "/metrics",
			// A scrape or an API request is read in well under a second; 30 s leaves room
			// for a loaded node without letting a slow client keep its connection.
			ReadTimeout: 30 * time.Second,
			// Covers writing the largest response (/metrics of a full node, the streamed
			// /api/v1/processes) to a reader that keeps up; a stalled one is cut here.
			WriteTimeout: 60 * time.Second,
			// Longer than a 1m scrape interval, so Prometheus keeps its connection.
			IdleTimeout:    90 * time.Second,
			MaxHeaderBytes: 64 << 10,
		},
		Paths: Paths{Procfs: "/proc"},
		Log:   Log{Level: "info", Format: "console"},
		NVML:  NVML{PollInterval: nvml.DefaultPollInterval},
		Push: Push{
			Socket:         so.Path,
			SocketMode:     so.Mode,
			TTL:            sto.TTL,
			MaxConnections: so.MaxConnections,

			MaxConnectionsPerUID: so.MaxConnectionsPerUID,
			ConnectRatePerUID:    so.ConnectRatePerUID,
			ConnectBurstPerUID:   so.ConnectBurstPerUID,
			FirstMessageTimeout:  so.FirstMessageTimeout,
			IdleTimeout:          so.IdleTimeout,
			MaxProcesses:         sto.MaxProcesses,
			MaxDevicesPerProcess: sto.MaxDevicesPerProcess,
			MaxPoolsPerProcess:   sto.MaxPoolsPerProcess,
			MaxSeries:            sto.MaxSeries,
		},
		Trend: Trend{
			Bucket:      tc.Bucket,
			ShortWindow: tc.ShortWindow,
			LongWindow:  tc.LongWindow,
			WarmUp:      tc.WarmUp,
			// The key takes whole bytes: 0.5 MiB per minute is 8738.13, written 8738.
			MinRateBytesPerSecond: uint64(math.Round(tc.MinRate)),
			MinFit:                tc.MinFit,
			MinDuration:           tc.MinDuration,
			MaxKeys:               tc.MaxKeys,
		},
		Trace:    Trace{MaxBytes: 256 << 20},
		Headroom: Headroom{SafetyMarginBytes: 2 << 30},
		Demo: Demo{
			GPUs:           dc.GPUs,
			GPUMemoryBytes: dc.GPUMemoryBytes,
			Speed:          1,
			Seed:           dc.Seed,
		},
	}
}

// EngineConfig is the trend engine's configuration for these settings: trend's
// defaults with every trend key in place, so a detector setting without a key keeps
// trend's default.
func (t Trend) EngineConfig() trend.Config {
	c := trend.DefaultConfig()
	c.Bucket = t.Bucket
	c.ShortWindow = t.ShortWindow
	c.LongWindow = t.LongWindow
	c.WarmUp = t.WarmUp
	c.MinRate = float64(t.MinRateBytesPerSecond)
	c.MinFit = t.MinFit
	c.MinDuration = t.MinDuration
	c.MaxKeys = t.MaxKeys
	return c
}

// ServerOptions are the push server's options for these settings: push's defaults with
// every push key in place (the caller adds its clock). Socket "" turns the server off,
// so Path is only meaningful when it is set.
func (p Push) ServerOptions() push.ServerOptions {
	o := push.DefaultServerOptions()
	o.Path = p.Socket
	o.Mode = p.SocketMode
	o.Group = p.SocketGroup
	o.MaxConnections = p.MaxConnections
	o.MaxConnectionsPerUID = p.MaxConnectionsPerUID
	o.ConnectRatePerUID = p.ConnectRatePerUID
	o.ConnectBurstPerUID = p.ConnectBurstPerUID
	o.FirstMessageTimeout = p.FirstMessageTimeout
	o.IdleTimeout = p.IdleTimeout
	return o
}

// StoreOptions are the push store's bounds for these settings (the caller adds its
// clock). The store is built even when the socket is off: demo mode feeds it.
func (p Push) StoreOptions() push.StoreOptions {
	o := push.DefaultStoreOptions()
	o.TTL = p.TTL
	o.MaxProcesses = p.MaxProcesses
	o.MaxDevicesPerProcess = p.MaxDevicesPerProcess
	o.MaxPoolsPerProcess = p.MaxPoolsPerProcess
	o.MaxSeries = p.MaxSeries
	return o
}

// NodeConfig is the simulated node's configuration for these settings.
func (d Demo) NodeConfig() demo.Config {
	return demo.Config{GPUs: d.GPUs, GPUMemoryBytes: d.GPUMemoryBytes, Seed: d.Seed}
}

// Valid is a Config that passed Validate. Its field is unexported so no other package
// can build one, and constructors that take a Valid cannot be handed raw settings.
type Valid struct {
	c *Config
}

// Config returns a copy of the validated settings. It panics on a zero Valid, because
// that can only come from skipping Validate, which is a programming error.
func (v Valid) Config() Config {
	if v.c == nil {
		panic("config: Valid used without Validate; get one from Config.Validate or Flags.Load")
	}
	return *v.c
}

// Limits of the rules config owns, named so messages, flag help and tests agree.
const (
	// The poll loop's range: faster costs NVML calls for nothing a trend bucket can
	// use; slower leaves too few samples per bucket to take a floor from.
	minPollInterval  = 100 * time.Millisecond
	maxPollInterval  = time.Minute
	minTraceMaxBytes = 1 << 20
	// Basic auth and a browser's headers fit in 4 KiB many times over.
	minMaxHeaderBytes = 4 << 10
	maxMaxHeaderBytes = 1 << 20
	maxDemoSpeed      = 3600
)

var (
	logLevels  = []string{"debug", "info", "warn", "error"}
	logFormats = []string{"console", "json"}
)

// The YAML key of each field a package's Check may name. A field missing here is still
// reported, under its section and Go name (see problems.consumer).
var (
	trendKeys = map[string]string{
		"Bucket":      "trend.bucket",
		"ShortWindow": "trend.short_window",
		"LongWindow":  "trend.long_window",
		"WarmUp":      "trend.warm_up",
		"MinRate":     "trend.min_rate_bytes_per_second",
		"MinFit":      "trend.min_fit",
		"MinDuration": "trend.min_duration",
		"MaxKeys":     "trend.max_keys",
	}
	pushKeys = map[string]string{
		"Path":           "push.socket",
		"Mode":           "push.socket_mode",
		"Group":          "push.socket_group",
		"MaxConnections": "push.max_connections",

		"MaxConnectionsPerUID": "push.max_connections_per_uid",
		"ConnectRatePerUID":    "push.connect_rate_per_uid",
		"ConnectBurstPerUID":   "push.connect_burst_per_uid",
		"FirstMessageTimeout":  "push.first_message_timeout",
		"IdleTimeout":          "push.idle_timeout",
	}
	storeKeys = map[string]string{
		"TTL":                  "push.ttl",
		"MaxProcesses":         "push.max_processes",
		"MaxDevicesPerProcess": "push.max_devices_per_process",
		"MaxPoolsPerProcess":   "push.max_pools_per_process",
		"MaxSeries":            "push.max_series",
	}
	demoKeys = map[string]string{
		"GPUs":           "demo.gpus",
		"GPUMemoryBytes": "demo.gpu_memory_bytes",
		"Seed":           "demo.seed",
	}
)

// problem is one invalid setting: the YAML key and what is wrong with it.
type problem struct{ key, text string }

func (p problem) String() string { return p.key + ": " + p.text }

type problems []problem

func (ps *problems) add(key, format string, args ...any) {
	*ps = append(*ps, problem{key, fmt.Sprintf(format, args...)})
}

// consumer returns a Check callback that files each problem under the key its field
// comes from.
func (ps *problems) consumer(section string, keys map[string]string) func(field, text string) {
	return func(field, text string) {
		key, ok := keys[field]
		if !ok {
			key = section + " (" + field + ")"
		}
		ps.add(key, "%s", text)
	}
}

// Validate checks every setting and reports all problems at once (errors.Join), each
// naming the YAML key, the bad value and what is allowed, in the order the keys appear
// in the schema, so one run of --config.check fixes a file instead of one error per run.
func (c Config) Validate() (Valid, error) {
	ps := append(c.ownProblems(), c.consumerProblems()...)
	if len(ps) == 0 {
		return Valid{c: &c}, nil
	}
	order := map[string]int{}
	for i, k := range schemaKeys(nil) {
		order[k] = i
	}
	rank := func(p problem) int {
		if i, ok := order[p.key]; ok {
			return i
		}
		return len(order) // a key config does not know: last, in the order reported
	}
	slices.SortStableFunc(ps, func(a, b problem) int { return rank(a) - rank(b) })
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = errors.New(p.String())
	}
	return Valid{}, errors.Join(errs...)
}

// consumerProblems runs the checks of the packages that use the settings, on exactly
// the values they will be given.
func (c Config) consumerProblems() problems {
	var ps problems
	c.Trend.EngineConfig().Check(ps.consumer("trend", trendKeys))
	report := ps.consumer("push", pushKeys)
	c.Push.ServerOptions().Check(func(field, text string) {
		// "" turns the socket off; the other options are still checked, so a file that
		// turns it on later is already known good.
		if field != "Path" || c.Push.Socket != "" {
			report(field, text)
		}
	})
	c.Push.StoreOptions().Check(ps.consumer("push", storeKeys))
	// demo: checked even when off, for the same reason.
	c.Demo.NodeConfig().Check(ps.consumer("demo", demoKeys))
	return ps
}

// ownProblems are the rules no package that uses the settings owns: the HTTP, procfs
// and log settings the daemon's wiring reads, and rules across sections.
func (c Config) ownProblems() problems {
	var ps problems

	// web
	def := Default().Web.ListenAddress[0]
	if len(c.Web.ListenAddress) == 0 && !c.Web.SystemdSocket {
		ps.add("web.listen_address", "no address to listen on; name one, like %q, or set web.systemd_socket (--web.systemd-socket) under systemd socket activation", def)
	}
	seen := map[string]bool{}
	for _, a := range c.Web.ListenAddress {
		if _, port, _ := net.SplitHostPort(a); seen[a] && port != "0" { // :0 picks a new port each time
			ps.add("web.listen_address", "%q is named twice; the second listen would fail as the port is taken", a)
		}
		seen[a] = true
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			ps.add("web.listen_address", "%q is not host:port; use host:port or :port, like %q", a, def)
		} else if _, err := net.LookupPort("tcp", port); err != nil {
			// net.Listen would refuse it at start (it looks the port up the same way, in
			// /etc/services for a name): say so here, where --config.check sees it.
			ps.add("web.listen_address", "port %q of %q is not a port number from 0 to 65535 (nor a service name); use one like %q", port, a, def)
		}
	}
	ps = append(ps, c.Web.serverProblems()...)
	if !strings.HasPrefix(c.Web.TelemetryPath, "/") {
		ps.add("web.telemetry_path", "%q does not start with \"/\"; use a URL path like %q", c.Web.TelemetryPath, "/"+c.Web.TelemetryPath)
	}

	// paths
	if c.Paths.Procfs == "" {
		ps.add("paths.procfs", "is empty; use the procfs mount point, usually %q", "/proc")
	}

	// log
	if !slices.Contains(logLevels, c.Log.Level) {
		ps.add("log.level", "%q is not a log level; use one of %s", c.Log.Level, strings.Join(logLevels, ", "))
	}
	if !slices.Contains(logFormats, c.Log.Format) {
		ps.add("log.format", "%q is not a log format; use one of %s", c.Log.Format, strings.Join(logFormats, ", "))
	}

	// nvml
	pollOK := c.NVML.PollInterval >= minPollInterval && c.NVML.PollInterval <= maxPollInterval
	if !pollOK {
		ps.add("nvml.poll_interval", "%s is out of range; use %s to %s", durfmt.Format(c.NVML.PollInterval), durfmt.Format(minPollInterval), durfmt.Format(maxPollInterval))
	}

	// push: a sender pushes about once per poll interval; a TTL under two intervals
	// would drop a healthy sender whose push lands just after a tick.
	if pollOK && c.Push.TTL < 2*c.NVML.PollInterval {
		ps.add("push.ttl", "%s is shorter than twice nvml.poll_interval (%s); use at least %s", durfmt.Format(c.Push.TTL), durfmt.Format(c.NVML.PollInterval), durfmt.Format(2*c.NVML.PollInterval))
	}

	// trend: the join feeds the engine once per poll, so a bucket shorter than a poll
	// would hold no sample. (trend checks bucket > 0 itself.)
	if pollOK && c.Trend.Bucket > 0 && c.Trend.Bucket < c.NVML.PollInterval {
		ps.add("trend.bucket", "%s is shorter than nvml.poll_interval (%s), so some buckets would hold no sample; use at least %s", durfmt.Format(c.Trend.Bucket), durfmt.Format(c.NVML.PollInterval), durfmt.Format(c.NVML.PollInterval))
	}

	// trace
	if c.Trace.MaxBytes < minTraceMaxBytes {
		ps.add("trace.max_bytes", "%d is below the minimum of %d (1 MiB); raise it", c.Trace.MaxBytes, minTraceMaxBytes)
	}

	// demo: speed scales the daemon's clock, which the wiring builds.
	if d := c.Demo.Speed; math.IsNaN(d) || d < 1 || d > maxDemoSpeed {
		ps.add("demo.speed", "%g is out of range; use 1 (real time) to %d", d, maxDemoSpeed)
	}
	return ps
}

// serverProblems checks the HTTP server's bounds: a zero timeout would mean none at
// all in net/http, which is what these keys exist to prevent.
func (w Web) serverProblems() problems {
	var ps problems
	for _, t := range []struct {
		key string
		d   time.Duration
	}{{"web.read_timeout", w.ReadTimeout}, {"web.write_timeout", w.WriteTimeout}, {"web.idle_timeout", w.IdleTimeout}} {
		if t.d < time.Second {
			ps.add(t.key, "%s is too short; use at least 1s (there is no \"no timeout\")", durfmt.Format(t.d))
		}
	}
	if w.MaxHeaderBytes < minMaxHeaderBytes || w.MaxHeaderBytes > maxMaxHeaderBytes {
		ps.add("web.max_header_bytes", "%d is out of range; use %d to %d", w.MaxHeaderBytes, minMaxHeaderBytes, maxMaxHeaderBytes)
	}
	return ps
}

// schemaKeys lists every key under path in schema order, "web.listen_address" first.
func schemaKeys(path []string) []string {
	keys := knownKeys(path)
	if keys == nil {
		return []string{strings.Join(path, ".")}
	}
	var out []string
	for _, k := range keys {
		out = append(out, schemaKeys(append(slices.Clone(path), k))...)
	}
	return out
}

// fmtMode prints a mode the way the YAML key is written.
func fmtMode(m os.FileMode) string {
	return fmt.Sprintf("%#04o", uint32(m))
}
