package main

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/alecthomas/kingpin/v2"
)

// triageCmd is the on-call subcommand.
type triageCmd struct {
	cmd *kingpin.CmdClause
}

func registerTriage(app *kingpin.Application) *triageCmd {
	return &triageCmd{cmd: app.Command("triage", "Explain a node's GPU memory in plain words (reads the daemon's JSON API).")}
}

func (c *triageCmd) run(_ context.Context, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "vram_exporter triage: not available in this build")
	return 1
}

// newAPIHandler serves /api/v1/… from the daemon's joined view.
func newAPIHandler(d *daemon) http.Handler {
	return http.NotFoundHandler()
}
