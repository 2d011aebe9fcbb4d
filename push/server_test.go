//go:build linux

package push

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"

	"github.com/vram-exporter/vram_exporter/clock"
)

type harness struct {
	srv   *Server
	store *Store
	clk   *clock.Fake
	path  string
	logs  *observer.ObservedLogs
}

// socketDir returns a short directory: unix socket paths are limited to 107 bytes.
func socketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "push")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func startServer(t *testing.T, opts ServerOptions, maxProcesses int, setup ...func(*Server)) *harness {
	t.Helper()
	so := DefaultStoreOptions()
	if maxProcesses > 0 {
		so.MaxProcesses = maxProcesses
	}
	return startServerStore(t, opts, so, setup...)
}

// startServerStore is startServer with a store bounded by so (TTL 30s, the fake clock).
func startServerStore(t *testing.T, opts ServerOptions, so StoreOptions, setup ...func(*Server)) *harness {
	t.Helper()
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	if opts.Path == "" {
		opts.Path = filepath.Join(socketDir(t), "run", "push.sock")
	}
	opts.Clock = clk
	core, logs := observer.New(zapcore.InfoLevel)
	so.TTL, so.Clock = 30*time.Second, clk
	store, err := NewStoreWithOptions(so)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(opts, store, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range setup {
		f(srv)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &harness{srv: srv, store: store, clk: clk, path: opts.Path, logs: logs}
}

func dial(t *testing.T, path string) *net.UnixConn {
	t.Helper()
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func send(t *testing.T, c *net.UnixConn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("send: %v", err)
	}
}

// eventually polls cond; the deadline is only a safety net against a hung test, never
// part of what is measured.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// handled waits until the server has dealt with n messages in total.
func (h *harness) handled(t *testing.T, n uint64) Stats {
	t.Helper()
	var st Stats
	eventually(t, fmt.Sprintf("%d messages handled", n), func() bool {
		st = h.srv.Stats()
		total := st.MessagesAccepted
		for _, v := range st.Rejected {
			total += v
		}
		return total >= n
	})
	return st
}

// readFirst has a paced server read the first message of each of its n connections: a
// loop reads what it finds as it starts, else at the next pace. One pace at most, once
// the pacer's ticker exists and every loop waits for it, unlike pacedUntil: under load
// (1 run in 30 with three busy cores) the server's pacer goroutine had not made its
// ticker when the test advanced the clock for its own pace, which then never came, and
// a tick pacedUntil left in the ticker's channel released a loop later, so that the
// test's pace found it between reads and passed it by (TestServerReadPace: timed out
// waiting for 3 messages).
func (h *harness) readFirst(t *testing.T, n int) {
	t.Helper()
	eventually(t, "the pacer's ticker made", h.srv.pace.ticking.Load)
	eventually(t, "every first message read or every loop waiting", func() bool {
		return h.srv.Stats().MessagesAccepted >= uint64(n) || h.srv.pace.waiting.Load() == int64(n)
	})
	if h.srv.Stats().MessagesAccepted < uint64(n) {
		h.clk.Advance(time.Second)
	}
	h.handled(t, uint64(n))
	eventually(t, "every loop waiting for the next pace", func() bool { return h.srv.pace.waiting.Load() == int64(n) })
}

// pacedUntil advances the clock a pace at a time until cond holds: a paced loop's
// first read may come before or after what it waits for.
func (h *harness) pacedUntil(t *testing.T, what string, cond func(Stats) bool) {
	t.Helper()
	eventually(t, what, func() bool {
		if cond(h.srv.Stats()) {
			return true
		}
		h.clk.Advance(time.Second)
		return false
	})
}

func withLabel(model string) string {
	return `{"v":1,"runtime":"torch","labels":{"model":"` + model + `"},"devices":[{"uuid":"GPU-a","pools":[{"name":"torch","allocated":1,"reserved":2}]}]}`
}

func TestServerRoundTripUsesKernelPID(t *testing.T) {
	h := startServer(t, ServerOptions{}, 0)
	c := dial(t, h.path)
	send(t, c, typicalMessage) // says "pid": 4242
	st := h.handled(t, 1)
	if st.MessagesAccepted != 1 {
		t.Fatalf("stats %+v", st)
	}
	snap := h.store.Snapshot()
	if len(snap) != 1 {
		t.Fatalf("snapshot has %d senders, want 1", len(snap))
	}
	s := snap[0]
	if s.PID != uint32(os.Getpid()) || s.UID != uint32(os.Getuid()) || s.GID != uint32(os.Getgid()) {
		t.Errorf("sender pid/uid/gid = %d/%d/%d, want the kernel's %d/%d/%d", s.PID, s.UID, s.GID, os.Getpid(), os.Getuid(), os.Getgid())
	}
	if !reflect.DeepEqual(s.Msg, typicalDecoded()) || s.Messages != 1 || !s.LastSeen.Equal(h.clk.Now()) {
		t.Errorf("sender = %+v", s)
	}
	if st.BytesReceived != uint64(len(typicalMessage)) || st.Connections != 1 || st.ConnectionsAccepted != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestServerRejectsEachDecodeReason(t *testing.T) {
	h := startServer(t, ServerOptions{MaxConsecutiveRejects: 1000}, 0)
	c := dial(t, h.path)
	cases := map[string]string{
		ReasonInvalidJSON:        `{`,
		ReasonSchema:             `{"v":1,"runtime":"torch"}`,
		ReasonUnsupportedVersion: `{"v":2,"runtime":"torch","devices":[]}`,
		ReasonInvalidRuntime:     `{"v":1,"runtime":"Torch","devices":[]}`,
		ReasonInvalidLabel:       `{"v":1,"runtime":"torch","labels":{"job":"x"},"devices":[]}`,
		ReasonTooManyLabels:      `{"v":1,"runtime":"torch","labels":{"a":"1","b":"1","c":"1","d":"1","e":"1","f":"1","g":"1","h":"1","i":"1"},"devices":[]}`,
		ReasonTooManyDevices:     multiGPUMessage(17),
		ReasonInvalidUUID:        `{"v":1,"runtime":"torch","devices":[{"uuid":"0","pools":[]}]}`,
		ReasonTooManyPools:       `{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a","pools":[` + strings.Repeat(`{"name":"p","allocated":0,"reserved":0},`, 32) + `{}]}]}`,
		ReasonInvalidPool:        pool(`"allocated":3,"reserved":2`),
		ReasonInvalidBytes:       pool(`"allocated":1e3,"reserved":2000`),
	}
	var n uint64
	for reason, msg := range cases {
		send(t, c, msg)
		n++
		st := h.handled(t, n)
		if st.Rejected[reason] != 1 {
			t.Errorf("after a %s message: rejected = %v", reason, st.Rejected)
		}
	}
	if st := h.srv.Stats(); st.MessagesAccepted != 0 || len(h.store.Snapshot()) != 0 {
		t.Errorf("something was accepted: %+v", st)
	}
}

func TestServerTooLargeKeepsConnection(t *testing.T) {
	h := startServer(t, ServerOptions{}, 0)
	c := dial(t, h.path)
	big := `{"v":1,"runtime":"torch","devices":[],"pad":"` + strings.Repeat("x", 70*1024) + `"}`
	send(t, c, big)
	send(t, c, typicalMessage)
	st := h.handled(t, 2)
	if st.Rejected[ReasonTooLarge] != 1 || st.MessagesAccepted != 1 || st.Connections != 1 {
		t.Errorf("stats %+v", st)
	}
	// Exactly at the limit is fine.
	exact := `{"v":1,"runtime":"torch","devices":[],"pad":"`
	exact += strings.Repeat("x", DefaultMaxMessageBytes-len(exact)-2) + `"}`
	send(t, c, exact)
	if st := h.handled(t, 3); st.MessagesAccepted != 2 {
		t.Errorf("a message of exactly %d bytes was not accepted: %+v", len(exact), st.Rejected)
	}
}

func TestCredentials(t *testing.T) {
	tests := []struct {
		name   string
		oob    []byte
		want   Cred
		reason string
	}{
		{"kernel credentials", unix.UnixCredentials(&unix.Ucred{Pid: 42, Uid: 7, Gid: 8}), Cred{PID: 42, UID: 7, GID: 8}, ""},
		{"pid 0 from another namespace", unix.UnixCredentials(&unix.Ucred{Pid: 0, Uid: 7, Gid: 8}), Cred{PID: 0, UID: 7, GID: 8}, ReasonNoPID},
		{"no control message", nil, Cred{}, ReasonNoPID},
		{"garbage control data", []byte{1, 2, 3}, Cred{}, ReasonNoPID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := credentials(tt.oob)
			reason := ""
			if err != nil {
				reason = err.Reason
			}
			if got != tt.want || reason != tt.reason {
				t.Errorf("credentials = %+v, %v; want %+v, %q", got, err, tt.want, tt.reason)
			}
		})
	}
}

func TestNoPIDIsLoggedWithHint(t *testing.T) {
	h := startServer(t, ServerOptions{}, 0)
	h.srv.logReject(reject(ReasonNoPID, "test"), Cred{}, 1)
	entries := h.logs.FilterField(zap.String("reason", ReasonNoPID)).All()
	if len(entries) != 1 || !strings.Contains(fmt.Sprint(entries[0].ContextMap()["hint"]), "hostPID") {
		t.Errorf("log entries %+v", entries)
	}
}

func TestServerConnectionsKeptApart(t *testing.T) {
	h := startServer(t, ServerOptions{}, 0)
	a, b := dial(t, h.path), dial(t, h.path)
	send(t, a, withLabel("a"))
	h.handled(t, 1)
	send(t, b, withLabel("b"))
	h.handled(t, 2)
	before := h.store.Snapshot()
	// Bad input on a leaves a's previous snapshot and b alone.
	for i, bad := range []string{`{`, pool(`"allocated":3,"reserved":2`), `{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a","pools":[{"name":"x","allocated":1,"reserved":1}]},{"uuid":"GPU-a","pools":[]}]}`} {
		send(t, a, bad)
		h.handled(t, uint64(3+i))
	}
	after := h.store.Snapshot()
	if len(after) != 2 || !reflect.DeepEqual(before, after) {
		t.Fatalf("snapshot changed by rejected messages:\nbefore %+v\nafter  %+v", before, after)
	}
	if after[0].Msg.Labels["model"] != "a" || after[1].Msg.Labels["model"] != "b" || after[0].ConnID == after[1].ConnID {
		t.Errorf("senders mixed up: %+v", after)
	}
	// A new valid message replaces a's snapshot wholesale.
	send(t, a, `{"v":1,"runtime":"jax","devices":[]}`)
	h.handled(t, 6)
	after = h.store.Snapshot()
	if after[0].Msg.Runtime != "jax" || len(after[0].Msg.Devices) != 0 || after[0].Messages != 2 || after[1].Msg.Runtime != "torch" {
		t.Errorf("after replacement: %+v", after)
	}
}

func TestServerCloseRemovesDataAtOnce(t *testing.T) {
	h := startServer(t, ServerOptions{}, 0)
	a, b := dial(t, h.path), dial(t, h.path)
	send(t, a, withLabel("a"))
	send(t, b, withLabel("b"))
	h.handled(t, 2)
	a.Close()
	eventually(t, "a's disconnect", func() bool { return h.srv.Stats().Disconnects[DisconnectClientClosed] == 1 })
	snap := h.store.Snapshot()
	if len(snap) != 1 || snap[0].Msg.Labels["model"] != "b" {
		t.Errorf("after a closed: %+v", snap)
	}
	if st := h.srv.Stats(); st.Connections != 1 || st.ConnectionsClosed != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestServerRateLimit(t *testing.T) {
	h := startServer(t, ServerOptions{RatePerSecond: 2, Burst: 3}, 0)
	c := dial(t, h.path)
	for range 4 {
		send(t, c, typicalMessage)
	}
	st := h.handled(t, 4)
	if st.MessagesAccepted != 3 || st.Rejected[ReasonRateLimited] != 1 {
		t.Fatalf("burst of 4 with burst 3: %+v", st)
	}
	h.clk.Advance(500 * time.Millisecond) // one token at 2/s
	send(t, c, typicalMessage)
	send(t, c, typicalMessage)
	st = h.handled(t, 6)
	if st.MessagesAccepted != 4 || st.Rejected[ReasonRateLimited] != 2 || st.Connections != 1 {
		t.Errorf("after refill: %+v", st)
	}
}

func TestServerGarbageDisconnect(t *testing.T) {
	h := startServer(t, ServerOptions{MaxConsecutiveRejects: 3, RatePerSecond: 1, Burst: 1}, 0)
	c := dial(t, h.path)
	// Rate-limited messages are not garbage; an accepted message resets the count.
	send(t, c, `{`)
	send(t, c, `{`) // rate limited
	h.handled(t, 2)
	h.clk.Advance(time.Second)
	send(t, c, `{`)
	h.handled(t, 3)
	h.clk.Advance(time.Second)
	send(t, c, typicalMessage)
	h.handled(t, 4)
	for i := range 3 {
		h.clk.Advance(time.Second)
		send(t, c, `[]`)
		h.handled(t, uint64(5+i))
	}
	eventually(t, "garbage disconnect", func() bool { return h.srv.Stats().Disconnects[DisconnectGarbage] == 1 })
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("connection still open after garbage")
	}
	if len(h.store.Snapshot()) != 0 {
		t.Error("garbage sender's data kept after disconnect")
	}
	if st := h.srv.Stats(); st.Rejected[ReasonSchema] != 3 || st.Rejected[ReasonInvalidJSON] != 2 {
		t.Errorf("stats %+v", st)
	}
}

func TestServerTooManyConnections(t *testing.T) {
	h := startServer(t, ServerOptions{MaxConnections: 2}, 0)
	a, b := dial(t, h.path), dial(t, h.path)
	send(t, a, withLabel("a"))
	send(t, b, withLabel("b"))
	h.handled(t, 2)
	c := dial(t, h.path)
	eventually(t, "refusal", func() bool { return h.srv.Stats().Disconnects[DisconnectTooManyConnections] == 1 })
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("refused connection still open")
	}
	st := h.srv.Stats()
	if st.Connections != 2 || st.ConnectionsAccepted != 3 || st.ConnectionsClosed != 1 {
		t.Errorf("stats %+v", st)
	}
	// The refusal is counted before it is logged: wait for the line, not just the count.
	eventually(t, "refusal logged", func() bool { return h.logs.FilterMessageSnippet("too many connections").Len() == 1 })
	// A slot freed is a slot usable again.
	a.Close()
	eventually(t, "a closed", func() bool { return h.srv.Stats().Connections == 1 })
	d := dial(t, h.path)
	send(t, d, withLabel("d"))
	h.handled(t, 3)
}

func TestServerRejectLogsAreRateLimited(t *testing.T) {
	h := startServer(t, ServerOptions{}, 0)
	c := dial(t, h.path)
	for range 5 {
		send(t, c, `{`)
	}
	h.handled(t, 5)
	lines := h.logs.FilterField(zap.String("reason", ReasonInvalidJSON))
	if lines.Len() != 1 {
		t.Fatalf("%d log lines for 5 rejects within 10s, want 1", lines.Len())
	}
	h.clk.Advance(rejectLogInterval)
	send(t, c, `{`)
	h.handled(t, 6)
	// The reject is counted before it is logged: wait for the line, not the count.
	eventually(t, "a second line after 10s", func() bool {
		return h.logs.FilterField(zap.String("reason", ReasonInvalidJSON)).Len() == 2
	})
	last := h.logs.FilterField(zap.String("reason", ReasonInvalidJSON)).All()[1]
	if got := last.ContextMap()["suppressed_since_last_line"]; got != uint64(4) {
		t.Errorf("suppressed = %v, want 4", got)
	}
}

func TestServerTooManyProcesses(t *testing.T) {
	h := startServer(t, ServerOptions{}, 1)
	c := dial(t, h.path)
	send(t, c, withLabel("parent"))
	h.handled(t, 1)
	// A second process (this test binary again) is one more than the store allows.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperSocketEnv+"="+h.path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	st := h.handled(t, 2)
	if st.Rejected[ReasonTooManyProcesses] != 1 {
		t.Errorf("stats %+v", st)
	}
	if snap := h.store.Snapshot(); len(snap) != 1 || snap[0].PID != uint32(os.Getpid()) {
		t.Errorf("snapshot %+v", snap)
	}
}

func TestServerCloseRemovesSocketAndConnections(t *testing.T) {
	h := startServer(t, ServerOptions{}, 0)
	c := dial(t, h.path)
	send(t, c, typicalMessage)
	h.handled(t, 1)
	if err := h.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(h.path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket file left after Close: %v", err)
	}
	if len(h.store.Snapshot()) != 0 {
		t.Error("data left after Close")
	}
	if st := h.srv.Stats(); st.Connections != 0 || st.Disconnects[DisconnectShutdown] != 1 {
		t.Errorf("stats %+v", st)
	}
	if err := h.srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func newListenServer(t *testing.T, opts ServerOptions) *Server {
	t.Helper()
	srv, err := NewServer(opts, NewStore(0, 0, nil), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func TestListenModesAndGroup(t *testing.T) {
	tests := []struct {
		mode, wantDir os.FileMode
	}{{0o660, 0o750}, {0o600, 0o700}, {0o640, 0o750}, {0o666, 0o755}, {0o620, 0o750}, {0o602, 0o705}} // never w for group or others
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			dir := filepath.Join(socketDir(t), "vram")
			path := filepath.Join(dir, "push.sock")
			srv := newListenServer(t, ServerOptions{Path: path, Mode: tt.mode, Group: fmt.Sprint(os.Getgid())})
			if err := srv.Listen(); err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			for _, c := range []struct {
				p    string
				want os.FileMode
				typ  fs.FileMode
			}{{dir, tt.wantDir, fs.ModeDir}, {path, tt.mode, fs.ModeSocket}} {
				fi, err := os.Lstat(c.p)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != c.want || fi.Mode().Type() != c.typ {
					t.Errorf("%s mode = %v, want %v", c.p, fi.Mode(), c.want)
				}
				if gid := fi.Sys().(*syscall.Stat_t).Gid; gid != uint32(os.Getgid()) {
					t.Errorf("%s gid = %d", c.p, gid)
				}
			}
		})
	}
}

func TestListenLeavesExistingDirectoryAlone(t *testing.T) {
	dir := socketDir(t)
	if err := os.Chmod(dir, 0o751); err != nil {
		t.Fatal(err)
	}
	srv := newListenServer(t, ServerOptions{Path: filepath.Join(dir, "push.sock")})
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o751 {
		t.Errorf("existing directory mode changed to %v", fi.Mode())
	}
}

func TestListenReplacesStaleSocket(t *testing.T) {
	path := filepath.Join(socketDir(t), "push.sock")
	// A crashed daemon leaves its socket file behind, with nobody listening.
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	srv := newListenServer(t, ServerOptions{Path: path})
	if err := srv.Listen(); err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	go srv.Serve(context.Background())
	defer srv.Close()
	c := dial(t, path)
	send(t, c, typicalMessage)
	eventually(t, "message on the new socket", func() bool { return srv.Stats().MessagesAccepted == 1 })
}

func TestListenDoesNotStealLiveSocket(t *testing.T) {
	h := startServer(t, ServerOptions{}, 0)
	second := newListenServer(t, ServerOptions{Path: h.path})
	err := second.Listen()
	if !errors.Is(err, ErrSocketInUse) {
		t.Fatalf("Listen on a live socket: %v, want ErrSocketInUse", err)
	}
	want := "another vram_exporter is already serving " + h.path + "; stop it or choose another --push.socket"
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	// Closing the loser must not remove the winner's socket.
	second.Close()
	c := dial(t, h.path)
	send(t, c, typicalMessage)
	h.handled(t, 1)
}

func TestListenRefusesNonSocketFile(t *testing.T) {
	path := filepath.Join(socketDir(t), "push.sock")
	if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := newListenServer(t, ServerOptions{Path: path})
	err := srv.Listen()
	if err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a regular file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious" {
		t.Error("regular file was touched")
	}
}

func TestNewServerRejectsBadOptions(t *testing.T) {
	if _, err := NewServer(ServerOptions{Group: "no-such-group-xyz"}, NewStore(0, 0, nil), nil); err == nil || !strings.Contains(err.Error(), "no-such-group-xyz") {
		t.Errorf("unknown group: %v", err)
	}
	if _, err := NewServer(ServerOptions{Mode: os.ModeSetuid | 0o660}, NewStore(0, 0, nil), nil); err == nil || !strings.Contains(err.Error(), "push: Mode: 040000660 has bits outside 0777") {
		t.Errorf("setuid mode: %v", err)
	}
	if _, err := NewServer(ServerOptions{MaxConnections: -1}, NewStore(0, 0, nil), nil); err == nil || !strings.Contains(err.Error(), "push: MaxConnections: -1 is out of range") {
		t.Errorf("negative connection limit: %v", err)
	}
	if _, err := NewServer(ServerOptions{}, nil, nil); err == nil {
		t.Error("nil store accepted")
	}
}

func TestDefaultServerOptionsPassCheck(t *testing.T) {
	if err := DefaultServerOptions().Validate(); err != nil {
		t.Errorf("DefaultServerOptions().Validate() = %v", err)
	}
	// NewServer's zero-filling and DefaultServerOptions must be the same defaults.
	got := ServerOptions{}.withDefaults()
	if got.Clock == nil {
		t.Error("ServerOptions{}.withDefaults() has no clock")
	}
	got.Clock = nil
	if want := DefaultServerOptions(); got != want {
		t.Errorf("ServerOptions{}.withDefaults() = %+v, want DefaultServerOptions() %+v", got, want)
	}
}

func TestServerOptionsCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*ServerOptions)
		want string // Validate's text; "" means valid
	}{
		{"longest path", func(o *ServerOptions) { o.Path = "/" + strings.Repeat("s", 106) }, ""},
		{"path too long", func(o *ServerOptions) { o.Path = "/" + strings.Repeat("s", 107) },
			`push: Path: "/` + strings.Repeat("s", 107) + `" is 108 bytes long; a unix socket path may be at most 107 bytes, so use a shorter directory`},
		{"relative path", func(o *ServerOptions) { o.Path = "push.sock" },
			`push: Path: "push.sock" is not an absolute path; use one like "/run/vram_exporter/push.sock"`},
		{"empty path", func(o *ServerOptions) { o.Path = "" },
			`push: Path: "" is not an absolute path; use one like "/run/vram_exporter/push.sock"`},
		{"write-only mode", func(o *ServerOptions) { o.Mode = 0o220 }, ""},
		{"mode with sticky bit", func(o *ServerOptions) { o.Mode = 0o1660 },
			`push: Mode: 01660 has bits outside 0777; use permission bits only, like "0660"`},
		{"mode nobody may use", func(o *ServerOptions) { o.Mode = 0o111 },
			`push: Mode: 0111 lets no one but root connect; grant read and write to the senders, like "0660"`},
		{"zero connections", func(o *ServerOptions) { o.MaxConnections = 0 },
			`push: MaxConnections: 0 is out of range; use at least 1, like 4096`},
		{"rate NaN", func(o *ServerOptions) { o.RatePerSecond = math.NaN() },
			`push: RatePerSecond: NaN is out of range; use a positive number of messages per second, like 100`},
		{"read pace of a minute", func(o *ServerOptions) { o.ReadPace = time.Minute }, ""},
		{"negative read pace", func(o *ServerOptions) { o.ReadPace = -time.Second },
			`push: ReadPace: -1s is out of range; use 0 (read each message as it arrives) up to 1m`},
		{"read pace too long", func(o *ServerOptions) { o.ReadPace = 2 * time.Minute },
			`push: ReadPace: 2m is out of range; use 0 (read each message as it arrives) up to 1m`},
		{"several", func(o *ServerOptions) { o.Burst = 0; o.MaxConsecutiveRejects = -2; o.MaxMessageBytes = 0 }, strings.Join([]string{
			`push: MaxMessageBytes: 0 is out of range; use at least 1, like 65536`,
			`push: Burst: 0 is out of range; use at least 1, like 200`,
			`push: MaxConsecutiveRejects: -2 is out of range; use at least 1, like 20`,
		}, "\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultServerOptions()
			tc.edit(&o)
			got := ""
			if err := o.Validate(); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Validate()\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
}

// TestServerReadPace: with ReadPace a connection is read once per pace, everything that
// arrived since in one go, and not as each message arrives; without it, at once.
func TestServerReadPace(t *testing.T) {
	h := startServer(t, ServerOptions{ReadPace: time.Second}, 0)
	c := dial(t, h.path)
	send(t, c, withLabel("a"))
	h.readFirst(t, 1)
	send(t, c, withLabel("b"))
	send(t, c, withLabel("c"))
	// The loop waits on the pace alone: nothing reads the two until it comes.
	if n := h.srv.Stats().MessagesAccepted; n != 1 {
		t.Fatalf("%d messages handled before the pace, want 1", n)
	}
	h.clk.Advance(time.Second)
	h.handled(t, 3)
	eventually(t, "the read loop waiting again", func() bool { return h.srv.pace.waiting.Load() == 1 })
	if got := h.store.Snapshot()[0].Msg.Labels["model"]; got != "c" {
		t.Errorf("latest message's model %q, want c", got)
	}

	// Unpaced: read as each message arrives, with no clock moving.
	u := startServer(t, ServerOptions{}, 0)
	if u.srv.pace != nil {
		t.Fatal("a pacer without ReadPace")
	}
	cu := dial(t, u.path)
	send(t, cu, withLabel("a"))
	send(t, cu, withLabel("b"))
	u.handled(t, 2)
}

// TestServerReadPaceClosesIdleConnections: a paced loop still ends when the reaper
// closes its connection (first-message deadline) and when the server closes.
func TestServerReadPaceClosesIdleConnections(t *testing.T) {
	h := startServer(t, ServerOptions{ReadPace: time.Second, FirstMessageTimeout: 3 * time.Second}, 0)
	_ = dial(t, h.path)
	eventually(t, "the connection registered", func() bool { return h.srv.Stats().Connections == 1 })
	h.pacedUntil(t, "the reaper closing the silent connection", func(st Stats) bool { return st.Disconnects[DisconnectFirstMessageTimeout] == 1 })
	eventually(t, "its read loop gone", func() bool { return h.srv.Stats().Connections == 0 })
}

// TestServerReadPaceRunsEveryLoopEachPace: the paced loops run one after the other, each
// handing on to the next, so one pace reads every connection, even when a loop in the
// middle ends (its client went away) instead of waiting again.
func TestServerReadPaceRunsEveryLoopEachPace(t *testing.T) {
	h := startServer(t, ServerOptions{ReadPace: time.Second}, 0)
	var cs []*net.UnixConn
	for i := range 3 {
		c := dial(t, h.path)
		send(t, c, withLabel(fmt.Sprint("first", i)))
		cs = append(cs, c)
	}
	h.readFirst(t, 3)
	send(t, cs[0], withLabel("second0"))
	_ = cs[1].Close()
	send(t, cs[2], withLabel("second2"))
	h.clk.Advance(time.Second) // one pace, no more
	h.handled(t, 5)
	eventually(t, "the closed connection's loop gone", func() bool { return h.srv.Stats().Connections == 2 })
	eventually(t, "the other two waiting again", func() bool { return h.srv.pace.waiting.Load() == 2 })
}
