// Command vram_eval regenerates the leak detector's labelled trace suite and scores the
// detector against the PromQL deriv() baseline on it (docs/leak-detection.md).
//
//	go run ./cmd/vram_eval              # print the report
//	go run ./cmd/vram_eval -generate    # rewrite leak/eval/testdata from the seeded generator
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/vram-exporter/vram_exporter/leak/eval"
	"github.com/vram-exporter/vram_exporter/leak/trend"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vram_eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "leak/eval/testdata", "directory holding labels.json and the traces")
	generate := fs.Bool("generate", false, "rewrite the synthetic traces and labels in -dir, then report")
	show := fs.String("replay", "", "print the verdict changes of one labelled trace (by name) as a table, instead of the report")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *show != "" {
		if err := eval.Show(*dir, *show, trend.DefaultConfig(), stdout); err != nil {
			fmt.Fprintln(stderr, "vram_eval:", err)
			return 1
		}
		return 0
	}
	if *generate {
		if err := eval.WriteSuite(*dir); err != nil {
			fmt.Fprintln(stderr, "vram_eval:", err)
			return 1
		}
	}
	rep, err := eval.Evaluate(*dir, trend.DefaultConfig())
	if err != nil {
		fmt.Fprintln(stderr, "vram_eval:", err)
		return 1
	}
	if err := rep.Write(stdout); err != nil {
		fmt.Fprintln(stderr, "vram_eval:", err)
		return 1
	}
	return 0
}
