package config

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDefaultIsValid(t *testing.T) {
	v, err := Default().Validate()
	if err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	if got := v.Config(); !reflect.DeepEqual(got, Default()) {
		t.Errorf("Valid.Config() = %+v, want Default()", got)
	}
}

func TestLoadFileGoodSetsEveryKey(t *testing.T) {
	want := Config{
		Web: Web{
			ListenAddress:  ListenAddresses{"127.0.0.1:10091", "[::1]:10092"},
			SystemdSocket:  true,
			TelemetryPath:  "/vram/metrics",
			ConfigFile:     "/etc/vram_exporter/web.yml",
			ReadTimeout:    10 * time.Second,
			WriteTimeout:   20 * time.Second,
			IdleTimeout:    30 * time.Second,
			MaxHeaderBytes: 8192,
		},
		Paths: Paths{Procfs: "/host/proc"},
		Log:   Log{Level: "debug", Format: "json"},
		NVML: NVML{
			PollInterval: 500 * time.Millisecond,
			LibraryPath:  "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
		},
		Push: Push{
			Socket:         "/var/run/vram/push.sock",
			SocketMode:     0o640,
			SocketGroup:    "vram",
			TTL:            45 * time.Second,
			MaxConnections: 128,

			MaxConnectionsPerUID: 64,
			ConnectRatePerUID:    20,
			ConnectBurstPerUID:   32,
			FirstMessageTimeout:  5 * time.Second,
			IdleTimeout:          3 * time.Minute,
			MaxProcesses:         256,
			MaxDevicesPerProcess: 8,
			MaxPoolsPerProcess:   64,
			MaxSeries:            2048,
		},
		Trend: Trend{
			Bucket:                time.Minute,
			ShortWindow:           20 * time.Minute,
			LongWindow:            4 * time.Hour,
			WarmUp:                5 * time.Minute,
			MinRateBytesPerSecond: 34952,
			MinFit:                0.9,
			MinDuration:           15 * time.Minute,
			MaxKeys:               512,
		},
		Trace:     Trace{Record: "/var/lib/vram_exporter/trace.jsonl", MaxBytes: 1 << 30},
		Headroom:  Headroom{SafetyMarginBytes: 4 << 30},
		Collector: Collector{ProcessCmdline: true},
		Demo:      Demo{Enabled: true, GPUs: 8, GPUMemoryBytes: 80 << 30, Speed: 60, Seed: 42},
	}
	got, err := LoadFile("testdata/good.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LoadFile(good.yml)\n got %+v\nwant %+v", got, want)
	}
	if _, err := got.Validate(); err != nil {
		t.Errorf("good.yml does not validate: %v", err)
	}
	// Every field differs from its default, so a key the decoder skipped shows up here.
	assertAllFieldsDiffer(t, got, Default())
}

func TestLoadFileEmptyMeansDefaults(t *testing.T) {
	for _, f := range []string{"testdata/empty.yml", "testdata/comments-only.yml"} {
		got, err := LoadFile(f)
		if err != nil {
			t.Fatalf("LoadFile(%s) = %v", f, err)
		}
		if !reflect.DeepEqual(got, Default()) {
			t.Errorf("LoadFile(%s) = %+v, want Default()", f, got)
		}
	}
}

func TestLoadFileKeepsDefaultsForKeysLeftOut(t *testing.T) {
	got, err := LoadFile("testdata/partial.yml")
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.NVML.PollInterval = 2 * time.Second
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LoadFile(partial.yml)\n got %+v\nwant %+v", got, want)
	}
}

func TestLoadFileMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yml")
	_, err := LoadFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("LoadFile(missing) = %v, want an error wrapping fs.ErrNotExist", err)
	}
	want := "config file " + path + ": open " + path + ": no such file or directory; check the path given to --config.file"
	if err.Error() != want {
		t.Errorf("LoadFile(missing) error\n got %s\nwant %s", err, want)
	}
}

// invalidFiles pins the exact text a user reads for each testdata/invalid-*.yml: from
// LoadFile when the file does not decode, else from Validate.
var invalidFiles = []struct {
	file string
	want string
}{
	{"invalid-unknown-key.yml", `config file testdata/invalid-unknown-key.yml: line 2: unknown key "listen_adress" in web; known keys: listen_address, systemd_socket, telemetry_path, config_file, read_timeout, write_timeout, idle_timeout, max_header_bytes`},
	{"invalid-unknown-key-flow.yml", `config file testdata/invalid-unknown-key-flow.yml: line 1: unknown key "listen_adress" in web; known keys: listen_address, systemd_socket, telemetry_path, config_file, read_timeout, write_timeout, idle_timeout, max_header_bytes`},
	{"invalid-unknown-top-level-key.yml", `config file testdata/invalid-unknown-top-level-key.yml: line 3: unknown key "nvm" at the top level; known keys: web, paths, log, nvml, push, trend, trace, headroom, collector, demo`},
	{"invalid-wrong-type-duration.yml", `config file testdata/invalid-wrong-type-duration.yml: line 2: nvml.poll_interval: "fast" is not a duration; write a number with a unit, like "30s", "15m" or "2h"`},
	{"invalid-wrong-type-bytes.yml", `config file testdata/invalid-wrong-type-bytes.yml: line 2: trace.max_bytes: "1GiB" is not a whole number; write a non-negative integer without quotes or units, like 4096`},
	{"invalid-wrong-type-section.yml", `config file testdata/invalid-wrong-type-section.yml: line 1: web: "5" is not a mapping of keys; indent the keys of web below it (known keys: listen_address, systemd_socket, telemetry_path, config_file, read_timeout, write_timeout, idle_timeout, max_header_bytes)`},
	{"invalid-wrong-types-many.yml", strings.Join([]string{
		`config file testdata/invalid-wrong-types-many.yml: line 2: push.ttl: "soon" is not a duration; write a number with a unit, like "30s", "15m" or "2h"`,
		`config file testdata/invalid-wrong-types-many.yml: line 3: push.max_connections: "lots" is not a whole number; write an integer without quotes, like 4096`,
		`config file testdata/invalid-wrong-types-many.yml: line 4: push.socket_mode: 0660 is a bare number, which YAML may read as decimal or as octal; quote it as an octal string, like "0660"`,
		`config file testdata/invalid-wrong-types-many.yml: line 5: unknown key "sokcet" in push; known keys: socket, socket_mode, socket_group, ttl, max_connections, max_connections_per_uid, connect_rate_per_uid, connect_burst_per_uid, first_message_timeout, idle_timeout, max_processes, max_devices_per_process, max_pools_per_process, max_series`,
		`config file testdata/invalid-wrong-types-many.yml: line 7: trend.min_fit: "high" is not a number; write a number without quotes, like 0.8`,
	}, "\n")},
	{"invalid-socket-mode-number.yml", `config file testdata/invalid-socket-mode-number.yml: line 2: push.socket_mode: 0660 is a bare number, which YAML may read as decimal or as octal; quote it as an octal string, like "0660"`},
	{"invalid-socket-mode-string.yml", `config file testdata/invalid-socket-mode-string.yml: line 2: push.socket_mode: "0999" is not an octal mode; write octal digits, like "0660"`},
	{"invalid-socket-mode-setuid.yml", `push.socket_mode: 04770 has bits outside 0777; use permission bits only, like "0660"`},
	{"invalid-syntax.yml", `config file testdata/invalid-syntax.yml: yaml: line 2: did not find expected key (check the indentation and quoting near that line)`},
	{"invalid-two-documents.yml", `config file testdata/invalid-two-documents.yml: line 4: a second YAML document starts here; put all settings in one document`},

	{"invalid-poll-interval-zero.yml", `nvml.poll_interval: 0s is out of range; use 100ms to 1m`},
	{"invalid-poll-interval-long.yml", `nvml.poll_interval: 2m is out of range; use 100ms to 1m`},
	{"invalid-ttl.yml", `push.ttl: 1.5s is shorter than twice nvml.poll_interval (1s); use at least 2s`},
	{"invalid-window-order.yml", `trend.long_window: 15m is not longer than the short window (2h); make it longer than the short window`},
	{"invalid-window-equal.yml", `trend.long_window: 30m is not longer than the short window (30m); make it longer than the short window`},
	{"invalid-window-multiple.yml", `trend.short_window: 1m40s is not a multiple of the bucket (30s); use 1m30s or 2m`},
	{"invalid-window-too-short.yml", `trend.short_window: 1m is shorter than 5 buckets of 30s; use at least 2m30s`},
	{"invalid-min-fit.yml", `trend.min_fit: 1.5 is out of range; use 0 to 1`},
	{"invalid-log-level.yml", `log.level: "verbose" is not a log level; use one of debug, info, warn, error`},
	{"invalid-log-format.yml", `log.format: "xml" is not a log format; use one of console, json`},
	{"invalid-telemetry-path.yml", `web.telemetry_path: "metrics" does not start with "/"; use a URL path like "/metrics"`},
	{"invalid-listen-port.yml", `web.listen_address: port "99999" of ":99999" is not a port number from 0 to 65535 (nor a service name); use one like ":10090"`},
	{"invalid-web-timeouts.yml", strings.Join([]string{
		`web.read_timeout: 0s is too short; use at least 1s (there is no "no timeout")`,
		`web.idle_timeout: 500ms is too short; use at least 1s (there is no "no timeout")`,
		`web.max_header_bytes: 100 is out of range; use 4096 to 1048576`,
	}, "\n")},
	{"invalid-listen-address.yml", `web.listen_address: "localhost" is not host:port; use host:port or :port, like ":10090"`},
	{"invalid-socket-relative.yml", `push.socket: "push.sock" is not an absolute path; use one like "/run/vram_exporter/push.sock"`},
	{"invalid-max-connections.yml", `push.max_connections: 0 is out of range; use at least 1, like 4096`},
	{"invalid-push-limits.yml", strings.Join([]string{
		`push.idle_timeout: 500ms is out of range; use at least 1s, like 1m30s`,
		`push.max_series: 0 is out of range; use at least 1, like 4096`,
		`trend.max_keys: -3 is out of range; use at least 1, like 2048`,
	}, "\n")},
	{"invalid-trace-max-bytes.yml", `trace.max_bytes: 10 is below the minimum of 1048576 (1 MiB); raise it`},
	{"invalid-demo-speed.yml", `demo.speed: 0 is out of range; use 1 (real time) to 3600`},
	{"invalid-many.yml", strings.Join([]string{
		`web.listen_address: "localhost" is not host:port; use host:port or :port, like ":10090"`,
		`log.level: "verbose" is not a log level; use one of debug, info, warn, error`,
		`log.format: "xml" is not a log format; use one of console, json`,
		`push.max_connections: 0 is out of range; use at least 1, like 4096`,
		`demo.speed: 0 is out of range; use 1 (real time) to 3600`,
	}, "\n")},
}

func TestInvalidFiles(t *testing.T) {
	for _, tc := range invalidFiles {
		t.Run(tc.file, func(t *testing.T) {
			c, err := LoadFile(filepath.Join("testdata", tc.file))
			if err == nil {
				var v Valid
				v, err = c.Validate()
				if err == nil {
					t.Fatalf("no error; Validate accepted %+v", v.Config())
				}
				if v != (Valid{}) {
					t.Errorf("Validate returned a non-zero Valid alongside its error")
				}
			}
			if err.Error() != tc.want {
				t.Errorf("error text\n got: %s\nwant: %s", err, tc.want)
			}
		})
	}
}

// A testdata file nobody asserts on is a test that silently does nothing.
func TestEveryInvalidFileIsInTheTable(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid-*.yml")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, tc := range invalidFiles {
		listed[tc.file] = true
	}
	for _, f := range files {
		if !listed[filepath.Base(f)] {
			t.Errorf("%s has no entry in invalidFiles", f)
		}
	}
	if len(files) != len(invalidFiles) {
		t.Errorf("%d invalid-*.yml files, %d table entries", len(files), len(invalidFiles))
	}
}

// TestValidateInCode covers rules that are awkward to reach from a file (NaN, long
// paths, mode bits) and the cross-key rules' edges.
func TestValidateInCode(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "" means valid
	}{
		{"ttl exactly twice the poll interval", func(c *Config) { c.Push.TTL = 2 * c.NVML.PollInterval }, ""},
		{"poll interval at both bounds", func(c *Config) { c.NVML.PollInterval = 100 * time.Millisecond }, ""},
		{"poll interval at the top", func(c *Config) {
			c.NVML.PollInterval = time.Minute
			c.Push.TTL = 2 * time.Minute
			c.Trend.Bucket = time.Minute
		}, ""},
		{"push socket off", func(c *Config) { c.Push.Socket = "" }, ""},
		{"min fit at the edges", func(c *Config) { c.Trend.MinFit = 0 }, ""},
		{"listen address with host", func(c *Config) { c.Web.ListenAddress = ListenAddresses{"[::1]:10090"} }, ""},
		{"listen address without port number", func(c *Config) { c.Web.ListenAddress = ListenAddresses{"localhost:"} },
			`web.listen_address: "localhost:" is not host:port; use host:port or :port, like ":10090"`},
		{"bare IPv6", func(c *Config) { c.Web.ListenAddress = ListenAddresses{"::1:10090"} },
			`web.listen_address: "::1:10090" is not host:port; use host:port or :port, like ":10090"`},
		{"min fit NaN", func(c *Config) { c.Trend.MinFit = math.NaN() }, `trend.min_fit: NaN is out of range; use 0 to 1`},
		{"min fit negative", func(c *Config) { c.Trend.MinFit = -0.1 }, `trend.min_fit: -0.1 is out of range; use 0 to 1`},
		{"socket path too long", func(c *Config) { c.Push.Socket = "/" + strings.Repeat("s", 107) },
			`push.socket: "/` + strings.Repeat("s", 107) + `" is 108 bytes long; a unix socket path may be at most 107 bytes, so use a shorter directory`},
		{"socket mode bits", func(c *Config) { c.Push.SocketMode = os.ModeSetuid | 0o660 },
			`push.socket_mode: 040000660 has bits outside 0777; use permission bits only, like "0660"`},
		{"empty procfs", func(c *Config) { c.Paths.Procfs = "" }, `paths.procfs: is empty; use the procfs mount point, usually "/proc"`},
		{"bucket zero", func(c *Config) { c.Trend.Bucket = 0 }, `trend.bucket: 0s is out of range; use a positive duration like "30s"`},
		{"bucket shorter than a poll", func(c *Config) {
			c.NVML.PollInterval = 10 * time.Second
			c.Trend.Bucket = 5 * time.Second
		}, `trend.bucket: 5s is shorter than nvml.poll_interval (10s), so some buckets would hold no sample; use at least 10s`},
		{"window zero", func(c *Config) { c.Trend.ShortWindow = 0 },
			`trend.short_window: 0s is not a positive multiple of the bucket (30s); use a multiple like 2m30s`},
		{"window below one bucket", func(c *Config) { c.Trend.LongWindow = 10 * time.Second },
			`trend.long_window: 10s is not a positive multiple of the bucket (30s); use a multiple like 2m30s`},
		{"negative warm-up", func(c *Config) { c.Trend.WarmUp = -time.Second },
			`trend.warm_up: -1s is negative; use 0 to turn warm-up off, or a duration like "10m"`},
		{"negative min duration", func(c *Config) { c.Trend.MinDuration = -time.Minute },
			`trend.min_duration: -1m is negative; use 0 (the default) or a duration like "5m"`},
		{"zero min rate", func(c *Config) { c.Trend.MinRateBytesPerSecond = 0 },
			`trend.min_rate_bytes_per_second: 0 bytes per second would call any growth a leak; use a positive rate, like 8738 (about the default, 0.5 MiB per minute)`},
		{"demo gpus", func(c *Config) { c.Demo.GPUs = 0 }, `demo.gpus: 0 is out of range; use 1 to 64`},
		{"demo memory", func(c *Config) { c.Demo.GPUMemoryBytes = 1 << 20 },
			`demo.gpu_memory_bytes: 1048576 is below the minimum of 1073741824 (1 GiB); use a real GPU's size, like 150754820096 (an H200)`},
		{"demo too fast", func(c *Config) { c.Demo.Speed = 3601 }, `demo.speed: 3601 is out of range; use 1 (real time) to 3600`},
		{"socket mode zero", func(c *Config) { c.Push.SocketMode = 0 },
			`push.socket_mode: 0000 lets no one but root connect; grant read and write to the senders, like "0660"`},
		{"socket off, its options still checked", func(c *Config) { c.Push.Socket = ""; c.Push.SocketMode = 0o1660 },
			`push.socket_mode: 01660 has bits outside 0777; use permission bits only, like "0660"`},
		// The rules below once passed here and failed at start (trend wanted 5 buckets
		// and at most 100000 of them).
		{"short window of four buckets", func(c *Config) { c.Trend.ShortWindow = 2 * time.Minute },
			`trend.short_window: 2m is shorter than 5 buckets of 30s; use at least 2m30s`},
		{"long window of too many buckets", func(c *Config) {
			c.NVML.PollInterval = time.Second // so a 1 s bucket is allowed
			c.Trend.Bucket, c.Trend.ShortWindow, c.Trend.LongWindow = time.Second, time.Minute, 48*time.Hour
		}, `trend.long_window: 48h holds more than 100000 buckets of 1s, the most kept per series; use a wider bucket or a shorter window`},
		// Problems come in schema order, whichever package's rule found them.
		{"schema order across owners", func(c *Config) {
			c.Demo.GPUs = 0
			c.Push.MaxConnections = 0
			c.Push.TTL = time.Second
			c.NVML.PollInterval = time.Second
			c.Push.SocketMode = 0o1660
			c.Web.TelemetryPath = "m"
		}, strings.Join([]string{
			`web.telemetry_path: "m" does not start with "/"; use a URL path like "/m"`,
			`push.socket_mode: 01660 has bits outside 0777; use permission bits only, like "0660"`,
			`push.ttl: 1s is shorter than twice nvml.poll_interval (1s); use at least 2s`,
			`push.max_connections: 0 is out of range; use at least 1, like 4096`,
			`demo.gpus: 0 is out of range; use 1 to 64`,
		}, "\n")},
		// A broken poll interval must not drag the rules built on it into the report.
		{"poll interval broken alone", func(c *Config) { c.NVML.PollInterval = 0; c.Push.TTL = 0 },
			`nvml.poll_interval: 0s is out of range; use 100ms to 1m`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.edit(&c)
			_, err := c.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Validate()\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
}

func TestZeroValidPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Valid{}.Config() did not panic")
		}
	}()
	_ = Valid{}.Config()
}

func TestValidHoldsItsOwnCopy(t *testing.T) {
	c := Default()
	v, err := c.Validate()
	if err != nil {
		t.Fatal(err)
	}
	c.Log.Level = "nonsense"
	got := v.Config()
	got.Log.Format = "nonsense"
	if !reflect.DeepEqual(v.Config(), Default()) {
		t.Errorf("a validated config changed after Validate: %+v", v.Config())
	}
}

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    os.FileMode
		wantErr string
	}{
		{"0660", 0o660, ""},
		{"660", 0o660, ""},
		{"0o640", 0o640, ""},
		{"0", 0, ""},
		{"0777", 0o777, ""},
		{"", 0, `"" is not an octal mode; write octal digits, like "0660"`},
		{"0o", 0, `"0o" is not an octal mode; write octal digits, like "0660"`},
		{"+660", 0, `"+660" is not an octal mode; write octal digits, like "0660"`},
		{"rw-rw----", 0, `"rw-rw----" is not an octal mode; write octal digits, like "0660"`},
		// Which bits a socket may have is push's rule, applied by Validate.
		{"01777", 0o1777, ""},
	} {
		got, err := parseMode(tc.in)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != tc.want || gotErr != tc.wantErr {
			t.Errorf("parseMode(%q) = %04o, %q; want %04o, %q", tc.in, got, gotErr, tc.want, tc.wantErr)
		}
	}
}

// FuzzLoad feeds arbitrary bytes to the decoder: it must return defaults, a config or an
// error, never panic (the error rewriting indexes into yaml.v3's messages).
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parse("fuzz.yml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "config file fuzz.yml: ") {
				t.Errorf("error without the file name: %v", err)
			}
			return
		}
		_, _ = c.Validate()
	})
}

// assertAllFieldsDiffer fails for every leaf of got that equals the same leaf of def.
func assertAllFieldsDiffer(t *testing.T, got, def Config) {
	t.Helper()
	pairs := []struct {
		key       string
		got, want any
	}{
		{"web.listen_address", fmt.Sprint(got.Web.ListenAddress), fmt.Sprint(def.Web.ListenAddress)},
		{"web.systemd_socket", got.Web.SystemdSocket, def.Web.SystemdSocket},
		{"web.telemetry_path", got.Web.TelemetryPath, def.Web.TelemetryPath},
		{"web.config_file", got.Web.ConfigFile, def.Web.ConfigFile},
		{"web.read_timeout", got.Web.ReadTimeout, def.Web.ReadTimeout},
		{"web.write_timeout", got.Web.WriteTimeout, def.Web.WriteTimeout},
		{"web.idle_timeout", got.Web.IdleTimeout, def.Web.IdleTimeout},
		{"web.max_header_bytes", got.Web.MaxHeaderBytes, def.Web.MaxHeaderBytes},
		{"paths.procfs", got.Paths.Procfs, def.Paths.Procfs},
		{"log.level", got.Log.Level, def.Log.Level},
		{"log.format", got.Log.Format, def.Log.Format},
		{"nvml.poll_interval", got.NVML.PollInterval, def.NVML.PollInterval},
		{"nvml.library_path", got.NVML.LibraryPath, def.NVML.LibraryPath},
		{"push.socket", got.Push.Socket, def.Push.Socket},
		{"push.socket_mode", got.Push.SocketMode, def.Push.SocketMode},
		{"push.socket_group", got.Push.SocketGroup, def.Push.SocketGroup},
		{"push.ttl", got.Push.TTL, def.Push.TTL},
		{"push.max_connections", got.Push.MaxConnections, def.Push.MaxConnections},
		{"push.max_connections_per_uid", got.Push.MaxConnectionsPerUID, def.Push.MaxConnectionsPerUID},
		{"push.connect_rate_per_uid", got.Push.ConnectRatePerUID, def.Push.ConnectRatePerUID},
		{"push.connect_burst_per_uid", got.Push.ConnectBurstPerUID, def.Push.ConnectBurstPerUID},
		{"push.first_message_timeout", got.Push.FirstMessageTimeout, def.Push.FirstMessageTimeout},
		{"push.idle_timeout", got.Push.IdleTimeout, def.Push.IdleTimeout},
		{"push.max_processes", got.Push.MaxProcesses, def.Push.MaxProcesses},
		{"push.max_devices_per_process", got.Push.MaxDevicesPerProcess, def.Push.MaxDevicesPerProcess},
		{"push.max_pools_per_process", got.Push.MaxPoolsPerProcess, def.Push.MaxPoolsPerProcess},
		{"push.max_series", got.Push.MaxSeries, def.Push.MaxSeries},
		{"trend.bucket", got.Trend.Bucket, def.Trend.Bucket},
		{"trend.short_window", got.Trend.ShortWindow, def.Trend.ShortWindow},
		{"trend.long_window", got.Trend.LongWindow, def.Trend.LongWindow},
		{"trend.warm_up", got.Trend.WarmUp, def.Trend.WarmUp},
		{"trend.min_rate_bytes_per_second", got.Trend.MinRateBytesPerSecond, def.Trend.MinRateBytesPerSecond},
		{"trend.min_fit", got.Trend.MinFit, def.Trend.MinFit},
		{"trend.min_duration", got.Trend.MinDuration, def.Trend.MinDuration},
		{"trend.max_keys", got.Trend.MaxKeys, def.Trend.MaxKeys},
		{"trace.record", got.Trace.Record, def.Trace.Record},
		{"trace.max_bytes", got.Trace.MaxBytes, def.Trace.MaxBytes},
		{"headroom.safety_margin_bytes", got.Headroom.SafetyMarginBytes, def.Headroom.SafetyMarginBytes},
		{"collector.process_cmdline", got.Collector.ProcessCmdline, def.Collector.ProcessCmdline},
		{"demo.enabled", got.Demo.Enabled, def.Demo.Enabled},
		{"demo.gpus", got.Demo.GPUs, def.Demo.GPUs},
		{"demo.gpu_memory_bytes", got.Demo.GPUMemoryBytes, def.Demo.GPUMemoryBytes},
		{"demo.speed", got.Demo.Speed, def.Demo.Speed},
		{"demo.seed", got.Demo.Seed, def.Demo.Seed},
	}
	for _, p := range pairs {
		if p.got == p.want {
			t.Errorf("%s = %v, the default; set it to something else so the test sees it decoded", p.key, p.got)
		}
	}
	// A key added to the schema must be added to pairs and good.yml too.
	if n := countKeys(nil); n != len(pairs) {
		t.Errorf("the schema has %d keys but assertAllFieldsDiffer checks %d; add the new key to good.yml and here", n, len(pairs))
	}
}

func countKeys(path []string) int {
	keys := knownKeys(path)
	if keys == nil {
		return 1
	}
	n := 0
	for _, k := range keys {
		n += countKeys(append(append([]string(nil), path...), k))
	}
	return n
}
