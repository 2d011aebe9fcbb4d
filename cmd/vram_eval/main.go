// Command vram_eval regenerates the leak detector's labelled trace suite and scores the
// detector against the PromQL deriv() baseline on it (docs/leak-detection.md).
//
//	go run ./cmd/vram_eval                      # print the report
//	go run ./cmd/vram_eval -generate            # rewrite leak/eval/testdata from the seeded generator
//	go run ./cmd/vram_eval -seeds 100           # the report, then every class over 100 seeds
//	go run ./cmd/vram_eval -seeds 100 -stress   # the classes drawn outside the ranges the detector was built on
//	go run ./cmd/vram_eval -seeds 100 -load     # the same classes, each client reporting its requests in flight
//	go run ./cmd/vram_eval -seeds 300 -first-seed 1001   # a held-out range: seeds 1001–1300
//	go run ./cmd/vram_eval -class gc_sawtooth -seed 7   # one class's trace for one seed, as a table
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"

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
	seeds := fs.Int("seeds", 0, "after the report, sweep every class (look-alikes and their leaking twins) over this many seeds")
	only := fs.String("classes", "", "with -seeds: only the classes whose name matches this regular expression")
	class := fs.String("class", "", "print the verdict changes of one class's trace for -seed, instead of the report")
	seed := fs.Uint64("seed", 1, "with -class: the seed")
	first := fs.Uint64("first-seed", 1, "with -seeds: the first seed of the sweep (a held-out check reads a range not looked at while changing the detector)")
	stress := fs.Bool("stress", false, "with -seeds: sweep the classes drawn outside the ranges the detector was built on (eval.Stress) instead")
	load := fs.Bool("load", false, "with -seeds or -class: every client reports its requests in flight (the Python client's request()), as one that opts in does")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "vram_eval:", err)
		return 1
	}
	if *seeds > 0 && *first > math.MaxUint64-uint64(*seeds) {
		return fail(fmt.Errorf("-first-seed %d with -seeds %d runs past the largest seed; start lower", *first, *seeds))
	}
	cfg := trend.DefaultConfig()
	if *show != "" {
		if err := eval.Show(*dir, *show, cfg, stdout); err != nil {
			return fail(err)
		}
		return 0
	}
	if *class != "" {
		if err := eval.ShowClass(*class, *seed, *load, cfg, stdout); err != nil {
			return fail(err)
		}
		return 0
	}
	if *generate {
		if err := eval.WriteSuite(*dir); err != nil {
			return fail(err)
		}
	}
	rep, err := eval.Evaluate(*dir, cfg)
	if err != nil {
		return fail(err)
	}
	if err := rep.Write(stdout); err != nil {
		return fail(err)
	}
	if *seeds <= 0 {
		return 0
	}
	var keep func(eval.Class) bool
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			return fail(fmt.Errorf("-classes: %w", err))
		}
		keep = func(c eval.Class) bool { return re.MatchString(c.Name) }
	}
	opts := eval.SweepOptions{Seeds: eval.SeedsFrom(*first, *seeds), Config: cfg, Setting: rep.Best, Keep: keep, Load: *load}
	if *stress {
		opts.Classes = eval.Stress()
	}
	rs, err := eval.Sweep(opts)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintln(stdout)
	if err := eval.WriteSweep(stdout, rs, opts.Seeds); err != nil {
		return fail(err)
	}
	return 0
}
