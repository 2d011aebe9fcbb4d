package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// countLogs counts the log lines for which match holds.
func countLogs(lines []map[string]any, match func(map[string]any) bool) int {
	n := 0
	for _, l := range lines {
		if match(l) {
			n++
		}
	}
	return n
}

// mentions reports whether any field of a log line contains s.
func mentions(l map[string]any, s string) bool {
	for _, v := range l {
		if strings.Contains(fmt.Sprint(v), s) {
			return true
		}
	}
	return false
}

// A start says each thing once: the listen address on the "listening" line only (the
// exporter-toolkit would repeat it twice), the push socket on the push server's line only.
func TestStartLogsEachThingOnce(t *testing.T) {
	d := startDaemon(t)
	d.waitMetrics("a scrape", func(string) bool { return true })
	d.stop()
	logs := d.logLines()
	if n := countLogs(logs, func(l map[string]any) bool { return mentions(l, d.addr) }); n != 1 {
		t.Errorf("%d log lines name the listen address %s, want 1: %v", n, d.addr, logs)
	}
	if n := countLogs(logs, func(l map[string]any) bool { return l["msg"] == "push socket listening" }); n != 1 {
		t.Errorf(`%d "push socket listening" lines, want 1: %v`, n, logs)
	}
	if n := countLogs(logs, func(l map[string]any) bool { return mentions(l, d.socket) }); n != 1 {
		t.Errorf("%d log lines name the push socket %s, want 1: %v", n, d.socket, logs)
	}
	// What only the toolkit knows stays.
	if n := countLogs(logs, func(l map[string]any) bool { return l["msg"] == "TLS is disabled." }); n != 1 {
		t.Errorf(`%d "TLS is disabled." lines, want 1: %v`, n, logs)
	}
}

// The binary built without cgo (CGO_ENABLED=0, as for macOS) starts and serves: NVML is
// not built in, which /metrics and one log line say; on Linux the push socket still
// works; demo mode, whose fake NVML is cgo too, refuses to start and says why.
func TestCgoFreeBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "vram_exporter")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}

	d := launchBinary(t, bin, func(string, string) []string {
		return []string{"--nvml.poll-interval=100ms", "--push.ttl=1s"}
	})
	body := d.waitMetrics("the not-built-in Init counted", func(b string) bool {
		return strings.Contains(b, `vram_nvml_errors_total{call="Init",error="not_built_in"} 1`)
	})
	if v, _ := metricValue(body, "vram_nvml_up"); v != "0" {
		t.Errorf("vram_nvml_up = %q, want 0", v)
	}
	if _, err := os.Stat(d.socket); err != nil {
		t.Errorf("push socket not created by the cgo-free binary on Linux: %v", err)
	}
	sendPush(t, d.socket)
	d.waitMetrics("the pushed message", func(b string) bool { return strings.Contains(b, "vram_push_messages_total 1\n") })
	d.stop()
	notBuiltIn := func(l map[string]any) bool {
		return l["level"] == "warn" && strings.Contains(fmt.Sprint(l["msg"]), "NVML is not built in") &&
			strings.Contains(fmt.Sprint(l["error"]), "CGO_ENABLED=0")
	}
	if n := countLogs(d.logLines(), notBuiltIn); n != 1 {
		t.Errorf("want one warn line saying NVML is not built in, got %d: %v", n, d.logLines())
	}

	out, err := exec.Command(bin, "--demo", "--web.listen-address=127.0.0.1:0", "--push.socket=").CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "demo mode: NVML is not built into this binary") {
		t.Errorf("--demo without cgo: exit %d, want 1 saying demo mode is not built in:\n%s", code, out)
	}
}

// sendPush sends one valid, empty message from this process, as a client would.
func sendPush(t *testing.T, socket string) {
	t.Helper()
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: socket, Net: "unixpacket"})
	if err != nil {
		t.Fatalf("connecting to the push socket: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Write([]byte(`{"v": 1, "runtime": "torch", "devices": []}`)); err != nil {
		t.Fatalf("pushing: %v", err)
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if err == nil {
		return 0
	}
	if errorsAs(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}
