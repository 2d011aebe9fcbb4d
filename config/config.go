// Package config is the front door of the daemon's settings: it turns an optional YAML
// file plus command-line flags into one validated Config. Defaults live in Default and
// nowhere else, the flag names live in RegisterFlags and nowhere else, and the runtime
// takes a Valid, which only Validate can make, so an unchecked setting never reaches it.
package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Config is the whole settings tree; each field's yaml tag is the key users write.
type Config struct {
	Web      Web      `yaml:"web"`
	Paths    Paths    `yaml:"paths"`
	Log      Log      `yaml:"log"`
	NVML     NVML     `yaml:"nvml"`
	Push     Push     `yaml:"push"`
	Trend    Trend    `yaml:"trend"`
	Trace    Trace    `yaml:"trace"`
	Headroom Headroom `yaml:"headroom"`
	Demo     Demo     `yaml:"demo"`
}

// Web is the HTTP side: where /metrics and the JSON API are served.
type Web struct {
	ListenAddress string `yaml:"listen_address"`
	TelemetryPath string `yaml:"telemetry_path"`
	// ConfigFile is an exporter-toolkit web config (TLS, basic auth); "" serves plain HTTP.
	ConfigFile string `yaml:"config_file"`
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
}

// SocketDirMode is the mode for the socket's directory: the socket's bits plus search
// (x) wherever read is granted, so whoever may use the socket may also reach it.
func (p Push) SocketDirMode() os.FileMode {
	return p.SocketMode | (p.SocketMode&0o444)>>2
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

// Default is the one place defaults are written; LoadFile decodes over it and the flag
// help texts quote it.
func Default() Config {
	return Config{
		Web: Web{
			// 9100–9999 is fully allocated on the Prometheus default-port wiki page.
			ListenAddress: ":10090",
			TelemetryPath: "/metrics",
		},
		Paths: Paths{Procfs: "/proc"},
		Log:   Log{Level: "info", Format: "console"},
		NVML:  NVML{PollInterval: time.Second},
		Push: Push{
			Socket:         "/run/vram_exporter/push.sock",
			SocketMode:     0o660,
			TTL:            30 * time.Second,
			MaxConnections: 4096,
		},
		Trend: Trend{
			Bucket:                30 * time.Second,
			ShortWindow:           10 * time.Minute,
			LongWindow:            2 * time.Hour,
			WarmUp:                10 * time.Minute,
			MinRateBytesPerSecond: 8738, // 0.5 MiB per minute; see docs/leak-detection.md
			MinFit:                0.85,
			MinDuration:           0,
		},
		Trace:    Trace{MaxBytes: 256 << 20},
		Headroom: Headroom{SafetyMarginBytes: 2 << 30},
		Demo: Demo{
			GPUs:           4,
			GPUMemoryBytes: 143771 << 20, // an H200 as NVML reports it
			Speed:          1,
			Seed:           1,
		},
	}
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

// Limits that Validate enforces, named so messages and tests agree.
const (
	minPollInterval   = 100 * time.Millisecond
	maxPollInterval   = time.Minute
	minWindowBuckets  = 4
	minTraceMaxBytes  = 1 << 20
	maxDemoSpeed      = 3600
	maxDemoGPUs       = 64
	minDemoGPUMemory  = 1 << 30
	maxUnixSocketPath = 107 // sun_path is 108 bytes including the terminating NUL
)

var (
	logLevels  = []string{"debug", "info", "warn", "error"}
	logFormats = []string{"console", "json"}
)

// Validate checks every setting and reports all problems at once (errors.Join), each
// naming the YAML key, the bad value and what is allowed, so one run of --config.check
// fixes a file instead of one error per run.
func (c Config) Validate() (Valid, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}

	// web
	if _, port, err := net.SplitHostPort(c.Web.ListenAddress); err != nil || port == "" {
		bad("web.listen_address: %q is not host:port; use host:port or :port, like %q", c.Web.ListenAddress, Default().Web.ListenAddress)
	}
	if !strings.HasPrefix(c.Web.TelemetryPath, "/") {
		bad("web.telemetry_path: %q does not start with \"/\"; use a URL path like %q", c.Web.TelemetryPath, "/"+c.Web.TelemetryPath)
	}

	// paths
	if c.Paths.Procfs == "" {
		bad("paths.procfs: is empty; use the procfs mount point, usually %q", "/proc")
	}

	// log
	if !slices.Contains(logLevels, c.Log.Level) {
		bad("log.level: %q is not a log level; use one of %s", c.Log.Level, strings.Join(logLevels, ", "))
	}
	if !slices.Contains(logFormats, c.Log.Format) {
		bad("log.format: %q is not a log format; use one of %s", c.Log.Format, strings.Join(logFormats, ", "))
	}

	// nvml
	pollOK := c.NVML.PollInterval >= minPollInterval && c.NVML.PollInterval <= maxPollInterval
	if !pollOK {
		bad("nvml.poll_interval: %s is out of range; use %s to %s", fmtDuration(c.NVML.PollInterval), fmtDuration(minPollInterval), fmtDuration(maxPollInterval))
	}

	// push
	if s := c.Push.Socket; s != "" {
		if !filepath.IsAbs(s) {
			bad("push.socket: %q is a relative path; use an absolute path like %q, or \"\" to disable the push socket", s, Default().Push.Socket)
		} else if len(s) > maxUnixSocketPath {
			bad("push.socket: %q is %d bytes long; a unix socket path may be at most %d bytes, so use a shorter directory", s, len(s), maxUnixSocketPath)
		}
	}
	if c.Push.SocketMode&^os.ModePerm != 0 {
		bad("push.socket_mode: %s has bits outside 0777; use permission bits only, like \"0660\"", fmtMode(c.Push.SocketMode))
	}
	// A sender pushes about once per poll interval; a TTL under two intervals would drop
	// a healthy sender whose push lands just after a tick.
	if pollOK && c.Push.TTL < 2*c.NVML.PollInterval {
		bad("push.ttl: %s is shorter than twice nvml.poll_interval (%s); use at least %s", fmtDuration(c.Push.TTL), fmtDuration(c.NVML.PollInterval), fmtDuration(2*c.NVML.PollInterval))
	}
	if c.Push.MaxConnections < 1 {
		bad("push.max_connections: %d is out of range; use at least 1", c.Push.MaxConnections)
	}

	// trend
	t := c.Trend
	if t.Bucket <= 0 {
		bad("trend.bucket: %s is out of range; use a positive duration like %q", fmtDuration(t.Bucket), fmtDuration(Default().Trend.Bucket))
	} else {
		if pollOK && t.Bucket < c.NVML.PollInterval {
			bad("trend.bucket: %s is shorter than nvml.poll_interval (%s), so some buckets would hold no sample; use at least %s", fmtDuration(t.Bucket), fmtDuration(c.NVML.PollInterval), fmtDuration(c.NVML.PollInterval))
		}
		shortOK := checkWindow(bad, "trend.short_window", t.ShortWindow, t.Bucket)
		longOK := checkWindow(bad, "trend.long_window", t.LongWindow, t.Bucket)
		if shortOK && longOK && t.LongWindow <= t.ShortWindow {
			bad("trend.long_window: %s is not longer than trend.short_window (%s); make long_window longer than short_window", fmtDuration(t.LongWindow), fmtDuration(t.ShortWindow))
		}
	}
	if t.WarmUp < 0 {
		bad("trend.warm_up: %s is negative; use 0 to turn warm-up off, or a duration like %q", fmtDuration(t.WarmUp), fmtDuration(Default().Trend.WarmUp))
	}
	if t.MinRateBytesPerSecond == 0 {
		bad("trend.min_rate_bytes_per_second: 0 would call any growth a leak; use at least 1, like %d (the default, 0.5 MiB per minute)", Default().Trend.MinRateBytesPerSecond)
	}
	if math.IsNaN(t.MinFit) || t.MinFit < 0 || t.MinFit > 1 {
		bad("trend.min_fit: %g is out of range; use 0 to 1", t.MinFit)
	}
	if t.MinDuration < 0 {
		bad("trend.min_duration: %s is negative; use 0 (the default) or a duration like \"5m\"", fmtDuration(t.MinDuration))
	}

	// trace
	if c.Trace.MaxBytes < minTraceMaxBytes {
		bad("trace.max_bytes: %d is below the minimum of %d (1 MiB); raise it", c.Trace.MaxBytes, minTraceMaxBytes)
	}

	// demo: checked even when off, so a file that turns it on later is already known good.
	d := c.Demo
	if d.GPUs < 1 || d.GPUs > maxDemoGPUs {
		bad("demo.gpus: %d is out of range; use 1 to %d", d.GPUs, maxDemoGPUs)
	}
	if d.GPUMemoryBytes < minDemoGPUMemory {
		bad("demo.gpu_memory_bytes: %d is below the minimum of %d (1 GiB); use a real GPU's size, like %d", d.GPUMemoryBytes, minDemoGPUMemory, Default().Demo.GPUMemoryBytes)
	}
	if math.IsNaN(d.Speed) || d.Speed < 1 || d.Speed > maxDemoSpeed {
		bad("demo.speed: %g is out of range; use 1 (real time) to %d", d.Speed, maxDemoSpeed)
	}

	if len(errs) > 0 {
		return Valid{}, errors.Join(errs...)
	}
	return Valid{c: &c}, nil
}

// checkWindow reports whether a trend window is a positive whole number of buckets and
// long enough for a slope to mean something.
func checkWindow(bad func(string, ...any), key string, w, bucket time.Duration) bool {
	if w%bucket != 0 || w <= 0 {
		lo := w / bucket * bucket
		hi := lo + bucket
		if lo <= 0 {
			bad("%s: %s is not a positive multiple of trend.bucket (%s); use a multiple like %s", key, fmtDuration(w), fmtDuration(bucket), fmtDuration(minWindowBuckets*bucket))
		} else {
			bad("%s: %s is not a multiple of trend.bucket (%s); use %s or %s", key, fmtDuration(w), fmtDuration(bucket), fmtDuration(lo), fmtDuration(hi))
		}
		return false
	}
	if w < minWindowBuckets*bucket {
		bad("%s: %s is shorter than %d buckets of trend.bucket (%s); use at least %s", key, fmtDuration(w), minWindowBuckets, fmtDuration(bucket), fmtDuration(minWindowBuckets*bucket))
		return false
	}
	return true
}

// fmtDuration prints durations the way users write them ("2h", "1m30s") rather than
// time.Duration's "2h0m0s".
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// fmtMode prints a mode the way the YAML key is written.
func fmtMode(m os.FileMode) string {
	return fmt.Sprintf("%#04o", uint32(m))
}
