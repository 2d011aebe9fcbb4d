package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vram-exporter/vram_exporter/config"
	"github.com/vram-exporter/vram_exporter/leak/replay"
	"github.com/vram-exporter/vram_exporter/leak/trend"
)

// The config's trend defaults are the tuned ones of the trend package (see
// docs/leak-detection.md); the two packages don't import each other, so this keeps
// them in step.
func TestTrendDefaultsMatchTheEngine(t *testing.T) {
	got := trendConfig(config.Default())
	want := trend.DefaultConfig()
	want.MinRate = float64(uint64(want.MinRate)) // the config holds whole bytes per second
	if got != want {
		t.Fatalf("config trend defaults %+v differ from trend.DefaultConfig() %+v", got, want)
	}
}

func runArgs(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// daemonFlags are the names of every flag the daemon registers, from the registration
// itself so a flag added later is covered too.
func daemonFlags(t *testing.T) []string {
	t.Helper()
	app := kingpin.New("scratch", "")
	config.RegisterFlags(app)
	var names []string
	for _, f := range app.Model().Flags {
		if f.Name != "help" && !f.Hidden {
			names = append(names, f.Name)
		}
	}
	if len(names) < 15 {
		t.Fatalf("found only %d daemon flags: %v", len(names), names)
	}
	return names
}

// The top-level help still lists the daemon's flags (README: "vram_exporter --help
// prints them all"), because the documented invocations give them without "run".
func TestHelpShowsFlagsAndSubcommands(t *testing.T) {
	code, out, stderr := runArgs(t, "--help")
	if code != 0 {
		t.Fatalf("--help exit %d: %s", code, stderr)
	}
	for _, want := range []string{"run*", "replay", "triage", "default 10m"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	for _, name := range daemonFlags(t) {
		if !strings.Contains(out, "--"+name) && !strings.Contains(out, "--[no-]"+name) {
			t.Errorf("--help lacks the daemon flag --%s", name)
		}
	}
}

// Each subcommand's help shows its own flags, none of the daemon's: replay's detector
// settings are its own flags that happen to share the daemon's names.
func TestSubcommandHelpListsOnlyItsOwnFlags(t *testing.T) {
	own := map[string]map[string]bool{
		"triage": {},
		"replay": {"config.file": true, "trend.short-window": true, "trend.long-window": true},
	}
	for cmd, mine := range own {
		t.Run(cmd, func(t *testing.T) {
			code, out, stderr := runArgs(t, cmd, "--help")
			if code != 0 {
				t.Fatalf("%s --help exit %d: %s", cmd, code, stderr)
			}
			if strings.Contains(out, "--nvml.") || strings.Contains(out, "--push.") || strings.Contains(out, "--web.") {
				t.Errorf("%s --help lists daemon flags:\n%s", cmd, out)
			}
			for _, name := range daemonFlags(t) {
				if mine[name] {
					continue
				}
				if strings.Contains(out, "--"+name+"=") || strings.Contains(out, "--[no-]"+name+" ") {
					t.Errorf("%s --help lists the daemon flag --%s", cmd, name)
				}
			}
			for name := range mine {
				if !strings.Contains(out, "--"+name) {
					t.Errorf("%s --help lacks its own --%s", cmd, name)
				}
			}
		})
	}
}

// The daemon's flags work with and without naming the default command (the README,
// Dockerfile, systemd unit and DaemonSet never name it), and only for it.
func TestDaemonFlagsBelongToTheDefaultCommand(t *testing.T) {
	for _, args := range [][]string{
		{"--config.check", "--nvml.poll-interval=2s"},
		{"--nvml.poll-interval=2s", "--config.check"},
		{"run", "--config.check", "--push.socket="},
	} {
		if code, out, stderr := runArgs(t, args...); code != 0 || !strings.Contains(out, "configuration is valid") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want a valid configuration", args, code, out, stderr)
		}
	}
	for _, args := range [][]string{
		{"triage", "--nvml.poll-interval=2s"},
		{"replay", "--input=-", "--push.socket=x"},
	} {
		flag, _, _ := strings.Cut(args[len(args)-1], "=")
		code, _, stderr := runArgs(t, args...)
		if code != 2 || !strings.Contains(stderr, flag) {
			t.Errorf("%q: exit %d, stderr %q; want a usage error naming the flag", args, code, stderr)
		}
	}
}

func TestUnknownFlagIsAUsageError(t *testing.T) {
	code, _, stderr := runArgs(t, "--no-such-flag")
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(stderr, "no-such-flag") {
		t.Errorf("error does not name the flag: %s", stderr)
	}
}

// replay takes the detector's settings from its own --config.file and window flags, the
// flags over the file, validated as the daemon validates them.
func TestReplayDetectorSettings(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.jsonl")
	if err := os.WriteFile(trace, []byte(`{"t": 1735689600, "pid": 42, "uuid": "GPU-a", "used": 1048576}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badFile := filepath.Join(dir, "bad-window.yml")
	if err := os.WriteFile(badFile, []byte("trend:\n  short_window: 7s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"defaults", nil, 0, ""},
		{"bad window flag", []string{"--trend.short-window=7s"}, 1, "trend.short_window"},
		{"bad window in the file", []string{"--config.file=" + badFile}, 1, "trend.short_window"},
		{"flag over the file", []string{"--config.file=" + badFile, "--trend.short-window=10m"}, 0, ""},
		{"missing file", []string{"--config.file=" + filepath.Join(dir, "nope.yml")}, 1, "nope.yml"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runArgs(t, append([]string{"replay", "--input=" + trace, "--output=json"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d naming %q", code, stderr, tt.code, tt.want)
			}
		})
	}
}

// replay's --output is replay.Formats(), not a list of its own.
func TestReplayOutputIsReplayFormats(t *testing.T) {
	code, _, stderr := runArgs(t, "replay", "--input=-", "--output=xml")
	if code != 2 {
		t.Fatalf("--output=xml: exit %d, want 2 (%s)", code, stderr)
	}
	for _, f := range replay.Formats() {
		if !strings.Contains(stderr, f) {
			t.Errorf("the error does not offer %q: %s", f, stderr)
		}
	}
}
