package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vram-exporter/vram_exporter/config"
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

func TestHelpShowsFlagsAndSubcommands(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, &out, &errb); code != 0 {
		t.Fatalf("--help exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"--web.listen-address", "--nvml.poll-interval", "--push.socket", "replay", "default 10m"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestUnknownFlagIsAUsageError(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--no-such-flag"}, &out, &errb); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(errb.String(), "no-such-flag") {
		t.Errorf("error does not name the flag: %s", errb.String())
	}
}
