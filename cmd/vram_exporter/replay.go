package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/model"

	"github.com/vram-exporter/vram_exporter/config"
	"github.com/vram-exporter/vram_exporter/leak/replay"
)

// replayCmd runs the leak detector over a recorded trace. Of the daemon's settings it
// takes only the detector's: the trend section of a config file and the two window
// flags, so a trace can be replayed with the settings it was recorded under, or others.
type replayCmd struct {
	cmd        *kingpin.CmdClause
	input      string
	output     string
	configFile string
	short      time.Duration
	shortSet   bool
	long       time.Duration
	longSet    bool
}

func registerReplay(app *kingpin.Application) *replayCmd {
	c := &replayCmd{cmd: app.Command("replay", "Run the leak detector over a recorded trace (--trace.record) at full speed and print verdict changes.")}
	c.cmd.Flag("input", "Trace file (JSON lines, plain or gzip-compressed like the shipped leak/eval/testdata/*.jsonl.gz) to replay; --input=- reads standard input.").Required().PlaceHolder("PATH").StringVar(&c.input)
	c.cmd.Flag("output", "Output format: "+strings.Join(replay.Formats(), " or ")+" (table for people, json for JSON lines).").
		Default(replay.FormatTable).EnumVar(&c.output, replay.Formats()...)
	c.cmd.Flag("config.file", "The daemon's YAML configuration file, for its trend settings (the detector's); without it the built-in defaults. The flags below override it.").
		PlaceHolder("PATH").StringVar(&c.configFile)
	d := config.Default().Trend
	c.cmd.Flag("trend.short-window", fmt.Sprintf("Short growth-slope window; a multiple of trend.bucket (default %s).", model.Duration(d.ShortWindow))).
		PlaceHolder("DURATION").IsSetByUser(&c.shortSet).DurationVar(&c.short)
	c.cmd.Flag("trend.long-window", fmt.Sprintf("Long growth-slope window; a multiple of trend.bucket, longer than the short window (default %s).", model.Duration(d.LongWindow))).
		PlaceHolder("DURATION").IsSetByUser(&c.longSet).DurationVar(&c.long)
	return c
}

// settings is the daemon's configuration as the daemon would load it from the same file
// and window flags, validated the same way, so replay and daemon agree on a verdict.
func (c *replayCmd) settings() (config.Config, error) {
	cfg := config.Default()
	if c.configFile != "" {
		var err error
		if cfg, err = config.LoadFile(c.configFile); err != nil {
			return config.Config{}, err
		}
	}
	if c.shortSet {
		cfg.Trend.ShortWindow = c.short
	}
	if c.longSet {
		cfg.Trend.LongWindow = c.long
	}
	valid, err := cfg.Validate()
	if err != nil {
		return config.Config{}, err
	}
	return valid.Config(), nil
}

func (c *replayCmd) run(_ context.Context, stdout, stderr io.Writer) int {
	cfg, err := c.settings()
	if err != nil {
		fmt.Fprintf(stderr, "vram_exporter replay: invalid configuration:\n%v\n", err)
		return 1
	}
	if c.input == "" {
		fmt.Fprintln(stderr, "vram_exporter replay: --input needs a trace file (or --input=- for standard input)")
		return 2
	}
	in := io.Reader(os.Stdin)
	if c.input != "-" {
		f, err := os.Open(c.input)
		if err != nil {
			fmt.Fprintf(stderr, "vram_exporter replay: cannot open the trace: %v\n", err)
			return 1
		}
		defer f.Close()
		in = f
	}
	plain, err := replay.Decompress(in)
	if err != nil {
		fmt.Fprintf(stderr, "vram_exporter replay: %s: %v\n", c.input, err)
		return 1
	}
	defer plain.Close()
	sum, err := replay.Run(plain, stdout, trendConfig(cfg), c.output)
	// What was skipped goes to stderr either way, so neither format's output changes
	// and a partly broken trace is never replayed silently.
	if s := sum.Skipped(5); s != "" {
		fmt.Fprintf(stderr, "vram_exporter replay: %s\n", s)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vram_exporter replay: %v\n", err)
		return 1
	}
	return 0
}
