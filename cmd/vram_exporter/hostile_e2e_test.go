//go:build linux

package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vram-exporter/vram_exporter/internal/testenv"
)

// The hostile suite runs each attack of issue 11 against the real binary (built without
// -race, so its memory is the daemon's own) at the default limits, as a non-root sender:
// when the tests run as root (CI does), the attacker runs as nobody (65534). Each attack
// checks that the daemon's RSS stays within rssBudget, that a legitimate sender started
// before the attack stays exported, and that the counters count what was dropped. The
// CI form takes a few seconds per attack; VRAM_HOSTILE_LONG=1 runs each for 30 s and
// prints the figures.

// rssBudget is the most the daemon may hold under attack: half its 256 MiB limit.
const rssBudget = 128 << 20

// buildPlainBinary builds the daemon without -race: the race detector multiplies memory
// use, and this suite measures it.
func buildPlainBinary(t *testing.T) string { return plainBuild.build(t, "vram_exporter-plain") }

func hostileDuration() time.Duration {
	if os.Getenv("VRAM_HOSTILE_LONG") == "1" {
		return 30 * time.Second
	}
	return 3 * time.Second
}

// startHostileDaemon starts the plain binary with a socket anyone may reach (so the
// attacker can be another user) and the default limits, plus extra.
func startHostileDaemon(t *testing.T, extra ...string) *daemonProc {
	t.Helper()
	d := launchBinary(t, buildPlainBinary(t), func(dir, socket string) []string {
		return []string{
			"--log.level=info", // launch waits for the "listening" line
			"--nvml.library-path=" + filepath.Join(dir, "no-such-libnvidia-ml.so.1"),
			"--nvml.poll-interval=100ms",
			"--push.socket-mode=0666",
		}
	}, extra...)
	// t.TempDir's directories are 0700: open the way to the socket's directory.
	for dir := filepath.Dir(filepath.Dir(d.socket)); dir != os.TempDir() && dir != "/"; dir = filepath.Dir(dir) {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// rssWatch samples the daemon's VmRSS every 50 ms until stopped.
type rssWatch struct {
	pid  int
	mu   sync.Mutex
	max  int64
	stop chan struct{}
	done chan struct{}
}

func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

func watchRSS(t *testing.T, pid int) *rssWatch {
	w := &rssWatch{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			if err == nil {
				for _, line := range strings.Split(string(b), "\n") {
					if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
						kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
						w.mu.Lock()
						w.max = max(w.max, kb<<10)
						w.mu.Unlock()
					}
				}
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *rssWatch) peak() int64 {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.max
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// cpuSeconds is the daemon's user+system CPU time so far.
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// attackerScript is every attack as one stdlib-only Python program:
// argv = socket, mode, seconds. It prints "done k=v …" when it has finished.
const attackerScript = `
import json, os, resource, socket, sys, time
path, mode, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
end = time.time() + secs

def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    s.setblocking(False)
    return s

def msg(uuids, pools, tag):
    return json.dumps({"v": 1, "runtime": "torch", "devices": [
        {"uuid": u, "pools": [{"name": "%s%d" % (tag, i), "allocated": 1, "reserved": 2} for i in range(pools)]}
        for u in uuids]}).encode()

def send(s, m):
    try:
        s.send(m)
        return 1
    except OSError:
        return 0

if mode == "amplify":
    # 32 processes x 4 connections; every message either 16 UUIDs x 32 pools or 4 x 32,
    # with pool names fresh on every message: as many series as the daemon would take.
    kids = []
    for p in range(32):
        pid = os.fork()
        if pid == 0:
            conns = []
            for c in range(4):
                try:
                    conns.append(conn())
                except OSError:
                    pass
            n = 0
            while time.time() < end:
                for i, s in enumerate(conns):
                    uu = ["GPU-amp-%d-%d" % (p, u) for u in range(16 if n % 2 == 0 else 4)]
                    send(s, msg(uu, 32, "c%dn%d_" % (i, n)))
                n += 1
                time.sleep(0.1)
            os._exit(0)
        kids.append(pid)
    for k in kids:
        os.waitpid(k, 0)
    print("done processes=32 connections=128", flush=True)
elif mode == "uuid_churn":
    s, n, sent = conn(), 0, 0
    while time.time() < end:
        sent += send(s, msg(["GPU-churn-%d-%d" % (n, u) for u in range(16)], 2, "p"))
        n += 1
        time.sleep(0.01)
    print("done messages=%d uuids=%d" % (sent, 16 * sent), flush=True)
elif mode == "idle":
    conns = []
    for i in range(1100):
        try:
            conns.append(conn())
        except OSError:
            break
    print("connected %d" % len(conns), flush=True)
    while time.time() < end:
        time.sleep(0.05)
    open_ = 0
    for s in conns:
        try:
            s.send(b"{}")
            open_ += 1
        except OSError:
            pass
    print("done connected=%d still_open=%d" % (len(conns), open_), flush=True)
elif mode == "connect_churn":
    n = fails = 0
    while time.time() < end:
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.connect(path)
            n += 1
        except OSError:
            fails += 1
        s.close()
    print("done connects=%d failed=%d" % (n, fails), flush=True)
elif mode == "inherit":
    # Connect, send, then leave the connection to a silent child and exit: the
    # parent's PID is free for reuse while its data is still held.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    s.send(msg(["GPU-inherit-0"], 1, "torch"))
    child = os.fork()
    if child == 0:
        os.setsid()  # out of the parent's session; the test kills it
        time.sleep(300)
        os._exit(0)
    print("done parent=%d child=%d" % (os.getpid(), child), flush=True)
    os._exit(0)
`

type attacker struct {
	cmd   *exec.Cmd
	lines *bufio.Scanner
	stdin interface{ Close() error }
}

// startAttacker runs one attack as nobody when the tests run as root, else as the
// current user.
func startAttacker(t *testing.T, socket, mode string, d time.Duration) *attacker {
	t.Helper()
	py := python3(t)
	if os.Getuid() == 0 {
		// The python3 on root's PATH may live under /root (pyenv), out of nobody's reach.
		if _, err := os.Stat("/usr/bin/python3"); err == nil {
			py = "/usr/bin/python3"
		}
	}
	cmd := exec.Command(py, "-c", attackerScript, socket, mode, strconv.FormatFloat(d.Seconds(), 'f', 1, 64))
	cmd.Dir = "/"
	cmd.Stderr = os.Stderr
	if os.Getuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &attacker{cmd: cmd, lines: bufio.NewScanner(out), stdin: stdin}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return a
}

// line waits for the attacker's next line of output.
func (a *attacker) line(t *testing.T) string {
	t.Helper()
	if !a.lines.Scan() {
		t.Fatalf("attacker printed nothing more: %v", a.lines.Err())
	}
	return a.lines.Text()
}

func counter(t *testing.T, body, series string) float64 {
	t.Helper()
	v, ok := metricValue(body, series)
	if !ok {
		t.Fatalf("no %s in /metrics", series)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// legit starts the real Python client before an attack and returns the series that
// must stay exported through it.
func legit(t *testing.T, d *daemonProc) string {
	t.Helper()
	withEnv(t, "ALLOC", "1000000", "RES", "3000000", "MODEL", "legit")
	c := startPython(t, d.socket, reporterScript)
	series := `vram_runtime_reserved_bytes{gpu="",parent="",pid="` + c.pid + `",pool="torch",uuid="GPU-11111111-2222-3333-4444-555555555555"} 3e+06`
	d.waitMetrics("the legitimate sender", func(m string) bool { return strings.Contains(m, series) })
	return series
}

// during scrapes while the attack runs until it prints its last line, checking the
// legitimate series on every scrape, and returns the attacker's last line, the last
// scrape and the daemon's peak RSS.
func during(t *testing.T, d *daemonProc, a *attacker, series string) (last, body string, peak int64) {
	t.Helper()
	w := watchRSS(t, d.cmd.Process.Pid)
	lines := make(chan string, 4)
	go func() {
		for a.lines.Scan() {
			lines <- a.lines.Text()
		}
		close(lines)
	}()
	for {
		body = d.metrics()
		if !strings.Contains(body, series) {
			t.Errorf("the legitimate sender's series is gone during the attack")
		}
		select {
		case l, ok := <-lines:
			if !ok {
				return last, body, w.peak()
			}
			last = l
			if strings.HasPrefix(l, "done") {
				return last, body, w.peak()
			}
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func report(t *testing.T, name string, d *daemonProc, before, peak int64, extra string) {
	t.Helper()
	after := vmRSS(t, d.cmd.Process.Pid)
	msg := fmt.Sprintf("hostile %s: RSS before %s, peak %s, after %s; %s", name, mib(before), mib(peak), mib(after), extra)
	t.Log(msg)
	if os.Getenv("VRAM_HOSTILE_LONG") == "1" {
		fmt.Println(msg)
	}
	if peak > rssBudget {
		t.Errorf("%s: RSS reached %s, over the %s budget", name, mib(peak), mib(rssBudget))
	}
}

func TestHostileSeriesAmplification(t *testing.T) {
	d := startHostileDaemon(t, "--push.ttl=30s")
	series := legit(t, d)
	before := vmRSS(t, d.cmd.Process.Pid)
	a := startAttacker(t, d.socket, "amplify", hostileDuration())
	last, body, peak := during(t, d, a, series)
	pools := counter(t, body, `vram_push_rejected_total{reason="too_many_process_pools"}`)
	over := counter(t, body, `vram_push_rejected_total{reason="too_many_series"}`)
	held := counter(t, body, `vram_push_series`)
	if pools == 0 || over == 0 {
		t.Errorf("rejects: too_many_process_pools %g, too_many_series %g; want both counted", pools, over)
	}
	if held > 4096 {
		t.Errorf("vram_push_series %g over the default bound 4096", held)
	}
	report(t, "series amplification", d, before, peak, fmt.Sprintf("%s; series held %g, rejected too_many_process_pools %g, too_many_series %g, /metrics %d bytes", last, held, pools, over, len(body)))
	memoryReturns(t, d, a, "series amplification", before)
	d.stop()
}

// memoryReturns ends the attacker and waits (bounded: a minute, the promise)
// until the daemon's RSS is back within twice what it was before the attack, scraping
// meanwhile as Prometheus would.
func memoryReturns(t *testing.T, d *daemonProc, a *attacker, name string, before int64) {
	t.Helper()
	_ = a.stdin.Close()
	_ = a.cmd.Process.Kill()
	_ = a.cmd.Wait()
	start := time.Now()
	for {
		d.metrics()
		rss := vmRSS(t, d.cmd.Process.Pid)
		if rss <= 2*before {
			msg := fmt.Sprintf("hostile %s: RSS back to %s (before %s) %s after the attacker left", name, mib(rss), mib(before), time.Since(start).Round(100*time.Millisecond))
			t.Log(msg)
			if os.Getenv("VRAM_HOSTILE_LONG") == "1" {
				fmt.Println(msg)
			}
			return
		}
		if time.Since(start) > time.Minute {
			t.Errorf("%s: RSS still %s a minute after the attacker left, over twice the %s before", name, mib(rss), mib(before))
			return
		}
		time.Sleep(time.Second)
	}
}

func TestHostileUUIDChurn(t *testing.T) {
	d := startHostileDaemon(t, "--push.ttl=30s")
	series := legit(t, d)
	before := vmRSS(t, d.cmd.Process.Pid)
	a := startAttacker(t, d.socket, "uuid_churn", hostileDuration())
	last, body, peak := during(t, d, a, series)
	keys := counter(t, body, `vram_trend_keys`)
	if keys > 2048 {
		t.Errorf("vram_trend_keys %g over the default bound 2048", keys)
	}
	report(t, "UUID churn", d, before, peak, fmt.Sprintf("%s; trend keys %g, untracked samples %g", last, keys, counter(t, body, `vram_trend_untracked_samples_total`)))
	memoryReturns(t, d, a, "UUID churn", before)
	d.stop()
}

// Idle connections from one non-root user cannot hold every slot, and are closed at
// the first-message deadline (2s here, to keep the test short; the default is 10s).
func TestHostileIdleConnections(t *testing.T) {
	d := startHostileDaemon(t, "--push.first-message-timeout=2s")
	series := legit(t, d)
	before := vmRSS(t, d.cmd.Process.Pid)
	a := startAttacker(t, d.socket, "idle", hostileDuration())
	connected := a.line(t)
	// While the attacker holds its share, another user still connects.
	if os.Getuid() == 0 {
		c, err := net.Dial("unixpacket", d.socket)
		if err != nil {
			t.Fatalf("root could not connect while nobody held its connections: %v", err)
		}
		if _, err := c.Write([]byte(`{"v":1,"runtime":"torch","devices":[]}`)); err != nil {
			t.Errorf("send: %v", err)
		}
		c.Close()
	}
	last, _, peak := during(t, d, a, series)
	body := d.waitMetrics("the idle connections reaped", func(m string) bool {
		v, _ := metricValue(m, `vram_push_disconnects_total{reason="first_message_timeout"}`)
		return v != "" && v != "0"
	})
	perUID := counter(t, body, `vram_push_disconnects_total{reason="too_many_connections_per_uid"}`)
	if os.Getuid() == 0 && perUID == 0 {
		t.Errorf("1100 connections of one uid: none refused at the per-uid bound")
	}
	report(t, "idle connections", d, before, peak, fmt.Sprintf("%s, %s; refused per uid %g, closed without a first message %g", connected, last, perUID,
		counter(t, body, `vram_push_disconnects_total{reason="first_message_timeout"}`)))
	d.stop()
}

// Connect/close churn from one user is refused at accept past its rate, and other users'
// connects still succeed.
func TestHostileConnectChurn(t *testing.T) {
	d := startHostileDaemon(t)
	series := legit(t, d)
	before := vmRSS(t, d.cmd.Process.Pid)
	cpu0 := cpuSeconds(t, d.cmd.Process.Pid)
	a := startAttacker(t, d.socket, "connect_churn", hostileDuration())
	failed := 0
	const tries = 20
	for range tries {
		c, err := net.Dial("unixpacket", d.socket)
		if err != nil {
			failed++
			continue
		}
		c.Close()
	}
	last, body, peak := during(t, d, a, series)
	cpu := cpuSeconds(t, d.cmd.Process.Pid) - cpu0
	limited := counter(t, body, `vram_push_disconnects_total{reason="connect_rate_limited"}`)
	if limited == 0 {
		t.Errorf("no connect was refused for rate")
	}
	if failed > 0 {
		t.Errorf("%d of %d connects of another user failed during the churn", failed, tries)
	}
	report(t, "connect churn", d, before, peak, fmt.Sprintf("%s; refused for rate %g; daemon CPU %.2fs over the attack; %d/%d other connects failed", last, limited, cpu, failed, tries))
	d.stop()
}

// A dead sender's connection kept open by a silent child, and its PID then given to an
// unrelated process: the dead sender's data must not be joined to the newcomer. The
// PID is reused on purpose through ns_last_pid, which needs root.
func TestHostilePIDReuseThroughInheritedConnection(t *testing.T) {
	if os.Getuid() != 0 {
		testenv.Unavailable(t, "reusing a PID on purpose needs root (ns_last_pid)")
	}
	d := startHostileDaemon(t, "--push.ttl=60s")
	a := startAttacker(t, d.socket, "inherit", time.Second)
	var parent, child int
	if _, err := fmt.Sscanf(a.line(t), "done parent=%d child=%d", &parent, &child); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	pidLabel := `pid="` + strconv.Itoa(parent) + `"`
	d.waitMetrics("the parent's data", func(m string) bool {
		return strings.Contains(m, `vram_runtime_reserved_bytes{gpu="",parent="",`+pidLabel)
	})
	// Reap the parent (a zombie keeps its PID), then hand its PID to an unrelated process.
	_ = a.cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for _, err := os.Stat(fmt.Sprintf("/proc/%d", parent)); err == nil; _, err = os.Stat(fmt.Sprintf("/proc/%d", parent)) {
		if time.Now().After(deadline) {
			t.Fatalf("the attacker's parent %d did not exit", parent)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var newcomer *exec.Cmd
	for range 50 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(parent-1)), 0); err != nil {
			testenv.Unavailable(t, "cannot set ns_last_pid: %v", err)
		}
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if cmd.Process.Pid == parent {
			newcomer = cmd
			break
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	if newcomer == nil {
		testenv.Unavailable(t, "another process took the PID each time (50 tries)")
	}
	t.Cleanup(func() { _ = newcomer.Process.Kill(); _ = newcomer.Wait() })
	body := d.waitMetrics("the dead sender's data left out", func(m string) bool {
		return !strings.Contains(m, `vram_runtime_reserved_bytes{gpu="",parent="",`+pidLabel)
	})
	if got := counter(t, body, `vram_push_pid_reused_total`); got != 1 {
		t.Errorf("vram_push_pid_reused_total = %g, want 1", got)
	}
	if got := counter(t, body, `vram_push_connections`); got != 1 {
		t.Errorf("the child's connection is gone (%g open); it must be left open, only its data left out", got)
	}
	d.stop()
}
