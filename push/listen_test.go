//go:build linux

package push

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vram-exporter/vram_exporter/internal/asuser"
)

func TestMain(m *testing.M) {
	asuser.Main()
	pushHelperMain()
	os.Exit(m.Run())
}

// The tests that need a second process (another PID on the socket) run this test binary
// again with one of these set; it then sends one message and exits instead of testing.
const (
	helperSocketEnv = "PUSH_HELPER_SOCKET" // connect to this path and send
	helperFDEnv     = "PUSH_HELPER_FD"     // send on this inherited descriptor
)

func pushHelperMain() {
	send := func() error {
		if path := os.Getenv(helperSocketEnv); path != "" {
			c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
			if err != nil {
				return err
			}
			defer c.Close()
			// The message is queued ahead of the close, so the daemon judges it before
			// it sees this process go.
			_, err = c.Write([]byte(withLabel("child")))
			return err
		}
		if fd := os.Getenv(helperFDEnv); fd != "" {
			n, err := strconv.Atoi(fd)
			if err != nil {
				return err
			}
			_, err = unix.Write(n, []byte(withLabel("child")))
			return err
		}
		return errNotHelper
	}
	switch err := send(); {
	case errors.Is(err, errNotHelper):
		return
	case err != nil:
		fmt.Fprintln(os.Stderr, "push test helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

var errNotHelper = errors.New("not a helper process")

// pushGID is the socket group of the tests that act as a pusher: a gid no account
// has, so only the supplementary group given to the pusher grants anything.
const pushGID = 4242

// A member of the socket's group may connect, and nothing more: not unlink the socket
// (then bind its own and collect every sender's stats), not create files beside it.
// Before, the directory the daemon made had the group write bit of the socket's mode.
func TestPusherCannotReplaceTheSocket(t *testing.T) {
	asuser.RequireRoot(t)
	dir := filepath.Join(asuser.TempDir(t), "run")
	path := filepath.Join(dir, "push.sock")
	srv := newListenServer(t, ServerOptions{Path: path, Mode: 0o660, Group: "4242"})
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	before, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	member := []uint32{pushGID}
	if err := asuser.Do(t, asuser.Nobody, asuser.Nobody, member, asuser.Connect, path); err != nil {
		t.Errorf("a member of the socket group cannot connect: %v", err)
	}
	if err := asuser.Do(t, asuser.Nobody, asuser.Nobody, nil, asuser.Connect, path); err == nil {
		t.Error("a user outside the socket group connected")
	}
	if err := asuser.Do(t, asuser.Nobody, asuser.Nobody, member, asuser.Unlink, path); err == nil {
		t.Error("a member of the socket group unlinked the socket")
	}
	if err := asuser.Do(t, asuser.Nobody, asuser.Nobody, member, asuser.Create, filepath.Join(dir, "evil.sock")); err == nil {
		t.Error("a member of the socket group created a file in the socket directory")
	}
	after, err := os.Lstat(path)
	if err != nil || !os.SameFile(before, after) {
		t.Errorf("the socket was replaced: %v", err)
	}
}
