package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pythonClient starts the real Python client (client/python) as its own process. The
// script gets the socket path in argv[1] and the test talks to it over stdin/stdout:
// it prints "ready <pid>" once its first message is sent and exits when stdin closes.
type pythonClient struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	pid   string
	lines *bufio.Scanner
}

func python3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		// Not a skip: the real client against the real daemon is part of the contract.
		t.Fatalf("python3 is required for the client end-to-end tests: %v", err)
	}
	return p
}

func startPython(t *testing.T, socket, script string) *pythonClient {
	t.Helper()
	clientDir, err := filepath.Abs(filepath.Join("..", "..", "client", "python"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python3(t), "-c", script, socket)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+clientDir, "PYTHONUNBUFFERED=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &pythonClient{cmd: cmd, stdin: stdin, lines: bufio.NewScanner(stdout)}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if !c.lines.Scan() {
		t.Fatalf("python client printed nothing: %v", c.lines.Err())
	}
	f := strings.Fields(c.lines.Text())
	if len(f) != 2 || f[0] != "ready" {
		t.Fatalf("python client said %q, want 'ready <pid>'", c.lines.Text())
	}
	c.pid = f[1]
	if c.pid != fmt.Sprint(cmd.Process.Pid) {
		t.Fatalf("python reports pid %s but the process is %d", c.pid, cmd.Process.Pid)
	}
	return c
}

func (c *pythonClient) exit(t *testing.T) {
	t.Helper()
	_ = c.stdin.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("python client exit: %v", err)
	}
}

// reporterScript pushes one static pool through the real Reporter, then waits for stdin
// to close. A TensorRT-style extra field checks that unknown pool fields are accepted.
const reporterScript = `
import os, sys
import vram_exporter_client as vc
uuid = os.environ.get("UUID", "GPU-11111111-2222-3333-4444-555555555555")
r = vc.Reporter(socket_path=sys.argv[1], interval=0.2, labels={"service": "e2e", "model": os.environ.get("MODEL", "m")},
                runtime="torch", runtime_version="2.11.0", sources=[])
r.set_pool(uuid, "torch", allocated=int(os.environ["ALLOC"]), reserved=int(os.environ["RES"]), peak_allocated=int(os.environ["ALLOC"]) * 2,
           alloc_retries=3, ooms=1)
r.set_pool(uuid, "vllm.kv_cache", allocated=1024, reserved=1024, parent="torch", weight_streaming_budget=7)
if not r.sample_now():
    print("send failed", r.errors, file=sys.stderr); sys.exit(1)
r.start()
print("ready", os.getpid(), flush=True)
sys.stdin.read()
r.stop()
`

// liarScript sends a raw protocol message claiming to be PID 1.
const liarScript = `
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
msg = {"v": 1, "pid": 1, "runtime": "torch", "devices": [{"uuid": "GPU-99999999-2222-3333-4444-555555555555",
       "pools": [{"name": "torch", "allocated": 5, "reserved": 9}]}]}
s.send(json.dumps(msg).encode())
print("ready", os.getpid(), flush=True)
sys.stdin.read()
`

func withEnv(t *testing.T, kv ...string) {
	t.Helper()
	for i := 0; i < len(kv); i += 2 {
		t.Setenv(kv[i], kv[i+1])
	}
}

func TestRealPythonClientAgainstRealDaemon(t *testing.T) {
	d := startDaemon(t)

	withEnv(t, "ALLOC", "1000000", "RES", "3000000", "MODEL", "a")
	a := startPython(t, d.socket, reporterScript)
	withEnv(t, "ALLOC", "2000000", "RES", "2500000", "MODEL", "b")
	b := startPython(t, d.socket, reporterScript) // same GPU, another process
	liar := startPython(t, d.socket, liarScript)

	uuid := "GPU-11111111-2222-3333-4444-555555555555"
	body := d.waitMetrics("both clients and the liar", func(m string) bool {
		return strings.Contains(m, `vram_runtime_allocated_bytes{gpu="",parent="",pid="`+a.pid+`"`) &&
			strings.Contains(m, `vram_runtime_allocated_bytes{gpu="",parent="",pid="`+b.pid+`"`) &&
			strings.Contains(m, `pid="`+liar.pid+`"`)
	})
	series := func(name, pid, pool, parent string) string {
		return fmt.Sprintf(`%s{gpu="",parent="%s",pid="%s",pool="%s",uuid="%s"}`, name, parent, pid, pool, uuid)
	}
	checks := map[string]string{
		series("vram_runtime_allocated_bytes", a.pid, "torch", ""):             "1e+06",
		series("vram_runtime_reserved_bytes", a.pid, "torch", ""):              "3e+06",
		series("vram_runtime_cached_bytes", a.pid, "torch", ""):                "2e+06",
		series("vram_runtime_peak_allocated_bytes", a.pid, "torch", ""):        "2e+06",
		series("vram_runtime_alloc_retries_total", a.pid, "torch", ""):         "3",
		series("vram_runtime_ooms_total", a.pid, "torch", ""):                  "1",
		series("vram_runtime_allocated_bytes", b.pid, "torch", ""):             "2e+06",
		series("vram_runtime_cached_bytes", b.pid, "torch", ""):                "500000",
		series("vram_runtime_reserved_bytes", a.pid, "vllm.kv_cache", "torch"): "1024",
	}
	for s, want := range checks {
		if got, ok := metricValue(body, s); !ok || got != want {
			t.Errorf("%s = %q (present %v), want %s", s, got, ok, want)
		}
	}
	if !strings.Contains(body, `vram_runtime_info{model="a",pid="`+a.pid+`",runtime="torch",runtime_version="2.11.0",service="e2e"} 1`) {
		t.Errorf("runtime info with client labels missing for pid %s", a.pid)
	}
	// The liar claimed PID 1: the kernel's PID wins, and nothing is exported for pid 1.
	if strings.Contains(body, `pid="1"`) {
		t.Error("a PID written in the message was used; the kernel's PID must be the identity")
	}
	if !strings.Contains(body, `vram_runtime_reserved_bytes{gpu="",parent="",pid="`+liar.pid+`",pool="torch",uuid="GPU-99999999-2222-3333-4444-555555555555"} 9`) {
		t.Error("the liar's data is not attributed to its real PID")
	}
	if got, _ := metricValue(body, `vram_push_rejected_total{reason="schema"}`); got != "0" {
		t.Errorf("unknown pool fields must be accepted; schema rejects = %s", got)
	}

	// A client that exits vanishes from the next scrape: connection close removes it.
	a.exit(t)
	body = d.waitMetrics("pid "+a.pid+" to vanish", func(m string) bool { return !strings.Contains(m, `pid="`+a.pid+`"`) })
	if !strings.Contains(body, `pid="`+b.pid+`"`) {
		t.Error("the other client on the same GPU vanished too")
	}
	b.exit(t)
	liar.exit(t)
	d.stop()
}

// requestScript holds two requests in flight through the real client's request(), then
// ends them when told (a line on stdin), and waits.
const requestScript = `
import os, sys, threading
import vram_exporter_client as vc
r = vc.Reporter(socket_path=sys.argv[1], interval=0.1, runtime="torch", runtime_version="2.11.0", sources=[])
r.set_pool("GPU-11111111-2222-3333-4444-555555555555", "torch", allocated=1000000, reserved=3000000)
a, b = r.request(), r.request()
a.__enter__(); b.__enter__()
r.start()
print("ready", os.getpid(), flush=True)
sys.stdin.readline()
b.__exit__(None, None, None); a.__exit__(None, None, None)
sys.stdin.read()
r.stop()
`

// TestRealClientRequestsInFlight: the real Python client's request() reaches the real
// daemon: /metrics shows the count (two in flight, then none once they end) and the
// recorded trace, what replay and the evaluation read, carries both.
func TestRealClientRequestsInFlight(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	d := startDaemon(t, "--trace.record="+trace)
	p := startPython(t, d.socket, requestScript)
	inFlight := func(n string) func(string) bool {
		return func(m string) bool {
			v, ok := metricValue(m, `vram_process_requests_in_flight{gpu="",pid="`+p.pid+`",uuid="GPU-11111111-2222-3333-4444-555555555555"}`)
			return ok && v == n
		}
	}
	d.waitMetrics("two requests held", inFlight("2"))
	if _, err := io.WriteString(p.stdin, "\n"); err != nil {
		t.Fatal(err)
	}
	d.waitMetrics("the requests ended", inFlight("0"))
	p.exit(t)
	d.stop() // flushes the trace
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"in_flight":2`, `"in_flight":0`} {
		if !strings.Contains(string(b), `"pid":`+p.pid+`,`) || !strings.Contains(string(b), want) {
			t.Errorf("the trace of pid %s lacks %s:\n%s", p.pid, want, b)
		}
	}
}
