package main

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vram-exporter/vram_exporter/config"
)

// Demo mode without --push.socket listens on a private socket in a new temporary
// directory, never on the real default (it opened /run/vram_exporter/push.sock, mixing
// real pushes into the simulated node and taking the socket from a real daemon), and
// removes it at exit.
func TestDemoUsesAPrivatePushSocket(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command(buildBinary(t), "--demo", "--demo.speed="+demoSpeed, "--web.listen-address=127.0.0.1:0", "--log.format=json")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	paths := make(chan string, 1)
	var logs []string
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs = append(logs, sc.Text())
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "push socket listening" {
				paths <- m["path"].(string)
			}
		}
		done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
	})
	var path string
	select {
	case path = <-paths:
	case err := <-done:
		t.Fatalf("demo daemon exited before listening on a push socket: %v\n%s", err, strings.Join(logs, "\n"))
	case <-time.After(60 * time.Second):
		t.Fatal("demo daemon did not log its push socket")
	}
	if path == config.Default().Push.Socket || !strings.HasPrefix(path, tmp+string(filepath.Separator)) {
		t.Fatalf("demo push socket %s, want a private one under the temporary directory %s", path, tmp)
	}
	c, err := net.Dial("unixpacket", path)
	if err != nil {
		t.Fatalf("the private socket does not accept a client: %v", err)
	}
	_ = c.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("demo daemon exit: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("demo daemon did not stop within 30s of SIGTERM")
	}
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Errorf("the private socket directory %s is left behind: %v", filepath.Dir(path), err)
	}
}

// A socket the user names is used in demo mode too.
func TestDemoUsesANamedPushSocket(t *testing.T) {
	d := startDemoDaemon(t)
	got := ""
	for _, l := range d.logLines() {
		if l["msg"] == "push socket listening" {
			got, _ = l["path"].(string)
		}
	}
	if got != d.socket {
		t.Errorf("demo mode with --push.socket=%s listens on %q", d.socket, got)
	}
	d.stop()
}
