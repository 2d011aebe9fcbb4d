package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vram-exporter/vram_exporter/memlimit"
)

// The end-to-end tests build the real binary, run it as a separate process without a
// GPU, talk to it over HTTP and the push socket, and stop it with SIGTERM.

// A build of the daemon for the end-to-end tests, made once per test binary.
type daemonBuild struct {
	once sync.Once
	path string
	err  error
}

var raceBuild, plainBuild daemonBuild

// build makes the binary name in buildDir (with the extra go build flags) the first time.
func (d *daemonBuild) build(t *testing.T, name string, flags ...string) string {
	t.Helper()
	d.once.Do(func() {
		d.path = filepath.Join(buildDir, name)
		cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", d.path, ".")...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "CGO_CFLAGS=-Wno-deprecated-declarations")
		if out, err := cmd.CombinedOutput(); err != nil {
			d.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if d.err != nil {
		t.Fatal(d.err)
	}
	return d.path
}

// buildBinary builds the daemon with the race detector, as the tests run.
func buildBinary(t *testing.T) string { return raceBuild.build(t, "vram_exporter", "-race") }

type daemonProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	socket string
	mu     sync.Mutex
	logs   []map[string]any
	done   chan error
}

// startDaemon runs the binary with NVML pointed at a library that does not exist, so the
// test behaves the same on a GPU machine and off it.
func startDaemon(t *testing.T, extra ...string) *daemonProc {
	t.Helper()
	return launch(t, func(dir, socket string) []string {
		return []string{
			"--log.level=debug",
			"--nvml.library-path=" + filepath.Join(dir, "no-such-libnvidia-ml.so.1"),
			"--nvml.poll-interval=100ms",
			"--push.ttl=1s",
		}
	}, extra...)
}

// launch starts the binary on a free loopback port with JSON logs and a push socket in
// a temporary directory, plus the flags base returns (kingpin refuses a repeated flag,
// so callers choose their base set) and extra, and waits until it listens.
func launch(t *testing.T, base func(dir, socket string) []string, extra ...string) *daemonProc {
	t.Helper()
	return launchBinary(t, buildBinary(t), base, extra...)
}

// launchBinary is launch for a binary built some other way (without cgo, say).
func launchBinary(t *testing.T, bin string, base func(dir, socket string) []string, extra ...string) *daemonProc {
	t.Helper()
	dir := t.TempDir()
	d := &daemonProc{t: t, socket: filepath.Join(dir, "run", "push.sock"), done: make(chan error, 1)}
	args := append([]string{"--web.listen-address=127.0.0.1:0", "--log.format=json", "--push.socket=" + d.socket}, base(dir, d.socket)...)
	d.cmd = exec.Command(bin, append(args, extra...)...)
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			m := logLine(sc.Bytes())
			d.mu.Lock()
			d.logs = append(d.logs, m)
			d.mu.Unlock()
			if m["msg"] == "listening" {
				addrc <- m["address"].(string)
			}
		}
	}()
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			_ = d.cmd.Process.Kill()
			<-d.done
		}
	})
	select {
	case d.addr = <-addrc:
	case err := <-d.done:
		t.Fatalf("daemon exited before listening: %v\nlogs: %v", err, d.logLines())
	case <-time.After(60 * time.Second):
		t.Fatalf("daemon did not start listening; logs: %v", d.logLines())
	}
	return d
}

func (d *daemonProc) logLines() []map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]map[string]any(nil), d.logs...)
}

func (d *daemonProc) get(path string) (int, string) {
	d.t.Helper()
	resp, err := http.Get("http://" + d.addr + path)
	if err != nil {
		d.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		d.t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func (d *daemonProc) metrics() string {
	code, body := d.get("/metrics")
	if code != 200 {
		d.t.Fatalf("/metrics answered %d: %s", code, body)
	}
	return body
}

// waitMetrics scrapes until cond holds; the deadline is a safety net, not a timing
// assumption (the daemon joins every 100ms).
func (d *daemonProc) waitMetrics(what string, cond func(string) bool) string {
	d.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		body := d.metrics()
		if cond(body) {
			return body
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("timed out waiting for %s; last /metrics:\n%s", what, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (d *daemonProc) stop() {
	d.t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		d.t.Fatal(err)
	}
	select {
	case err := <-d.done:
		if err != nil {
			d.t.Fatalf("daemon exit after SIGTERM: %v (want exit 0); logs: %v", err, d.logLines())
		}
	case <-time.After(30 * time.Second):
		d.t.Fatal("daemon did not exit within 30s of SIGTERM")
	}
}

func metricValue(body, series string) (string, bool) {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func TestDaemonWithoutNVMLServesMetricsAndStopsCleanly(t *testing.T) {
	d := startDaemon(t)
	body := d.waitMetrics("vram_nvml_up", func(b string) bool { return strings.Contains(b, "vram_nvml_up ") })
	if v, _ := metricValue(body, "vram_nvml_up"); v != "0" {
		t.Errorf("vram_nvml_up = %q, want 0 without NVML", v)
	}
	for _, want := range []string{
		"# HELP vram_nvml_up ", "vram_exporter_build_info{", `vram_collector_success{collector="nvml"} 0`,
		`vram_push_connections 0`, `vram_push_rejected_total{reason="invalid_json"} 0`, "vram_demo_mode 0",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// The small heap's GOGC (memlimit.SetGCPercent), or the operator's from the
	// environment the daemon inherits.
	wantGC := strconv.Itoa(memlimit.GCPercent)
	if env := os.Getenv("GOGC"); env != "" {
		wantGC = env
	}
	if v, _ := metricValue(body, "go_gc_gogc_percent"); v != wantGC {
		t.Errorf("go_gc_gogc_percent = %q, want %s", v, wantGC)
	}
	if code, _ := d.get("/"); code != 200 {
		t.Errorf("landing page answered %d", code)
	}
	if code, _ := d.get("/-/healthy"); code != 200 {
		t.Errorf("/-/healthy answered %d", code)
	}
	if _, err := os.Stat(d.socket); err != nil {
		t.Errorf("push socket not created: %v", err)
	}
	d.stop()
	if _, err := os.Stat(d.socket); !os.IsNotExist(err) {
		t.Errorf("push socket left behind after SIGTERM: %v", err)
	}
	warns := 0
	for _, l := range d.logLines() {
		if l["level"] == "warn" && strings.Contains(fmt.Sprint(l["msg"]), "NVML is not available") {
			warns++
		}
	}
	if warns != 1 {
		t.Errorf("want exactly one warn line about NVML being unavailable, got %d: %v", warns, d.logLines())
	}
}

func TestConfigCheck(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yml")
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(good, []byte("nvml:\n  poll_interval: 2s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("nvml:\n  poll_intervall: 2s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--config.file="+good, "--config.check").CombinedOutput()
	if err != nil {
		t.Fatalf("--config.check on a good file: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "--config.file="+bad, "--config.check").CombinedOutput()
	var ee *exec.ExitError
	if err == nil || !errorsAs(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("--config.check on a bad file: err=%v, want exit 1\n%s", err, out)
	}
	if !strings.Contains(string(out), `poll_intervall`) || !strings.Contains(string(out), "line 2") {
		t.Errorf("error should name the unknown key and its line, got:\n%s", out)
	}
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

// A second daemon pointed at a live daemon's socket must not steal it: it exits 1 with a
// message that says what to do, and the first keeps serving.
func TestSecondDaemonDoesNotStealTheSocket(t *testing.T) {
	first := startDaemon(t)
	cmd := exec.Command(buildBinary(t), "--web.listen-address=127.0.0.1:0", "--push.socket="+first.socket,
		"--nvml.library-path=/nonexistent/libnvidia-ml.so.1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("second daemon: err=%v, want exit 1\n%s", err, out)
	}
	if !strings.Contains(string(out), "another vram_exporter is already serving") {
		t.Errorf("second daemon's error does not say why:\n%s", out)
	}
	if _, err := os.Stat(first.socket); err != nil {
		t.Fatalf("the first daemon's socket is gone: %v", err)
	}
	first.waitMetrics("first daemon still serving", func(string) bool { return true })
	first.stop()
}

// A busy HTTP port is a clear error (exit 1) and leaves no push socket behind.
func TestBusyPortFailsCleanly(t *testing.T) {
	first := startDaemon(t)
	socket := filepath.Join(t.TempDir(), "push.sock")
	out, err := exec.Command(buildBinary(t), "--web.listen-address="+first.addr, "--push.socket="+socket,
		"--nvml.library-path=/nonexistent/libnvidia-ml.so.1").CombinedOutput()
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("daemon on a busy port: err=%v, want exit 1\n%s", err, out)
	}
	if !strings.Contains(string(out), "cannot listen on --web.listen-address") {
		t.Errorf("the error does not name the flag:\n%s", out)
	}
	if _, err := os.Stat(socket); !os.IsNotExist(err) {
		t.Errorf("push socket left behind after a failed start: %v", err)
	}
	first.stop()
}

// logLine decodes one line of the daemon's JSON log; a line that is not JSON (a panic,
// a library writing to stderr) is kept whole under "raw".
func logLine(b []byte) map[string]any {
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		m = map[string]any{"raw": string(b)}
	}
	return m
}
