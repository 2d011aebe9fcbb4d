package config

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// newApp builds the daemon's command line the way cmd/vram_exporter does: the daemon is
// the default command and other subcommands exist beside it. Each test gets its own
// Application, so nothing is shared between tests.
func newApp(t *testing.T) (*kingpin.Application, *Flags) {
	t.Helper()
	app := kingpin.New("vram_exporter", "test")
	app.Terminate(nil)
	app.UsageWriter(io.Discard)
	app.ErrorWriter(io.Discard)
	serve := app.Command("serve", "Run the daemon.").Default()
	app.Command("triage", "Ask a running daemon what is growing.")
	app.Command("replay", "Replay a recorded trace.")
	return app, RegisterFlags(serve)
}

func parseArgs(t *testing.T, args ...string) *Flags {
	t.Helper()
	app, f := newApp(t)
	if _, err := app.Parse(args); err != nil {
		t.Fatalf("Parse(%q) = %v", args, err)
	}
	return f
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func load(t *testing.T, f *Flags) Config {
	t.Helper()
	v, err := f.Load()
	if err != nil {
		t.Fatalf("Load() = %v", err)
	}
	return v.Config()
}

func TestFlagsWithoutFileOrFlagsGiveDefaults(t *testing.T) {
	f := parseArgs(t)
	if got := load(t, f); !reflect.DeepEqual(got, Default()) {
		t.Errorf("Load() = %+v, want Default()", got)
	}
	if f.CheckOnly() {
		t.Error("CheckOnly() = true without --config.check")
	}
	if f.ConfigFile() != "" {
		t.Errorf("ConfigFile() = %q, want \"\"", f.ConfigFile())
	}
}

func TestFlagSetByUserOverridesFileAndFlagLeftAloneDoesNot(t *testing.T) {
	path := writeFile(t, `
web:
  listen_address: ":10091"
log:
  level: debug
nvml:
  poll_interval: 2s
push:
  ttl: 10s
`)
	f := parseArgs(t, "--config.file", path, "--log.level=warn", "--push.ttl=1m")
	got := load(t, f)

	want := Default()
	want.Web.ListenAddress = ListenAddresses{":10091"} // file, flag left alone
	want.NVML.PollInterval = 2 * time.Second           // file, flag left alone
	want.Log.Level = "warn"                            // flag over file
	want.Push.TTL = time.Minute                        // flag over file
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load()\n got %+v\nwant %+v", got, want)
	}
	if f.ConfigFile() != path {
		t.Errorf("ConfigFile() = %q, want %q", f.ConfigFile(), path)
	}
}

// A user who passes the default value explicitly still means it: it beats the file.
func TestFlagSetToItsDefaultStillOverridesFile(t *testing.T) {
	path := writeFile(t, "log:\n  level: debug\ndemo:\n  enabled: true\n")
	got := load(t, parseArgs(t, "--config.file="+path, "--log.level=info", "--no-demo"))
	if got.Log.Level != "info" || got.Demo.Enabled {
		t.Errorf("Load() log.level=%q demo.enabled=%v, want info and false", got.Log.Level, got.Demo.Enabled)
	}
}

func TestEveryFlagReachesItsKey(t *testing.T) {
	got := load(t, parseArgs(t,
		"--web.listen-address=127.0.0.1:10091",
		"--web.config.file=/etc/web.yml",
		"--web.telemetry-path=/m",
		"--path.procfs=/host/proc",
		"--nvml.poll-interval=500ms",
		"--nvml.library-path=/lib/libnvidia-ml.so.1",
		"--log.level=debug",
		"--log.format=json",
		"--push.socket=/tmp/p.sock",
		"--push.socket-mode=0600",
		"--push.socket-group=vram",
		"--push.ttl=5s",
		"--push.max-connections=7",
		"--push.max-connections-per-uid=6",
		"--push.connect-rate-per-uid=5.5",
		"--push.connect-burst-per-uid=4",
		"--push.first-message-timeout=3s",
		"--push.idle-timeout=2m",
		"--push.max-processes=11",
		"--push.max-devices-per-process=12",
		"--push.max-pools-per-process=13",
		"--push.max-series=14",
		"--trend.max-keys=15",
		"--trend.short-window=20m",
		"--trend.long-window=3h",
		"--trace.record=/tmp/trace.jsonl",
		"--trace.max-bytes=2097152",
		"--collector.process-cmdline",
		"--demo",
		"--demo.speed=60",
		"--demo.seed=9",
	))
	want := Default()
	want.Web.ListenAddress, want.Web.TelemetryPath, want.Web.ConfigFile = ListenAddresses{"127.0.0.1:10091"}, "/m", "/etc/web.yml"
	want.Paths.Procfs = "/host/proc"
	want.NVML = NVML{PollInterval: 500 * time.Millisecond, LibraryPath: "/lib/libnvidia-ml.so.1"}
	want.Log = Log{Level: "debug", Format: "json"}
	want.Push = Push{Socket: "/tmp/p.sock", SocketMode: 0o600, SocketGroup: "vram", TTL: 5 * time.Second, MaxConnections: 7,
		MaxConnectionsPerUID: 6, ConnectRatePerUID: 5.5, ConnectBurstPerUID: 4, FirstMessageTimeout: 3 * time.Second, IdleTimeout: 2 * time.Minute,
		MaxProcesses: 11, MaxDevicesPerProcess: 12, MaxPoolsPerProcess: 13, MaxSeries: 14, SocketChosen: true}
	want.Trend.MaxKeys = 15
	want.Trend.ShortWindow = 20 * time.Minute
	want.Trend.LongWindow = 3 * time.Hour
	want.Trace = Trace{Record: "/tmp/trace.jsonl", MaxBytes: 2 << 20}
	want.Collector.ProcessCmdline = true
	want.Demo.Enabled = true
	want.Demo.Speed = 60
	want.Demo.Seed = 9
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load()\n got %+v\nwant %+v", got, want)
	}
}

func TestFlagsAreValidatedTogetherWithFile(t *testing.T) {
	path := writeFile(t, "nvml:\n  poll_interval: 10s\n")
	// The file's poll interval and the flag's TTL are fine alone, not together.
	_, err := parseArgs(t, "--config.file="+path, "--push.ttl=15s").Load()
	want := "push.ttl: 15s is shorter than twice nvml.poll_interval (10s); use at least 20s"
	if err == nil || err.Error() != want {
		t.Errorf("Load() = %v, want %s", err, want)
	}
}

func TestFlagsReportFileErrors(t *testing.T) {
	path := writeFile(t, "web:\n  listen_adress: x\n")
	_, err := parseArgs(t, "--config.file="+path).Load()
	want := "config file " + path + `: line 2: unknown key "listen_adress" in web; known keys: listen_address, systemd_socket, telemetry_path, config_file, read_timeout, write_timeout, idle_timeout, max_header_bytes`
	if err == nil || err.Error() != want {
		t.Errorf("Load() = %v, want %s", err, want)
	}
}

func TestBadSocketModeFlagFailsAtParse(t *testing.T) {
	app, _ := newApp(t)
	_, err := app.Parse([]string{"--push.socket-mode=999"})
	if err == nil || !strings.Contains(err.Error(), `--push.socket-mode: "999" is not an octal mode; write octal digits, like "0660"`) {
		t.Errorf("Parse() = %v, want the socket mode error", err)
	}
}

func TestConfigCheck(t *testing.T) {
	if !parseArgs(t, "--config.check").CheckOnly() {
		t.Error("CheckOnly() = false with --config.check")
	}
}

// The daemon's flags live on its (default) command, so the other subcommands parse
// without them and an explicit "serve" takes them too.
func TestFlagsOnDefaultCommand(t *testing.T) {
	app, _ := newApp(t)
	cmd, err := app.Parse([]string{"triage"})
	if err != nil || cmd != "triage" {
		t.Fatalf("Parse(triage) = %q, %v", cmd, err)
	}
	app, f := newApp(t)
	if _, err := app.Parse([]string{"serve", "--log.format=json"}); err != nil {
		t.Fatal(err)
	}
	if got := load(t, f); got.Log.Format != "json" {
		t.Errorf("log.format = %q after serve --log.format=json", got.Log.Format)
	}
}

// RegisterFlags also works on the application itself.
func TestFlagsOnApplication(t *testing.T) {
	app := kingpin.New("vram_exporter", "test")
	app.Terminate(nil)
	f := RegisterFlags(app)
	if _, err := app.Parse([]string{"--demo.seed=3"}); err != nil {
		t.Fatal(err)
	}
	if got := load(t, f); got.Demo.Seed != 3 {
		t.Errorf("demo.seed = %d, want 3", got.Demo.Seed)
	}
}

// Each overriding flag's help names its YAML key and its default, so --help and the
// file's documentation cannot drift apart silently.
func TestFlagHelpNamesKeyAndDefault(t *testing.T) {
	app := kingpin.New("vram_exporter", "test")
	RegisterFlags(app)
	seen := 0
	for _, fl := range app.Model().Flags {
		if fl.Hidden || fl.Name == "help" || fl.Name == "config.file" || fl.Name == "config.check" {
			continue // kingpin's own flags, and the two that override nothing
		}
		seen++
		if !strings.Contains(fl.Help, "(YAML ") || !strings.Contains(fl.Help, ", default ") {
			t.Errorf("--%s help %q does not name its YAML key and default", fl.Name, fl.Help)
		}
		if len(fl.Default) > 0 {
			t.Errorf("--%s has a kingpin default %q, which would hide the file's value", fl.Name, fl.Default)
		}
	}
	if seen != 32 {
		t.Errorf("%d overriding flags, want 32", seen)
	}
}

// Naming the socket, even at its default path, is a choice the daemon must not override
// with its per-user fallback; only a socket nobody named may fall back.
func TestSocketChosen(t *testing.T) {
	dir := t.TempDir()
	yml := filepath.Join(dir, "c.yml")
	if err := os.WriteFile(yml, []byte("push:\n  socket: "+Default().Push.Socket+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want bool
	}{
		{"nothing named", nil, false},
		{"flag at the default path", []string{"--push.socket=" + Default().Push.Socket}, true},
		{"file at the default path", []string{"--config.file=" + yml}, true},
	} {
		app := kingpin.New("t", "")
		f := RegisterFlags(app)
		if _, err := app.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		v, err := f.Load()
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Config().Push.SocketChosen; got != c.want {
			t.Errorf("%s: SocketChosen = %v, want %v", c.name, got, c.want)
		}
	}
}
