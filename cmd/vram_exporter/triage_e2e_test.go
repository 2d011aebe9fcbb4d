package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/vram-exporter/vram_exporter/apiserver"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vram-exporter/vram_exporter/api"
	"github.com/vram-exporter/vram_exporter/apiserver/apitest"
	"github.com/vram-exporter/vram_exporter/triage"
)

// runTriage runs the real subcommand in-process, as `vram_exporter triage ARGS…`.
func runTriage(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"triage"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestTriageAgainstRealDaemonWithPythonClients(t *testing.T) {
	d := startDaemon(t)

	withEnv(t, "ALLOC", "1000000", "RES", "3000000", "MODEL", "a")
	a := startPython(t, d.socket, reporterScript)
	withEnv(t, "ALLOC", "2000000", "RES", "2500000", "MODEL", "b")
	b := startPython(t, d.socket, reporterScript)
	// The API reads the same joined view as /metrics: once both show there, both are in it.
	d.waitMetrics("both clients", func(m string) bool {
		return strings.Contains(m, `pid="`+a.pid+`"`) && strings.Contains(m, `pid="`+b.pid+`"`)
	})

	code, out, errs := runTriage(t, "--url", "http://"+d.addr, "--output", "json")
	if code != 0 {
		t.Fatalf("triage exit %d; stderr: %s", code, errs)
	}
	var r triage.Report
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("triage JSON: %v\n%s", err, out)
	}
	if r.NVMLUp || len(r.Warnings) == 0 || !strings.HasPrefix(r.Warnings[0], "NVML is down") {
		t.Errorf("the daemon runs without NVML; warnings %v", r.Warnings)
	}
	if r.Node == "" || r.Time.IsZero() {
		t.Errorf("header: node %q time %v", r.Node, r.Time)
	}
	byPID := map[string]triage.Process{}
	for _, p := range r.Processes {
		byPID[itoa(p.PID)] = p
	}
	for _, tc := range []struct {
		pid, model string
		alloc, res uint64
	}{{a.pid, "a", 1000000, 3000000}, {b.pid, "b", 2000000, 2500000}} {
		p, ok := byPID[tc.pid]
		if !ok {
			t.Errorf("pid %s missing from triage: %+v", tc.pid, r.Processes)
			continue
		}
		if p.Service != "e2e" || p.Model != tc.model || p.Comm == "" || p.UUID != "GPU-11111111-2222-3333-4444-555555555555" {
			t.Errorf("pid %s: %+v", tc.pid, p)
		}
		// Top-level pools only: the nested vllm.kv_cache pool lives inside torch.
		if p.AllocatedBytes == nil || *p.AllocatedBytes != tc.alloc || p.ReservedBytes == nil || *p.ReservedBytes != tc.res ||
			p.CachedBytes == nil || *p.CachedBytes != tc.res-tc.alloc || p.UsedBytes != nil {
			t.Errorf("pid %s bytes: %+v", tc.pid, p)
		}
		if p.Diagnosis == "" {
			t.Errorf("pid %s has no diagnosis", tc.pid)
		}
	}

	// The pools themselves, through the API the triage read.
	resp, err := http.Get("http://" + d.addr + api.PathProcesses)
	if err != nil {
		t.Fatal(err)
	}
	var ps api.Processes
	if err := json.NewDecoder(resp.Body).Decode(&ps); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	found := 0
	for _, p := range ps.Processes {
		if itoa(p.PID) != a.pid {
			continue
		}
		found++
		if len(p.Pools) != 2 || p.Pools[0].Name != "torch" || p.Pools[1].Name != "vllm.kv_cache" || p.Pools[1].Parent != "torch" ||
			p.Pools[0].PeakAllocatedBytes == nil || *p.Pools[0].PeakAllocatedBytes != 2000000 || *p.Pools[0].OOMs != 1 ||
			len(p.Runtimes) != 1 || p.Runtimes[0].Name != "torch" || p.Runtimes[0].Version != "2.11.0" || p.Facts == nil {
			t.Errorf("pid %s through the API: %+v", a.pid, p)
		}
	}
	if found != 1 {
		t.Errorf("pid %s appears %d times in %s", a.pid, found, api.PathProcesses)
	}

	// The table names both processes and the NVML warning, without colour (not a terminal).
	code, out, errs = runTriage(t, "--url", d.addr) // scheme-less is accepted
	if code != 0 {
		t.Fatalf("triage table exit %d: %s", code, errs)
	}
	for _, want := range []string{"WARNING: NVML is down", a.pid + " ", b.pid + " ", "e2e/a", "e2e/b"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour codes written to a non-terminal")
	}
	a.exit(t)
	b.exit(t)
	d.stop()
}

func TestTriageBasicAuthLikeMetrics(t *testing.T) {
	dir := t.TempDir()
	webCfg := filepath.Join(dir, "web.yml")
	// bcrypt of "s3cret", cost 4.
	const hash = "$2a$04$l37.syLx2vV1qe6YLfqk4eOP6yDCjB1Ptcrgt/JrP3GUmdvtoGE5q"
	if err := os.WriteFile(webCfg, []byte("basic_auth_users:\n  oncall: "+hash+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "--web.config.file="+webCfg)

	code, _, errs := runTriage(t, "--url", "http://"+d.addr)
	if code != 1 || !strings.Contains(errs, "answered 401 Unauthorized") || !strings.Contains(errs, "--user and --password-file") {
		t.Errorf("without credentials: exit %d, stderr %q", code, errs)
	}
	code, out, errs := runTriage(t, "--url", "http://"+d.addr, "--user", "oncall", "--password-file", pw, "--output", "json")
	if code != 0 || !strings.Contains(out, `"nvml_up": false`) {
		t.Errorf("with credentials: exit %d, stderr %q, out %s", code, errs, out)
	}
	d.stop()
}

func TestTriageUnreachableDaemon(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	code, out, errs := runTriage(t, "--url", url)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if out != "" {
		t.Errorf("stdout must stay empty on error, got %q", out)
	}
	if !strings.HasPrefix(errs, "vram_exporter triage: cannot reach vram_exporter at "+url+": ") ||
		!strings.Contains(errs, "is the daemon running? set --url") {
		t.Errorf("stderr %q", errs)
	}
	if code, _, errs := runTriage(t, "--output", "yaml"); code != 2 || !strings.Contains(errs, "yaml") {
		t.Errorf("bad --output: exit %d %q", code, errs)
	}
}

func itoa(pid uint32) string {
	b, _ := json.Marshal(pid)
	return string(b)
}

// cancelAfter cancels a context once n JSON documents have been written.
type cancelAfter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if strings.Count(c.buf.String(), "\n}\n") >= c.n {
		c.cancel()
	}
	return len(p), nil
}

func TestTriageWatchRefreshesUntilCancelled(t *testing.T) {
	var hits atomic.Int32
	h := apiserver.NewHandler(apitest.Static{V: apitest.View("node")}, apiserver.Options{Node: "n"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &cancelAfter{n: 3, cancel: cancel}
	var errb bytes.Buffer
	c := &triageCmd{url: srv.URL, watch: time.Millisecond, output: "json", timeout: 5 * time.Second}
	if code := c.run(ctx, out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	dec := json.NewDecoder(&out.buf)
	docs := 0
	for dec.More() {
		var r triage.Report
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		docs++
	}
	if docs < 3 || hits.Load() < 9 {
		t.Errorf("%d documents, %d requests; want ≥ 3 refreshes of 3 requests", docs, hits.Load())
	}
}
