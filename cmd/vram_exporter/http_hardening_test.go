package main

import (
	"bufio"
	"encoding/json"
	"errors"

	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/api"
	"github.com/vram-exporter/vram_exporter/config"
)

// A slow reader must not hold a connection for longer than the write timeout: the
// handler's write fails and the connection is closed, however little the client reads.
func TestHTTPServerCutsASlowReader(t *testing.T) {
	w := config.Default().Web
	w.WriteTimeout = time.Second
	wrote := make(chan error, 1)
	srv := newHTTPServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		chunk := make([]byte, 1<<20)
		for range 256 { // far more than socket buffers hold
			if _, err := rw.Write(chunk); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}), w)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096) // keep what the kernel absorbs for the client small
	}
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-wrote:
		if err == nil {
			t.Fatal("the handler wrote 256 MiB to a client that reads nothing")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a client that reads nothing held the handler for 30s despite a 1s write timeout")
	}
}

// Headers past web.max_header_bytes are refused, not buffered.
func TestHTTPServerRefusesHugeHeaders(t *testing.T) {
	w := config.Default().Web
	w.MaxHeaderBytes = 4096
	srv := newHTTPServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), w)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 64<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("64 KiB of headers answered %d, want 431", resp.StatusCode)
	}
}

// Shutdown with a request that never finishes still returns, within the grace period
// plus the time Close takes, and the connection is closed.
func TestShutdownHTTPClosesStuckRequests(t *testing.T) {
	srv := newHTTPServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // waits for a body the client never sends
	}), config.Default().Web)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	c := holdRequest(t, ln.Addr().String())
	done := make(chan struct{})
	go func() { shutdownHTTP(srv, 50*time.Millisecond, zap.NewNop()); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("shutdownHTTP did not return with a stuck request")
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("the stuck connection was not closed: %v", err)
	}
}

// holdRequest starts a request whose body never comes: the server is mid-request until
// its read timeout.
func holdRequest(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "POST /-/healthy HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc"); err != nil {
		t.Fatal(err)
	}
	return c
}

// SIGTERM with a client stuck mid-request: the daemon closes it after the grace period
// and exits 0 with its socket removed (it exited 1 after 5 s before).
//
// Whether the request is mid-request when SIGTERM comes is the scheduler's: a later
// connection answered says the server accepted the stuck one, not that its handler began
// (net/http answers a request it first reads during shutdown without waiting for its
// body, and closes the connection: seen once in a full run of the package under -race,
// not in 130 runs of this test alone), or closes it unanswered as the process exits.
// So an attempt ends any of these ways, each checked: the grace period's log line, or
// the stuck client answered and its connection closed, or closed; until an attempt
// takes the first way, at most five.
func TestDaemonStopsCleanlyWithAStuckClient(t *testing.T) {
	const attempts = 5
	for i := 1; i <= attempts; i++ {
		d := startDaemon(t)
		c := holdRequest(t, d.addr)
		// The server accepts in the order connections were made, so once a later one is
		// answered the stuck one is the server's.
		if code, _ := d.get("/-/healthy"); code != 200 {
			t.Fatalf("/-/healthy answered %d", code)
		}
		d.stop()
		if _, err := os.Stat(d.socket); !os.IsNotExist(err) {
			t.Errorf("push socket left behind: %v", err)
		}
		if countLogs(d.logLines(), func(l map[string]any) bool { return mentions(l, "shutdown grace period") }) == 1 {
			return
		}
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		b, err := io.ReadAll(c)
		switch {
		case err == nil && len(b) == 0:
			// Closed, unanswered: seen once in a CI run of the package under -race
			// (round 23), the daemon logging "stopped cleanly" 2 ms after "shutting
			// down": net/http's Shutdown found nothing in flight to wait for, and the
			// connection ended as the process exited. The client sees it end, as with
			// any server that stops; the daemon held nothing open.
			t.Logf("attempt %d: the stuck connection was closed unanswered as the daemon exited; again", i)
		case err != nil || !strings.HasPrefix(string(b), "HTTP/1.1 "):
			t.Fatalf("attempt %d: no log line says the stuck connection was closed, and the stuck request was neither answered nor closed (%q, %v): %v", i, b, err, d.logLines())
		default:
			t.Logf("attempt %d: the stuck request was read only after SIGTERM, answered and closed; again", i)
		}
	}
	t.Errorf("in %d attempts the stuck request was never mid-request at SIGTERM: the test no longer shows the grace period", attempts)
}

// Idle keep-alive connections are closed after web.idle_timeout instead of being held
// for ever: 300 of them were all held before.
func TestDaemonClosesIdleKeepAliveConnections(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(cfg, []byte("web:\n  idle_timeout: 1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "--config.file="+cfg)
	const n = 300
	conns := make([]*bufio.Reader, n)
	for i := range conns {
		c, err := net.Dial("tcp", d.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
		conns[i] = br
	}
	start := time.Now()
	for i, br := range conns {
		if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
			t.Fatalf("idle keep-alive connection %d: read %v, want EOF (closed by the daemon) well within 60s", i, err)
		}
	}
	t.Logf("%d idle keep-alive connections closed %v after the last request", n, time.Since(start).Round(time.Millisecond))
	d.stop()
}

// SIGHUP is logged and ignored: the daemon keeps serving and its socket, and a later
// SIGTERM still stops it cleanly. (Its default action killed the daemon and left the
// socket behind.)
func TestDaemonSurvivesSIGHUP(t *testing.T) {
	d := startDaemon(t)
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for countLogs(d.logLines(), func(l map[string]any) bool { return mentions(l, "SIGHUP received") }) == 0 {
		select {
		case err := <-d.done:
			t.Fatalf("daemon exited on SIGHUP: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no SIGHUP log line within 30s: %v", d.logLines())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, _ := d.get("/-/healthy"); code != 200 {
		t.Errorf("/-/healthy after SIGHUP answered %d", code)
	}
	if _, err := os.Stat(d.socket); err != nil {
		t.Errorf("push socket gone after SIGHUP: %v", err)
	}
	d.stop()
	if _, err := os.Stat(d.socket); !os.IsNotExist(err) {
		t.Errorf("push socket left behind: %v", err)
	}
}

// The API's in-flight refusals are a counter on /metrics with HELP.
func TestAPIRejectionsAreExported(t *testing.T) {
	d := startDaemon(t)
	body := d.metrics()
	for _, want := range []string{"# HELP vram_api_requests_rejected_total ", "# TYPE vram_api_requests_rejected_total counter", "vram_api_requests_rejected_total 0"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	d.stop()
}

// The real binary publishes command lines only with --collector.process-cmdline, in
// /metrics and the API alike (demo mode's processes have command lines).
func TestDaemonPublishesCmdlineOnlyWhenAsked(t *testing.T) {
	cmdline := regexp.MustCompile(`vram_process_info\{cmdline="([^"]*)"`)
	for _, on := range []bool{false, true} {
		var extra []string
		if on {
			extra = append(extra, "--collector.process-cmdline")
		}
		d := startDemoDaemon(t, extra...)
		body := d.waitMetrics("vram_process_info", func(b string) bool { return cmdline.MatchString(b) })
		for _, m := range cmdline.FindAllStringSubmatch(body, -1) {
			if (m[1] != "") != on {
				t.Errorf("--collector.process-cmdline=%v: %s", on, m[0])
			}
		}
		_, body = d.get("/api/v1/processes")
		var ps api.Processes
		if err := json.Unmarshal([]byte(body), &ps); err != nil {
			t.Fatal(err)
		}
		facts := 0
		for _, p := range ps.Processes {
			if p.Facts != nil {
				facts++
				if (p.Facts.Cmdline != "") != on {
					t.Errorf("--collector.process-cmdline=%v: the API gives pid %d cmdline %q", on, p.PID, p.Facts.Cmdline)
				}
			}
		}
		if facts == 0 {
			t.Errorf("the API lists no process with facts: %.300s", body)
		}
		d.stop()
	}
}
