//go:build linux

package procinfo

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/vram-exporter/vram_exporter/clock"
	"github.com/vram-exporter/vram_exporter/internal/testenv"
)

// tempProc is a procfs root a test can change under the cache.
type tempProc struct {
	t    *testing.T
	root string
}

func newTempProc(t *testing.T) *tempProc {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "stat"), []byte("cpu 0 0 0 0\nbtime 1767225600\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return &tempProc{t, root}
}

// write makes (or rewrites) process pid with the given comm, start ticks, RSS pages
// and command line.
func (p *tempProc) write(pid int, comm string, start, rss uint64, argv0 string) {
	p.t.Helper()
	dir := filepath.Join(p.root, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Fatal(err)
	}
	stat := strconv.Itoa(pid) + " (" + comm + ") S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 " +
		strconv.FormatUint(start, 10) + " 1000 " + strconv.FormatUint(rss, 10) + " 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	for name, content := range map[string]string{
		"stat": stat, "cmdline": argv0 + "\x00--flag\x00",
		"cgroup": "0::/kubepods.slice/kubepods-pod7d5c3e9a_1b2f_4c8d_9e0a_6f4b2d8c1e3a.slice/cri-containerd-" + hex1 + ".scope\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			p.t.Fatal(err)
		}
	}
}

// countReads makes c count its /proc/PID/stat reads.
func countReads(c *Cache) *int {
	n := new(int)
	c.read = func(path string, buf []byte) (int, error) {
		*n++
		return readSmall(path, buf)
	}
	return n
}

func TestCacheReadsStatOnlyEveryStatRefresh(t *testing.T) {
	p := newTempProc(t)
	p.write(42, "python3", 1000, 10, "/usr/bin/python3")
	r, err := NewReader(p.root)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	c := NewCache(r, clk)
	if c.pidfds {
		t.Fatal("pidfds used for a procfs root that is not the daemon's namespace")
	}
	stats := countReads(c)
	first, err := c.Facts(42)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := r.Facts(42); first != want {
		t.Fatalf("cached facts %+v, Reader's %+v", first, want)
	}
	// Same process: between refreshes nothing is read, RSS stays as it was.
	p.write(42, "python3", 1000, 20, "/usr/bin/other")
	for range 9 {
		clk.Advance(time.Second)
		got, err := c.Facts(42)
		if err != nil || got != first {
			t.Fatalf("within StatRefresh: %+v %v, want %+v", got, err, first)
		}
	}
	if *stats != 0 || c.fullReads != 1 {
		t.Fatalf("within StatRefresh: %d stat reads, %d full reads; want 0 and 1", *stats, c.fullReads)
	}
	// At the refresh: stat again for RSS, the command line is still not read.
	clk.Advance(StatRefresh - 9*time.Second)
	got, err := c.Facts(42)
	if err != nil {
		t.Fatal(err)
	}
	page := uint64(os.Getpagesize())
	if got.Cmdline != "python3 --flag" || got.RSSBytes != 20*page || *stats != 1 || c.fullReads != 1 {
		t.Fatalf("at refresh: cmdline %q rss %d, %d stat reads, %d full reads", got.Cmdline, got.RSSBytes, *stats, c.fullReads)
	}
	// The PID now names another process. Without pidfds that shows at the next refresh
	// (the documented lag), or at once through Refresh.
	p.write(42, "ollama", 5000, 30, "/bin/ollama")
	if got, _ := c.Facts(42); got.StartTicks != 1000 {
		t.Fatalf("reuse seen before the refresh without pidfds: %+v", got)
	}
	got, err = c.Refresh(42)
	if err != nil {
		t.Fatal(err)
	}
	if got.Cmdline != "ollama --flag" || got.Comm != "ollama" || got.StartTicks != 5000 || c.fullReads != 2 {
		t.Fatalf("reused PID: %+v full reads %d", got, c.fullReads)
	}
	// Gone: ErrNotFound at the next refresh, and forgotten.
	if err := os.RemoveAll(filepath.Join(p.root, "42")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(StatRefresh)
	if _, err := c.Facts(42); !errors.Is(err, ErrNotFound) {
		t.Fatalf("gone process: %v", err)
	}
	if c.Len() != 0 {
		t.Fatalf("a gone process is still cached")
	}
}

// A real child process under the real /proc: with pidfds its exit is seen on the very
// next call, without any stat read in between.
func TestCachePidfdSeesExitAtOnce(t *testing.T) {
	r, err := NewReader("/proc")
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	c := NewCache(r, clk)
	t.Cleanup(func() { _ = c.Close() })
	if !c.pidfds {
		testenv.Unavailable(t, "pidfd_open (Linux 5.3+) in this PID namespace")
	}
	stats := countReads(c)
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		testenv.Unavailable(t, "sleep(1): %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := uint32(cmd.Process.Pid)
	// Start returns once the exec is past the point of no return, a moment before the new
	// program's arguments are in place: wait (bounded) for them.
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline")
		if err == nil && len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child's command line never appeared: %q %v", b, err)
		}
		runtime.Gosched()
	}
	first, err := c.Facts(pid)
	if err != nil {
		t.Fatal(err)
	}
	if first.Comm != "sleep" || first.Cmdline != "sleep 600" || c.openFDs != 1 {
		t.Fatalf("facts %+v, %d pidfds open", first, c.openFDs)
	}
	for range 3 {
		clk.Advance(time.Second)
		if got, err := c.Facts(pid); err != nil || got != first {
			t.Fatalf("live child: %+v %v", got, err)
		}
	}
	if *stats != 0 || c.fullReads != 1 {
		t.Fatalf("live child: %d stat reads, %d full reads; want 0 and 1", *stats, c.fullReads)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // reaped: the PID is free for another process
	if got, err := c.Facts(pid); !errors.Is(err, ErrNotFound) {
		t.Fatalf("exited child, clock unchanged: %+v %v; want ErrNotFound", got, err)
	}
	if c.Len() != 0 || c.openFDs != 0 {
		t.Fatalf("exited child: %d cached, %d pidfds open", c.Len(), c.openFDs)
	}
}

func TestCacheCloseReleasesPidfds(t *testing.T) {
	r, err := NewReader("/proc")
	if err != nil {
		t.Fatal(err)
	}
	c := NewCache(r, clock.NewFake(time.Unix(1_800_000_000, 0)))
	if !c.pidfds {
		testenv.Unavailable(t, "pidfd_open (Linux 5.3+) in this PID namespace")
	}
	if _, err := c.Facts(uint32(os.Getpid())); err != nil {
		t.Fatal(err)
	}
	if c.openFDs != 1 {
		t.Fatalf("%d pidfds open, want 1", c.openFDs)
	}
	_ = c.Close()
	if c.openFDs != 0 || c.Len() != 0 {
		t.Fatalf("after Close: %d pidfds, %d cached", c.openFDs, c.Len())
	}
}

func TestCacheForgetsProcessesNoLongerAskedAbout(t *testing.T) {
	p := newTempProc(t)
	p.write(1, "a", 10, 1, "a")
	p.write(2, "b", 20, 1, "b")
	r, err := NewReader(p.root)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	c := NewCache(r, clk)
	for _, pid := range []uint32{1, 2} {
		if _, err := c.Facts(pid); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 { // only pid 1 is still on a GPU
		clk.Advance(DefaultForget / 2)
		if _, err := c.Facts(1); err != nil {
			t.Fatal(err)
		}
	}
	if c.Len() != 1 {
		t.Fatalf("%d processes cached, want only the one still asked about", c.Len())
	}
}

func TestParseStat(t *testing.T) {
	line := []byte("77 (a) b (c) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 123456 1000 789 18446744073709551615\n")
	comm, start, rss, err := parseStat(line)
	if err != nil || string(comm) != "a) b (c" || start != 123456 || rss != 789 {
		t.Fatalf("%q %d %d %v", comm, start, rss, err)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1 2 3", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 abc 1000 789"} {
		if _, _, _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	// The fixtures' real stat lines agree with procfs's parser.
	r := fixtureReader(t)
	for _, pid := range []uint32{4242, 5151} {
		want, err := r.Facts(pid)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(fixtureRoot, strconv.Itoa(int(pid)), "stat"))
		if err != nil {
			t.Fatal(err)
		}
		comm, start, rss, err := parseStat(b)
		if err != nil || string(comm) != want.Comm || start != want.StartTicks || uint64(rss)*uint64(os.Getpagesize()) != want.RSSBytes {
			t.Errorf("pid %d: %q %d %d %v, want %+v", pid, comm, start, rss, err, want)
		}
	}
}

// BenchmarkFactsCached is one process's facts per sample tick: read in full every tick (the
// Reader, as before the cache) and through the Cache.
func BenchmarkFactsCached(b *testing.B) {
	pid := uint32(os.Getpid()) // a real /proc entry, as on a node
	r, err := NewReader("/proc")
	if err != nil {
		b.Skip(err)
	}
	b.Run("reader", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Facts(pid); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cache", func(b *testing.B) {
		c := NewCache(r, nil)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Facts(pid); err != nil {
				b.Fatal(err)
			}
		}
	})
}
