package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// --web.listen-address repeats (exporter-toolkit's kingpinflag): each address serves
// the same handlers.
func TestTwoListenAddressesBothServe(t *testing.T) {
	d := startDaemon(t, "--web.listen-address=127.0.0.1:0")
	// startDaemon returns at the first "listening" line; the second follows it, so wait
	// for it (bounded) rather than read the log at once.
	var addrs []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		addrs = addrs[:0]
		for _, l := range d.logLines() {
			if l["msg"] == "listening" {
				addrs = append(addrs, l["address"].(string))
			}
		}
		if len(addrs) >= 2 || time.Now().After(deadline) {
			break
		}
	}
	if len(addrs) != 2 || addrs[0] == addrs[1] {
		t.Fatalf("listening on %v, want two addresses", addrs)
	}
	for _, a := range addrs {
		body := httpGet(t, "http://"+a+"/metrics")
		if !strings.Contains(body, "vram_nvml_up ") {
			t.Errorf("%s/metrics lacks vram_nvml_up:\n%.300s", a, body)
		}
	}
	d.stop()
}

func httpGet(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return string(b)
}

// activated runs the daemon the way systemd runs a socket-activated service: the
// listening socket inherited as fd 3, LISTEN_FDS=1 and LISTEN_PID set to the daemon's own
// pid (the shell's, which exec keeps).
type activated struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs []map[string]any
	done chan error
}

func startActivated(t *testing.T, inherit *os.File, args ...string) *activated {
	t.Helper()
	dir := t.TempDir()
	base := []string{"--log.format=json", "--push.socket=" + filepath.Join(dir, "push.sock"),
		"--nvml.library-path=" + filepath.Join(dir, "no-such-libnvidia-ml.so.1")}
	script := `export LISTEN_PID=$$ LISTEN_FDS=1; exec "$0" "$@"`
	if inherit == nil {
		script = `unset LISTEN_PID LISTEN_FDS; exec "$0" "$@"`
	}
	a := &activated{done: make(chan error, 1)}
	a.cmd = exec.Command("/bin/sh", append([]string{"-c", script, buildBinary(t)}, append(base, args...)...)...)
	if inherit != nil {
		a.cmd.ExtraFiles = []*os.File{inherit}
	}
	stderr, err := a.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			m := logLine(sc.Bytes())
			a.mu.Lock()
			a.logs = append(a.logs, m)
			a.mu.Unlock()
		}
		a.done <- a.cmd.Wait()
	}()
	t.Cleanup(func() {
		if a.cmd.ProcessState == nil {
			_ = a.cmd.Process.Kill()
			<-a.done
		}
	})
	return a
}

// waitLog waits for a log line with msg, or for the daemon to exit.
func (a *activated) waitLog(t *testing.T, msg string) (map[string]any, error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		a.mu.Lock()
		for _, l := range a.logs {
			if l["msg"] == msg {
				a.mu.Unlock()
				return l, nil
			}
		}
		a.mu.Unlock()
		select {
		case err := <-a.done:
			a.done <- err
			return nil, err
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no %q log line within 60s", msg)
	return nil, nil
}

func TestSystemdSocketActivation(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := startActivated(t, f, "--web.systemd-socket")
	l, err := a.waitLog(t, "listening")
	if err != nil {
		t.Fatalf("daemon exited before listening: %v; logs %v", err, a.logs)
	}
	if l["address"] != ln.Addr().String() || l["systemd_socket"] != true {
		t.Errorf("listening line %v, want the inherited socket %s", l, ln.Addr())
	}
	_ = ln.Close() // the daemon holds its own copy of the socket
	_ = f.Close()
	if body := httpGet(t, "http://"+l["address"].(string)+"/metrics"); !strings.Contains(body, "vram_nvml_up ") {
		t.Errorf("/metrics through the activated socket lacks vram_nvml_up:\n%.300s", body)
	}
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-a.done; err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}

// Without sockets from systemd the flag fails the start and says what to do.
func TestSystemdSocketWithoutSocketsFails(t *testing.T) {
	a := startActivated(t, nil, "--web.systemd-socket")
	select {
	case err := <-a.done:
		if err == nil {
			t.Fatal("daemon started with --web.systemd-socket and no sockets from systemd")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("daemon did not exit")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	found := false
	for _, l := range a.logs {
		if strings.Contains(fmt.Sprint(l["error"]), "systemd passed no listening socket") {
			found = true
		}
	}
	if !found {
		t.Errorf("no error saying systemd passed no socket: %v", a.logs)
	}
}
