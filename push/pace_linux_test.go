package push

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pollerWatches counts the descriptors the Go runtime's epoll instances watch in this
// process (the "tfd:" lines of their fdinfo).
func pollerWatches(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err != nil || l != "anon_inode:[eventpoll]" {
			continue
		}
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", e.Name()))
		if err != nil {
			continue // closed since ReadDir
		}
		n += strings.Count(string(info), "tfd:")
	}
	return n
}

// rawDial connects to path and sends msg with plain system calls, so the client's own
// socket is not in the runtime's poller and pollerWatches counts the server's alone.
func rawDial(t *testing.T, path, msg string) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(fd, []byte(msg)); err != nil {
		t.Fatal(err)
	}
}

// TestServerReadPaceLeavesThePoller: a paced connection's socket is not watched by the
// runtime's epoll (a message arriving on a watched one wakes a thread of an idle daemon
// for nothing: nothing waits on a paced socket), yet its messages are read at each pace
// and the reaper and Close still end it. Unpaced connections are watched (the
// control: without it the count proves nothing).
func TestServerReadPaceLeavesThePoller(t *testing.T) {
	const clients = 4
	for _, paced := range []bool{false, true} {
		opts := ServerOptions{IdleTimeout: 20 * time.Second}
		if paced {
			opts.ReadPace = time.Second
		}
		h := startServer(t, opts, 0)
		before := pollerWatches(t)
		for i := range clients {
			rawDial(t, h.path, withLabel(string(rune('a'+i))))
		}
		h.pacedUntil(t, "every first message handled", func(st Stats) bool { return st.MessagesAccepted >= clients })
		added := pollerWatches(t) - before
		if paced && added != 0 {
			t.Errorf("paced: %d more descriptors in the runtime's poller after %d connections, want 0", added, clients)
		}
		if !paced && added < clients {
			t.Errorf("unpaced: %d more descriptors in the runtime's poller after %d connections, want %d", added, clients, clients)
		}
		if !paced {
			continue
		}
		// The reaper closes the detached sockets (the clients say no more), and their
		// loops end at the next pace.
		h.pacedUntil(t, "the reaper closing the idle connections", func(st Stats) bool { return st.Disconnects[DisconnectIdleTimeout] == clients })
		eventually(t, "their loops gone", func() bool { return h.srv.Stats().Connections == 0 })
	}

	// Close ends detached loops too, counted as shutdowns.
	h := startServer(t, ServerOptions{ReadPace: time.Second}, 0)
	rawDial(t, h.path, withLabel("x"))
	rawDial(t, h.path, withLabel("y"))
	eventually(t, "both connections registered", func() bool { return h.srv.Stats().Connections == 2 })
	eventually(t, "both loops waiting for a pace", func() bool { return h.srv.pace.waiting.Load() == 2 })
	if err := h.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if st := h.srv.Stats(); st.Connections != 0 || st.Disconnects[DisconnectShutdown] != 2 {
		t.Errorf("after Close: %d connections, %d shutdown disconnects; want 0 and 2", st.Connections, st.Disconnects[DisconnectShutdown])
	}
}
