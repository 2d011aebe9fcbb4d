package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vram-exporter/vram_exporter/config"
	"github.com/vram-exporter/vram_exporter/leak/replay"
)

type replayCmd struct {
	cmd    *kingpin.CmdClause
	input  *string
	output *string
}

func registerReplay(app *kingpin.Application) *replayCmd {
	c := &replayCmd{cmd: app.Command("replay", "Run the leak detector over a recorded trace (--trace.record) at full speed and print verdict changes.")}
	c.input = c.cmd.Flag("input", "Trace file (JSON lines) to replay; --input=- reads standard input.").Required().String()
	c.output = c.cmd.Flag("output", "Output format: table (for people) or json (JSON lines).").Default("table").Enum("table", "json")
	return c
}

func (c *replayCmd) run(_ context.Context, flags *config.Flags, stdout, stderr io.Writer) int {
	valid, err := flags.Load()
	if err != nil {
		fmt.Fprintf(stderr, "vram_exporter replay: invalid configuration:\n%v\n", err)
		return 1
	}
	if *c.input == "" {
		fmt.Fprintln(stderr, "vram_exporter replay: --input needs a trace file (or --input=- for standard input)")
		return 2
	}
	in := io.Reader(os.Stdin)
	if *c.input != "-" {
		f, err := os.Open(*c.input)
		if err != nil {
			fmt.Fprintf(stderr, "vram_exporter replay: cannot open the trace: %v\n", err)
			return 1
		}
		defer f.Close()
		in = f
	}
	if _, err := replay.Run(in, stdout, trendConfig(valid.Config()), *c.output); err != nil {
		fmt.Fprintf(stderr, "vram_exporter replay: %v\n", err)
		return 1
	}
	return 0
}
