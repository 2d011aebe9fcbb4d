package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/config"
	"github.com/vram-exporter/vram_exporter/internal/asuser"
	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/nvml"
)

// The per-user fallback directory is made 0700; an existing one is used only if this
// user owns it and nobody else can write it.
func TestPrepareFallbackDir(t *testing.T) {
	base := t.TempDir()
	fresh := filepath.Join(base, "fresh")
	if err := prepareFallbackDir(fresh); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("fresh directory: %v, %v; want mode 0700", fi.Mode(), err)
	}
	if err := prepareFallbackDir(fresh); err != nil {
		t.Errorf("own 0700 directory refused: %v", err)
	}

	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := prepareFallbackDir(open); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Errorf("world-writable directory: %v, want refused as writable by others", err)
	}

	link := filepath.Join(base, "link")
	if err := os.Symlink(fresh, link); err != nil {
		t.Fatal(err)
	}
	if err := prepareFallbackDir(link); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("symlink: %v, want refused", err)
	}
}

func TestPrepareFallbackDirRefusesAnotherUsersDirectory(t *testing.T) {
	asuser.RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "theirs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, asuser.Nobody, asuser.Nobody); err != nil {
		t.Fatal(err)
	}
	if err := prepareFallbackDir(dir); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Errorf("a directory of uid 65534: %v, want refused naming its owner", err)
	}
}

// A FIFO at --trace.record is refused at once, whether or not something reads it: it
// used to block the start (and SIGTERM) until a reader came.
func TestTraceFileRefusesNonRegularFilesWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	readFIFO := func() func() {
		fd, err := syscall.Open(fifo, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		return func() { syscall.Close(fd) }
	}
	cases := []struct {
		name  string
		path  string
		setup func() func()
	}{
		{"fifo without a reader", fifo, func() func() { return func() {} }},
		{"fifo with a reader", fifo, readFIFO},
		{"directory", dir, func() func() { return func() {} }},
		{"device", "/dev/null", func() func() { return func() {} }},
	}
	for _, tc := range cases {
		for _, create := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/create=%v", tc.name, create), func(t *testing.T) {
				defer tc.setup()()
				errc := make(chan error, 1)
				go func() {
					f, err := openTraceFile(tc.path, create)
					if f != nil {
						f.Close()
					}
					errc <- err
				}()
				select {
				case err := <-errc:
					if err == nil || (!strings.Contains(err.Error(), "not a regular file") && !strings.Contains(err.Error(), "is a directory")) {
						t.Errorf("openTraceFile(%s) = %v, want refused as not a regular file", tc.path, err)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("openTraceFile blocked")
				}
			})
		}
	}
}

func TestCheckTraceFile(t *testing.T) {
	dir := t.TempDir()
	if err := checkTraceFile(filepath.Join(dir, "new.jsonl")); err != nil {
		t.Errorf("a file the daemon would create: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.jsonl")); !os.IsNotExist(err) {
		t.Errorf("the check created the file: %v", err)
	}
	if err := checkTraceFile(filepath.Join(dir, "no-such-dir", "t.jsonl")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a file in a missing directory: %v, want refused", err)
	}
}

// A trace file already at --trace.max-bytes no longer stops the start (a crash loop
// under systemd): it becomes PATH.1 at the first write and PATH starts afresh.
func TestRecorderRotatesAtTheBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	old := strings.Repeat(`{"t":1,"uuid":"GPU-a","gpu_used":1,"gpu_total":2}`+"\n", (1<<20)/50+1)
	if err := os.WriteFile(path, []byte(old), 0o640); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Trace.Record, cfg.Trace.MaxBytes = path, 1<<20
	rec, closeRec, err := openRecorder(cfg, zap.NewNop())
	if err != nil {
		t.Fatalf("a trace file at its bound stops the start: %v", err)
	}
	v := &join.View{Time: time.Unix(1_700_000_000, 0), GPUs: []join.GPU{{GPU: nvml.GPU{UUID: "GPU-b", UsedBytes: 1, TotalBytes: 2}}}}
	for range 3 {
		if err := rec.Record(v); err != nil {
			t.Fatal(err)
		}
	}
	closeRec()
	prev, err := os.ReadFile(path + ".1")
	if err != nil || string(prev) != old {
		t.Errorf("PATH.1 is not the previous trace (%d bytes, %v)", len(prev), err)
	}
	cur, err := os.ReadFile(path)
	if err != nil || strings.Count(string(cur), `"uuid":"GPU-b"`) != 3 || strings.Contains(string(cur), "GPU-a") {
		t.Errorf("PATH after rotating = %q, %v; want the 3 new lines only", cur, err)
	}
}

// replay says on stderr what it skipped, survives a line over 64 KiB, and exits 1 when
// it could read nothing (it exited 0, silently, on a binary file, and aborted on a long
// line).
func TestReplayReportsSkippedLinesAndFailsOnNothing(t *testing.T) {
	dir := t.TempDir()
	good := `{"t": 1700000000, "pid": 7, "uuid": "GPU-a", "used": 5}`
	mixed := filepath.Join(dir, "mixed.jsonl")
	if err := os.WriteFile(mixed, []byte(good+"\n"+strings.Repeat("x", 100<<10)+"\nnot json\n"+good+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runArgs(t, "replay", "--input="+mixed, "--output=json")
	if code != 0 || !strings.Contains(stdout, `"pid":7`) {
		t.Errorf("mixed trace: exit %d, stdout %q, stderr %q; want 0 and pid 7's verdict", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "skipped 2 malformed lines: line 2: longer than 65536 bytes") || !strings.Contains(stderr, "line 3: not a JSON object") {
		t.Errorf("stderr does not report the skipped lines: %q", stderr)
	}

	binary := filepath.Join(dir, "binary")
	if err := os.WriteFile(binary, append([]byte("\x7fELF\x02\x01\x01\x00\n"), make([]byte, 4096)...), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{binary, empty} {
		code, _, stderr := runArgs(t, "replay", "--input="+in)
		if code != 1 || !strings.Contains(stderr, "no sample could be read from the trace") {
			t.Errorf("replay of %s: exit %d, stderr %q; want exit 1 saying nothing was read", filepath.Base(in), code, stderr)
		}
	}
}
