package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"

	"github.com/vram-exporter/vram_exporter/config"
)

// run parses args and runs the chosen command; it returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	app := kingpin.New("vram_exporter", "Prometheus exporter that explains GPU memory: the driver's view (NVML) joined with what serving processes' allocators push.")
	app.Version(version.Print("vram_exporter"))
	app.HelpFlag.Short('h')
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)

	flags := config.RegisterFlags(app)
	daemonCmd := app.Command("run", "Run the exporter daemon (the default command).").Default()
	replay := registerReplay(app)
	triage := registerTriage(app)

	var exit = -1
	app.Terminate(func(code int) { exit = code })
	cmd, err := app.Parse(args)
	if exit >= 0 { // --help or --version
		return exit
	}
	if err != nil {
		fmt.Fprintf(stderr, "vram_exporter: %v (try --help)\n", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	switch cmd {
	case daemonCmd.FullCommand():
		valid, err := flags.Load()
		if err != nil {
			fmt.Fprintf(stderr, "vram_exporter: invalid configuration:\n%v\n", err)
			return 1
		}
		if flags.CheckOnly() {
			fmt.Fprintln(stdout, "configuration is valid")
			return 0
		}
		return runDaemon(ctx, valid, stdout, stderr)
	case replay.cmd.FullCommand():
		return replay.run(ctx, flags, stdout, stderr)
	case triage.cmd.FullCommand():
		return triage.run(ctx, stdout, stderr)
	}
	fmt.Fprintf(stderr, "vram_exporter: unknown command %q\n", cmd)
	return 2
}
