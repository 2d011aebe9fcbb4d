package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"
)

// defaultCommandUsage follows kingpin's usage on `vram_exporter --help`: the daemon's
// flags belong to the run command, but the documented invocations give them without
// naming it, so the top-level help lists them too.
const defaultCommandUsage = `{{if not .Context.SelectedCommand -}}
{{range .App.Commands -}}
{{if .Default -}}
Flags of {{.FullCommand}}, the default command (given with or without "{{.FullCommand}}"):
{{.Flags|FlagsToTwoColumns|FormatTwoColumns}}
{{end -}}
{{end -}}
{{end -}}
`

// run parses args and runs the chosen command; it returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	app := kingpin.New("vram_exporter", "Prometheus exporter that explains GPU memory: the driver's view (NVML) joined with what serving processes' allocators push.")
	app.Version(version.Print("vram_exporter"))
	app.HelpFlag.Short('h')
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	app.UsageTemplate(kingpin.DefaultUsageTemplate + defaultCommandUsage)

	daemon := registerDaemon(app)
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
	case daemon.cmd.FullCommand():
		return daemon.run(ctx, stdout, stderr)
	case replay.cmd.FullCommand():
		return replay.run(ctx, stdout, stderr)
	case triage.cmd.FullCommand():
		return triage.run(ctx, stdout, stderr)
	}
	fmt.Fprintf(stderr, "vram_exporter: unknown command %q\n", cmd)
	return 2
}
