package config

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/vram-exporter/vram_exporter/internal/durfmt"
	"github.com/vram-exporter/vram_exporter/leak/trend"
)

// FlagRegistrar is what RegisterFlags needs: both *kingpin.Application and
// *kingpin.CmdClause satisfy it, so the daemon's flags can live on the application (the
// daemon being the default command) or on one subcommand.
type FlagRegistrar interface {
	Flag(name, help string) *kingpin.FlagClause
	GetFlag(name string) *kingpin.FlagClause
}

// Flags holds the daemon's command-line flags until Load merges them over the file.
// It is built per application by RegisterFlags; there is no package-level state.
type Flags struct {
	configFile *string
	check      *bool
	// overrides apply, in registration order, each flag the user set explicitly.
	overrides []func(*Config)
}

// RegisterFlags adds the daemon's flags to r. The flags carry no kingpin defaults: a
// flag only overrides the file when the user sets it, so its help text names the
// default from Default() and the YAML key it overrides instead.
func RegisterFlags(r FlagRegistrar) *Flags {
	d := Default()
	f := &Flags{}

	f.configFile = r.Flag("config.file", "Path to the YAML configuration file; without it the built-in defaults are used. Flags set on the command line override the file.").PlaceHolder("PATH").String()
	f.check = r.Flag("config.check", "Validate the configuration (file and flags), print the result and exit.").Bool()

	registerWebFlags(f, r, d)
	register(f, r.Flag("web.telemetry-path", help("URL path that serves the metrics.", "web.telemetry_path", strconv.Quote(d.Web.TelemetryPath))).PlaceHolder("PATH"),
		(*kingpin.FlagClause).String, func(c *Config, v string) { c.Web.TelemetryPath = v })
	register(f, r.Flag("path.procfs", help("Procfs mount point.", "paths.procfs", strconv.Quote(d.Paths.Procfs))).PlaceHolder("PATH"),
		(*kingpin.FlagClause).String, func(c *Config, v string) { c.Paths.Procfs = v })

	register(f, r.Flag("log.level", help("Log level: debug, info, warn or error.", "log.level", d.Log.Level)).PlaceHolder("LEVEL"),
		(*kingpin.FlagClause).String, func(c *Config, v string) { c.Log.Level = v })
	register(f, r.Flag("log.format", help("Log format: console or json.", "log.format", d.Log.Format)).PlaceHolder("FORMAT"),
		(*kingpin.FlagClause).String, func(c *Config, v string) { c.Log.Format = v })

	register(f, r.Flag("nvml.poll-interval", help(fmt.Sprintf("How often NVML is sampled (%s to %s).", durfmt.Format(minPollInterval), durfmt.Format(maxPollInterval)), "nvml.poll_interval", durfmt.Format(d.NVML.PollInterval))).PlaceHolder("DURATION"),
		(*kingpin.FlagClause).Duration, func(c *Config, v time.Duration) { c.NVML.PollInterval = v })
	register(f, r.Flag("nvml.library-path", help("Path to libnvidia-ml.so.1.", "nvml.library_path", `"" (found by the loader)`)).PlaceHolder("PATH"),
		(*kingpin.FlagClause).String, func(c *Config, v string) { c.NVML.LibraryPath = v })

	register(f, r.Flag("push.socket", help("Unix socket serving processes push allocator stats to; \"\" disables it.", "push.socket", strconv.Quote(d.Push.Socket))).PlaceHolder("PATH"),
		(*kingpin.FlagClause).String, func(c *Config, v string) { c.Push.Socket, c.Push.SocketChosen = v, true })
	register(f, r.Flag("push.socket-mode", help("Octal mode of the push socket; a directory the daemon creates for it gets r-x (never w) for group and others where the socket gives them access.", "push.socket_mode", strconv.Quote(fmtMode(d.Push.SocketMode)))).PlaceHolder("MODE"),
		modeVar, func(c *Config, v os.FileMode) { c.Push.SocketMode = v })
	register(f, r.Flag("push.socket-group", help("Group name or numeric gid owning the push socket.", "push.socket_group", `"" (the daemon's group)`)).PlaceHolder("GROUP"),
		(*kingpin.FlagClause).String, func(c *Config, v string) { c.Push.SocketGroup = v })
	register(f, r.Flag("push.ttl", help("Drop a connected sender silent this long; at least twice the poll interval.", "push.ttl", durfmt.Format(d.Push.TTL))).PlaceHolder("DURATION"),
		(*kingpin.FlagClause).Duration, func(c *Config, v time.Duration) { c.Push.TTL = v })
	register(f, r.Flag("push.max-connections", help("Most push connections held at once.", "push.max_connections", strconv.Itoa(d.Push.MaxConnections))).PlaceHolder("N"),
		(*kingpin.FlagClause).Int, func(c *Config, v int) { c.Push.MaxConnections = v })
	registerPushLimits(f, r, d)

	register(f, r.Flag("trend.short-window", help(fmt.Sprintf("Short growth-slope window; a multiple of trend.bucket, at least %d buckets.", trend.MinWindowBuckets), "trend.short_window", durfmt.Format(d.Trend.ShortWindow))).PlaceHolder("DURATION"),
		(*kingpin.FlagClause).Duration, func(c *Config, v time.Duration) { c.Trend.ShortWindow = v })
	register(f, r.Flag("trend.long-window", help("Long growth-slope window; a multiple of trend.bucket, longer than the short window.", "trend.long_window", durfmt.Format(d.Trend.LongWindow))).PlaceHolder("DURATION"),
		(*kingpin.FlagClause).Duration, func(c *Config, v time.Duration) { c.Trend.LongWindow = v })
	register(f, r.Flag("trend.max-keys", help("Most (pid, GPU) histories the leak detector holds; new ones beyond are not tracked.", "trend.max_keys", strconv.Itoa(d.Trend.MaxKeys))).PlaceHolder("N"),
		(*kingpin.FlagClause).Int, func(c *Config, v int) { c.Trend.MaxKeys = v })

	register(f, r.Flag("trace.record", help("Record every sample to this JSON-lines file; \"\" is off.", "trace.record", `""`)).PlaceHolder("PATH"),
		(*kingpin.FlagClause).String, func(c *Config, v string) { c.Trace.Record = v })
	register(f, r.Flag("trace.max-bytes", help("Rotate the trace at this size, keeping one previous file PATH.1 (at least 1 MiB).", "trace.max_bytes", strconv.FormatUint(d.Trace.MaxBytes, 10))).PlaceHolder("BYTES"),
		(*kingpin.FlagClause).Uint64, func(c *Config, v uint64) { c.Trace.MaxBytes = v })

	register(f, r.Flag("collector.process-cmdline", help("Publish each GPU process's command line (up to 128 bytes, tokens included) in vram_process_info and the API.", "collector.process_cmdline", strconv.FormatBool(d.Collector.ProcessCmdline))),
		(*kingpin.FlagClause).Bool, func(c *Config, v bool) { c.Collector.ProcessCmdline = v })

	register(f, r.Flag("demo", help("Simulate GPUs and senders instead of using NVML; the push socket is then a private one in a new temporary directory (its path is logged), never the real one, unless --push.socket or the file names it.", "demo.enabled", strconv.FormatBool(d.Demo.Enabled))),
		(*kingpin.FlagClause).Bool, func(c *Config, v bool) { c.Demo.Enabled = v })
	register(f, r.Flag("demo.speed", help(fmt.Sprintf("Demo time acceleration, 1 to %d.", maxDemoSpeed), "demo.speed", strconv.FormatFloat(d.Demo.Speed, 'g', -1, 64))).PlaceHolder("FACTOR"),
		(*kingpin.FlagClause).Float64, func(c *Config, v float64) { c.Demo.Speed = v })
	register(f, r.Flag("demo.seed", help("Demo random seed.", "demo.seed", strconv.FormatInt(d.Demo.Seed, 10))).PlaceHolder("N"),
		(*kingpin.FlagClause).Int64, func(c *Config, v int64) { c.Demo.Seed = v })

	return f
}

// registerPushLimits adds the flags of what one push sender may cost.
func registerPushLimits(f *Flags, r FlagRegistrar, d Config) {
	register(f, r.Flag("push.max-connections-per-uid", help("Most push connections one user (uid) holds at once.", "push.max_connections_per_uid", strconv.Itoa(d.Push.MaxConnectionsPerUID))).PlaceHolder("N"),
		(*kingpin.FlagClause).Int, func(c *Config, v int) { c.Push.MaxConnectionsPerUID = v })
	register(f, r.Flag("push.connect-rate-per-uid", help("Push connects per second one user may make, after the burst.", "push.connect_rate_per_uid", strconv.FormatFloat(d.Push.ConnectRatePerUID, 'g', -1, 64))).PlaceHolder("RATE"),
		(*kingpin.FlagClause).Float64, func(c *Config, v float64) { c.Push.ConnectRatePerUID = v })
	register(f, r.Flag("push.connect-burst-per-uid", help("Push connects one user may make at once.", "push.connect_burst_per_uid", strconv.Itoa(d.Push.ConnectBurstPerUID))).PlaceHolder("N"),
		(*kingpin.FlagClause).Int, func(c *Config, v int) { c.Push.ConnectBurstPerUID = v })
	register(f, r.Flag("push.first-message-timeout", help("Close a push connection that sends nothing this long after connecting.", "push.first_message_timeout", durfmt.Format(d.Push.FirstMessageTimeout))).PlaceHolder("DURATION"),
		(*kingpin.FlagClause).Duration, func(c *Config, v time.Duration) { c.Push.FirstMessageTimeout = v })
	register(f, r.Flag("push.idle-timeout", help("Close a push connection that sends nothing for this long.", "push.idle_timeout", durfmt.Format(d.Push.IdleTimeout))).PlaceHolder("DURATION"),
		(*kingpin.FlagClause).Duration, func(c *Config, v time.Duration) { c.Push.IdleTimeout = v })
	register(f, r.Flag("push.max-processes", help("Most processes whose pushed stats are kept.", "push.max_processes", strconv.Itoa(d.Push.MaxProcesses))).PlaceHolder("N"),
		(*kingpin.FlagClause).Int, func(c *Config, v int) { c.Push.MaxProcesses = v })
	register(f, r.Flag("push.max-devices-per-process", help("Most GPUs one process reports over all its connections.", "push.max_devices_per_process", strconv.Itoa(d.Push.MaxDevicesPerProcess))).PlaceHolder("N"),
		(*kingpin.FlagClause).Int, func(c *Config, v int) { c.Push.MaxDevicesPerProcess = v })
	register(f, r.Flag("push.max-pools-per-process", help("Most (GPU, pool) one process reports over all its connections.", "push.max_pools_per_process", strconv.Itoa(d.Push.MaxPoolsPerProcess))).PlaceHolder("N"),
		(*kingpin.FlagClause).Int, func(c *Config, v int) { c.Push.MaxPoolsPerProcess = v })
	register(f, r.Flag("push.max-series", help("Most (process, GPU, pool) all senders report together.", "push.max_series", strconv.Itoa(d.Push.MaxSeries))).PlaceHolder("N"),
		(*kingpin.FlagClause).Int, func(c *Config, v int) { c.Push.MaxSeries = v })
}

// registerWebFlags adds exporter-toolkit's own web flags (kingpinflag: a repeatable
// --web.listen-address, --web.systemd-socket on Linux, --web.config.file), the ones
// every Prometheus exporter shares, then fits them to this package's rule: no kingpin
// default (a flag overrides the file only when set) and help naming the YAML key.
func registerWebFlags(f *Flags, r FlagRegistrar, d Config) {
	web := kingpinflag.AddFlags(r, d.Web.ListenAddress[0])
	adopt := func(name, text, key, def string, apply func(*Config)) {
		fc := r.GetFlag(name)
		if fc == nil {
			return // --web.systemd-socket exists on Linux only
		}
		set := new(bool)
		fc.Default().IsSetByUser(set).Help(help(text, key, def))
		f.overrides = append(f.overrides, func(c *Config) {
			if *set {
				apply(c)
			}
		})
	}
	adopt("web.listen-address", "Address (host:port) to serve metrics and the API on; repeat the flag for several, each serving the same.",
		"web.listen_address, a string or a list", strconv.Quote(d.Web.ListenAddress[0]),
		func(c *Config) { c.Web.ListenAddress = append(ListenAddresses(nil), *web.WebListenAddresses...) })
	r.GetFlag("web.listen-address").PlaceHolder("ADDR")
	adopt("web.systemd-socket", "Serve the sockets systemd passes (socket activation) instead of listening on --web.listen-address.",
		"web.systemd_socket", strconv.FormatBool(d.Web.SystemdSocket),
		func(c *Config) { c.Web.SystemdSocket = *web.WebSystemdSocket })
	adopt("web.config.file", "Path to an exporter-toolkit web configuration (TLS, basic auth).", "web.config_file", `"" (plain HTTP)`,
		func(c *Config) { c.Web.ConfigFile = *web.WebConfigFile })
	r.GetFlag("web.config.file").PlaceHolder("PATH")
}

// register binds one overriding flag: value makes kingpin parse into a fresh variable,
// apply copies it into the Config, but only if the user set the flag.
func register[T any](f *Flags, fc *kingpin.FlagClause, value func(*kingpin.FlagClause) *T, apply func(*Config, T)) {
	set := new(bool)
	v := value(fc.IsSetByUser(set))
	f.overrides = append(f.overrides, func(c *Config) {
		if *set {
			apply(c, *v)
		}
	})
}

func help(text, key, def string) string {
	return fmt.Sprintf("%s (YAML %s, default %s)", text, key, def)
}

// modeFlag parses --push.socket-mode at flag-parse time, so kingpin reports a bad mode
// next to the flag that carried it.
type modeFlag os.FileMode

func (m *modeFlag) Set(s string) error {
	v, err := parseMode(s)
	if err != nil {
		return fmt.Errorf("--push.socket-mode: %w", err)
	}
	*m = modeFlag(v)
	return nil
}

func (m *modeFlag) String() string { return fmtMode(os.FileMode(*m)) }

func modeVar(fc *kingpin.FlagClause) *os.FileMode {
	m := new(modeFlag)
	fc.SetValue(m)
	return (*os.FileMode)(m)
}

// Load builds the validated configuration: the file named by --config.file (or the
// defaults without one), then every flag the user set, then Validate.
func (f *Flags) Load() (Valid, error) {
	c, err := f.merged()
	if err != nil {
		return Valid{}, err
	}
	return c.Validate()
}

// merged is the file (or the defaults) with the flags the user set over it, unchecked.
func (f *Flags) merged() (Config, error) {
	c := Default()
	if path := *f.configFile; path != "" {
		var err error
		if c, err = LoadFile(path); err != nil {
			return Config{}, err
		}
	}
	for _, o := range f.overrides {
		o(&c)
	}
	return c, nil
}

// CheckOnly reports --config.check: validate, report and exit without serving.
func (f *Flags) CheckOnly() bool { return *f.check }

// ConfigFile is the --config.file path, "" when none was given; useful for logging it
// and for reloading the same file.
func (f *Flags) ConfigFile() string { return *f.configFile }
