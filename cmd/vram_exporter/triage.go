package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vram-exporter/vram_exporter/triage"
)

// triageCmd is the on-call subcommand: it reads a daemon's JSON API and explains the
// node in plain words.
type triageCmd struct {
	cmd          *kingpin.CmdClause
	url          string
	watch        time.Duration
	output       string
	noColor      bool
	user         string
	passwordFile string
	caFile       string
	insecure     bool
	timeout      time.Duration
}

func registerTriage(app *kingpin.Application) *triageCmd {
	c := &triageCmd{cmd: app.Command("triage", "Explain a node's GPU memory in plain words (reads the daemon's JSON API).")}
	c.cmd.Flag("url", "Address of the vram_exporter daemon (scheme://host:port).").Default(triage.DefaultURL).StringVar(&c.url)
	c.cmd.Flag("watch", "Refresh every this long until interrupted (e.g. 5s); 0 shows the node once.").Default("0").DurationVar(&c.watch)
	c.cmd.Flag("output", "Output format: table (for people) or json (docs/triage.md).").Default("table").EnumVar(&c.output, "table", "json")
	c.cmd.Flag("no-color", "Never colour the table (it is coloured only on a terminal anyway; NO_COLOR is honoured too).").BoolVar(&c.noColor)
	c.cmd.Flag("user", "Basic-auth user, when the daemon's web config requires one.").StringVar(&c.user)
	c.cmd.Flag("password-file", "File holding the basic-auth password (not a flag, so it stays out of ps and shell history).").StringVar(&c.passwordFile)
	c.cmd.Flag("tls.ca-file", "CA bundle to verify an https --url against (default: the system's).").StringVar(&c.caFile)
	c.cmd.Flag("tls.insecure-skip-verify", "Do not verify the daemon's TLS certificate.").BoolVar(&c.insecure)
	c.cmd.Flag("timeout", "Give up on a request to the daemon after this long.").Default("10s").DurationVar(&c.timeout)
	return c
}

func (c *triageCmd) client() (*triage.Client, error) {
	cl := &triage.Client{BaseURL: c.url, User: c.user}
	if !strings.Contains(c.url, "://") {
		cl.BaseURL = "http://" + c.url
	}
	if c.passwordFile != "" {
		if c.user == "" {
			return nil, errors.New("--password-file needs --user")
		}
		b, err := os.ReadFile(c.passwordFile)
		if err != nil {
			return nil, fmt.Errorf("reading --password-file: %w", err)
		}
		cl.Password = strings.TrimRight(string(b), "\r\n")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if c.caFile != "" || c.insecure {
		cfg := &tls.Config{InsecureSkipVerify: c.insecure} //nolint:gosec // the user asked for it by flag
		if c.caFile != "" {
			pem, err := os.ReadFile(c.caFile)
			if err != nil {
				return nil, fmt.Errorf("reading --tls.ca-file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--tls.ca-file %s holds no PEM certificate", c.caFile)
			}
			cfg.RootCAs = pool
		}
		tr.TLSClientConfig = cfg
	}
	cl.HTTP = &http.Client{Transport: tr, Timeout: c.timeout}
	return cl, nil
}

func (c *triageCmd) run(ctx context.Context, stdout, stderr io.Writer) int {
	if c.watch < 0 {
		fmt.Fprintln(stderr, "vram_exporter triage: --watch must not be negative")
		return 2
	}
	cl, err := c.client()
	if err != nil {
		fmt.Fprintf(stderr, "vram_exporter triage: %v\n", err)
		return 1
	}
	color := !c.noColor && c.output == "table" && os.Getenv("NO_COLOR") == "" && isTerminal(stdout)
	once := func() error {
		s, err := cl.Fetch(ctx)
		if err != nil {
			return err
		}
		r := triage.Build(s)
		if c.output == "json" {
			return triage.WriteJSON(stdout, r)
		}
		if c.watch > 0 && color {
			fmt.Fprint(stdout, "\x1b[H\x1b[2J") // clear the screen between refreshes
		}
		return triage.WriteTable(stdout, r, color)
	}
	if c.watch == 0 {
		if err := once(); err != nil {
			fmt.Fprintf(stderr, "vram_exporter triage: %v\n", err)
			return 1
		}
		return 0
	}
	t := time.NewTicker(c.watch)
	defer t.Stop()
	for {
		// In watch mode an error is shown and retried: the daemon may be restarting.
		if err := once(); err != nil && ctx.Err() == nil {
			fmt.Fprintf(stderr, "vram_exporter triage: %v (retrying every %s)\n", err, c.watch)
		}
		select {
		case <-ctx.Done():
			return 0
		case <-t.C:
		}
	}
}

// isTerminal reports whether w is a character device (a terminal), without a
// dependency: colour codes in a file or a pipe are noise.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
