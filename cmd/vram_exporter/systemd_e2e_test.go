package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vram-exporter/vram_exporter/internal/asuser"
)

// unitFile reads deploy/systemd/vram_exporter.service into "Section.Key" → value, with
// continuation lines joined.
func unitFile(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "systemd", "vram_exporter.service"))
	if err != nil {
		t.Fatal(err)
	}
	kv := map[string]string{}
	section := ""
	for _, line := range strings.Split(strings.ReplaceAll(string(b), "\\\n", " "), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, _ := strings.Cut(line, "=")
			kv[section+"."+k] = strings.TrimSpace(v)
		}
	}
	return kv
}

// The shipped unit, reproduced: the runtime directory as systemd makes it (owner User=,
// group Group=, RuntimeDirectoryMode=), the daemon run as User= and Group= with
// SupplementaryGroups= and the unit's ExecStart flags. A non-root member of the push
// group must then connect, one outside it must not, and none may unlink the socket.
// With the unit as it was (Group=vram_exporter, 0770) no pusher could reach the socket.
func TestSystemdUnitLetsThePushGroupConnect(t *testing.T) {
	asuser.RequireRoot(t)
	unit := unitFile(t)
	const daemonUID = 65533
	// The unit names accounts the test machine does not have: give each a number.
	ids := map[string]uint32{"vram_exporter": 65533, "vram-push": 4243}
	id := func(name string) uint32 {
		n, ok := ids[name]
		if !ok {
			t.Fatalf("the unit names %q, which this test does not map to an id; add it", name)
		}
		return n
	}
	if unit["Service.User"] != "vram_exporter" {
		t.Fatalf("User=%q", unit["Service.User"])
	}
	gid := uint32(daemonUID) // systemd's default: the user's own group
	if g := unit["Service.Group"]; g != "" {
		gid = id(g)
	}
	var groups []uint32
	for _, g := range strings.Fields(unit["Service.SupplementaryGroups"]) {
		groups = append(groups, id(g))
	}
	mode, err := strconv.ParseUint(unit["Service.RuntimeDirectoryMode"], 8, 32)
	if err != nil {
		t.Fatalf("RuntimeDirectoryMode=%q: %v", unit["Service.RuntimeDirectoryMode"], err)
	}

	root := asuser.TempDir(t)
	rt := filepath.Join(root, unit["Service.RuntimeDirectory"])
	if err := os.Mkdir(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(rt, os.FileMode(mode)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(rt, daemonUID, int(gid)); err != nil {
		t.Fatal(err)
	}

	// ExecStart's flags, with the runtime directory and group names moved to the test's.
	var args []string
	pushGroup := ""
	for _, a := range strings.Fields(unit["Service.ExecStart"])[1:] {
		a = strings.ReplaceAll(a, "/run/vram_exporter", rt)
		switch {
		case strings.HasPrefix(a, "--web.listen-address="):
			a = "--web.listen-address=127.0.0.1:0"
		case strings.HasPrefix(a, "--push.socket-group="):
			pushGroup = strings.TrimPrefix(a, "--push.socket-group=")
			a = "--push.socket-group=" + strconv.Itoa(int(id(pushGroup)))
		}
		args = append(args, a)
	}
	if pushGroup == "" {
		t.Fatal("ExecStart sets no --push.socket-group")
	}
	socket := filepath.Join(rt, "push.sock")
	args = append(args, "--nvml.library-path=/nonexistent/libnvidia-ml.so.1") // the unit logs JSON
	cmd := exec.Command(asuser.Executable(t, buildBinary(t)), args...)
	cmd.SysProcAttr = asuser.As(daemonUID, gid, groups)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	listening := make(chan struct{})
	var logs []string
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			logs = append(logs, sc.Text())
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "listening" && !once {
				once = true
				close(listening)
			}
		}
		done <- cmd.Wait()
	}()
	select {
	case <-listening:
	case err := <-done:
		t.Fatalf("daemon as the unit runs it exited: %v\n%s", err, strings.Join(logs, "\n"))
	case <-time.After(60 * time.Second):
		t.Fatal("daemon did not listen within 60s")
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := <-done; err != nil {
			t.Errorf("daemon exit: %v", err)
		}
	}()

	member := []uint32{id(pushGroup)}
	if err := asuser.Do(t, asuser.Nobody, asuser.Nobody, member, asuser.Connect, socket); err != nil {
		t.Errorf("a non-root member of %s cannot connect to the socket: %v", pushGroup, err)
	}
	if err := asuser.Do(t, asuser.Nobody, asuser.Nobody, nil, asuser.Connect, socket); err == nil {
		t.Errorf("a user outside %s connected", pushGroup)
	}
	if err := asuser.Do(t, asuser.Nobody, asuser.Nobody, member, asuser.Unlink, socket); err == nil {
		t.Errorf("a member of %s unlinked the socket", pushGroup)
	}
}
