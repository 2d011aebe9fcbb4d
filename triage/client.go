// Package triage is the on-call command: it reads a daemon's JSON API (never its
// internals), ranks processes by risk and explains each in one line of plain words,
// as a table for people or a stable JSON document (docs/triage.md) for scripts.
package triage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/vram-exporter/vram_exporter/api"
)

// DefaultURL is the local daemon at its default listen address.
const DefaultURL = "http://localhost:10090"

// Client reads one daemon's API.
type Client struct {
	// BaseURL is scheme://host:port of the daemon, without the /api/v1 path.
	BaseURL string
	// HTTP is the client to use (TLS settings, timeout); nil means http.DefaultClient.
	HTTP *http.Client
	// User and Password are sent as basic auth when User is set.
	User, Password string
}

// Snapshot is what one triage reads from a daemon.
type Snapshot struct {
	Status    api.Status
	GPUs      api.GPUs
	Processes api.Processes
}

// ErrUnreachable matches (errors.Is) a failure to connect to the daemon at all.
var ErrUnreachable = errors.New("daemon unreachable")

// UnreachableError is a failure to connect to the daemon.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach vram_exporter at %s: %v — is the daemon running? set --url", e.URL, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnreachable) true.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// StatusError is an HTTP error answer from the daemon.
type StatusError struct {
	URL     string
	Code    int
	Status  string // e.g. "401 Unauthorized"
	Excerpt string // the start of the body
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("vram_exporter at %s answered %s", Escape(e.URL), Escape(e.Status))
	if e.Excerpt != "" {
		msg += ": " + Escape(e.Excerpt) // a hostile server's body must not drive the terminal
	}
	switch e.Code {
	case http.StatusUnauthorized:
		msg += " — the daemon requires basic auth: set --user and --password-file"
	case http.StatusNotFound:
		msg += " — is --url a vram_exporter with the JSON API (/api/v1)?"
	}
	return msg
}

// Fetch reads status, GPUs and processes, in that order.
func (c *Client) Fetch(ctx context.Context) (Snapshot, error) {
	var s Snapshot
	if err := c.get(ctx, api.PathStatus, &s.Status); err != nil {
		return s, err
	}
	if err := c.get(ctx, api.PathGPUs, &s.GPUs); err != nil {
		return s, err
	}
	if err := c.get(ctx, api.PathProcesses, &s.Processes); err != nil {
		return s, err
	}
	return s, nil
}

const excerptBytes = 300

func (c *Client) get(ctx context.Context, path string, into any) error {
	base := strings.TrimRight(c.BaseURL, "/")
	url := base + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("invalid --url %q: %w", c.BaseURL, err)
	}
	req.Header.Set("Accept", "application/json")
	if c.User != "" {
		req.SetBasicAuth(c.User, c.Password)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &UnreachableError{URL: base, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return &StatusError{URL: url, Code: resp.StatusCode, Status: resp.Status, Excerpt: excerpt(b)}
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(into); err != nil {
		return fmt.Errorf("vram_exporter at %s sent a response triage cannot read (%w); is --url a vram_exporter?", url, err)
	}
	return nil
}

// excerpt is the body's message: the "error" field of a JSON error, else the first
// bytes of the body on one line.
func excerpt(b []byte) string {
	var e api.Error
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		return e.Error
	}
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > excerptBytes {
		s = s[:excerptBytes]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}
