// Package asuser lets tests show what an unprivileged local user can and cannot do to
// the daemon's files: connect to the push socket, unlink or replace it, create files
// beside it. It re-runs the test binary as that user (a process cannot drop to another
// uid and come back), so it needs root, which CI has; elsewhere the tests skip, or fail
// when VRAM_REQUIRE_ALL is set.
package asuser

import (
	"errors"
	"fmt"
	"github.com/vram-exporter/vram_exporter/internal/testenv"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Nobody is the unprivileged uid and gid the tests act as: nothing on the machine
// belongs to it, so what it can do comes only from the modes and groups under test.
const Nobody = 65534

// Actions Do can perform on a path.
const (
	Connect = "connect" // connect to a SOCK_SEQPACKET socket
	Unlink  = "unlink"  // remove the file
	Create  = "create"  // create a regular file
)

const (
	envAction = "VRAM_ASUSER_ACTION"
	envPath   = "VRAM_ASUSER_PATH"
)

// Main performs the action and exits when the test binary was started by Do; otherwise
// it returns at once. Call it first in TestMain.
func Main() {
	action := os.Getenv(envAction)
	if action == "" {
		return
	}
	if err := perform(action, os.Getenv(envPath)); err != nil {
		fmt.Fprint(os.Stderr, err)
		os.Exit(3)
	}
	os.Exit(0)
}

func perform(action, path string) error {
	switch action {
	case Connect:
		c, err := net.Dial("unixpacket", path)
		if err != nil {
			return err
		}
		return c.Close()
	case Unlink:
		return os.Remove(path)
	case Create:
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	}
	return fmt.Errorf("asuser: unknown action %q", action)
}

// RequireRoot skips t unless the test runs as root (failing instead under
// VRAM_REQUIRE_ALL, so CI cannot silently lose the test).
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	testenv.Unavailable(t, "acting as another user needs root")
}

// TempDir is t.TempDir made traversable by every user (t.TempDir and its parent are
// 0700), so modes below it are what decides.
func TempDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Executable copies the file at path into a directory every user can reach, so it can
// be run as another user.
func Executable(t testing.TB, path string) string {
	t.Helper()
	src, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out := filepath.Join(TempDir(t), filepath.Base(path))
	dst, err := os.OpenFile(out, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Do performs action on path as uid and gid with the supplementary groups, and returns
// what the action returned: nil, or an error whose text is the child's.
func Do(t testing.TB, uid, gid uint32, groups []uint32, action, path string) error {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Executable(t, self), "-test.run=^$")
	cmd.Env = append(os.Environ(), envAction+"="+action, envPath+"="+path)
	cmd.SysProcAttr = As(uid, gid, groups)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.ExitCode() == 3:
		return errors.New(stderr.String())
	}
	t.Fatalf("running %s as uid %d: %v\n%s", action, uid, err, stderr.String())
	return nil
}

// As is the SysProcAttr that starts a process as uid and gid with exactly groups.
func As(uid, gid uint32, groups []uint32) *syscall.SysProcAttr {
	if groups == nil {
		groups = []uint32{}
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: groups}}
}
