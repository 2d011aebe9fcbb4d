package apiserver_test

import (
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vram-exporter/vram_exporter/api"
	"github.com/vram-exporter/vram_exporter/apiserver"
	"github.com/vram-exporter/vram_exporter/apiserver/apitest"
	"github.com/vram-exporter/vram_exporter/join"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func serve(t *testing.T, v *join.View) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(apiserver.NewHandler(apitest.Static{V: v}, apiserver.Options{SafetyMarginBytes: 2 * apitest.GiB, Node: "gpu-node-7", Version: "1.0.0"}))
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, method, url string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func getJSON[T any](t *testing.T, url string) T {
	t.Helper()
	code, h, b := do(t, http.MethodGet, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, b)
	}
	if ct := h.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var out T
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields() // every field the server writes is in the exported type
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("decode %s: %v\n%s", url, err, b)
	}
	return out
}

func TestEndpointsDecodeIntoTheExportedTypes(t *testing.T) {
	srv := serve(t, apitest.View("node"))
	st := getJSON[api.Status](t, srv.URL+api.PathStatus)
	if st.Node != "gpu-node-7" || !st.NVMLUp || st.Demo || st.DriverVersion != "570.133.20" || st.GPUs != 2 ||
		st.Processes != 8 || st.PushSenders != 7 || st.SafetyMarginBytes != 2*apitest.GiB || !st.Time.Equal(apitest.Time) {
		t.Errorf("status: %+v", st)
	}

	gp := getJSON[api.GPUs](t, srv.URL+api.PathGPUs)
	if len(gp.GPUs) != 2 {
		t.Fatalf("gpus: %+v", gp)
	}
	g0, g1 := gp.GPUs[0], gp.GPUs[1]
	if g0.Exhaustion == nil || g0.Exhaustion.Seconds <= 0 || g0.Exhaustion.UsedBytesPerSecond <= 0 || g0.Processes != 4 {
		t.Errorf("gpu 0 exhaustion: %+v", g0.Exhaustion)
	}
	if g1.Exhaustion != nil {
		t.Errorf("gpu 1 is flat, got a forecast %+v", g1.Exhaustion)
	}
	if g1.Headroom == nil || g1.Headroom.Workers != 1 || g1.Headroom.LargestWorkerPID != 5102 || g1.Headroom.MarginBytes != 2*apitest.GiB {
		t.Errorf("gpu 1 headroom: %+v", g1.Headroom)
	}
	if len(gp.Duplicates) != 1 || gp.Duplicates[0].Service != "ranker" || len(gp.Duplicates[0].PIDs) != 3 ||
		gp.Duplicates[0].Basis != "service_label" || len(gp.Duplicates[0].WorkerBytes) != 3 {
		t.Errorf("duplicates: %+v", gp.Duplicates)
	}

	ps := getJSON[api.Processes](t, srv.URL+api.PathProcesses)
	byPID := map[uint32]api.Process{}
	for _, p := range ps.Processes {
		byPID[p.PID] = p
	}
	leak := byPID[4101]
	if leak.Trend == nil || leak.Trend.Verdict != "leak" || leak.Trend.KeyGrowth == nil || leak.Trend.KeyGrowth.Series != "allocated" ||
		leak.Labels["service"] != "chat" || *leak.AllocatedBytes != 14*apitest.GiB || *leak.CachedBytes != 6*apitest.GiB ||
		*leak.UnattributedBytes != 1*apitest.GiB || leak.Facts == nil || leak.Pools[0].PeakAllocatedBytes == nil || leak.Pools[0].LimitBytes != nil {
		t.Errorf("leak process: %+v", leak)
	}
	nvmlOnly := byPID[4104]
	if nvmlOnly.Pushed || nvmlOnly.AllocatedBytes != nil || nvmlOnly.UnattributedBytes != nil || *nvmlOnly.NVMLUsedBytes != 6*apitest.GiB ||
		nvmlOnly.Trend.KeyGrowth.Series != "used" {
		t.Errorf("NVML-only process: %+v", nvmlOnly)
	}
	if d := byPID[5101].Duplicate; d == nil || d.Workers != 3 || d.Service != "ranker" {
		t.Errorf("duplicate ref: %+v", d)
	}
	if byPID[5104].Duplicate != nil {
		t.Error("the warming-up 2 GiB worker is not a duplicate of the 18 GiB ones")
	}
}

func TestErrors(t *testing.T) {
	srv := serve(t, apitest.View("node"))
	for _, tc := range []struct {
		method, path string
		code         int
		want         string
	}{
		{http.MethodPost, api.PathGPUs, http.StatusMethodNotAllowed, "use GET"},
		{http.MethodDelete, api.PathProcesses, http.StatusMethodNotAllowed, "use GET"},
		{http.MethodGet, "/api/v1/nope", http.StatusNotFound, "no such API path /api/v1/nope"},
		{http.MethodGet, "/api/v1/", http.StatusNotFound, "no such API path"},
	} {
		code, h, b := do(t, tc.method, srv.URL+tc.path)
		if code != tc.code || h.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %q", tc.method, tc.path, code, h.Get("Content-Type"))
		}
		var e api.Error
		if err := json.Unmarshal(b, &e); err != nil || e.Status != tc.code || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s %s: body %s (%v), want error containing %q", tc.method, tc.path, b, err, tc.want)
		}
		if code == http.StatusMethodNotAllowed && h.Get("Allow") != "GET, HEAD" {
			t.Errorf("Allow header %q", h.Get("Allow"))
		}
	}
	nilView := serve(t, nil)
	if code, _, b := do(t, http.MethodGet, nilView.URL+api.PathStatus); code != http.StatusServiceUnavailable {
		t.Errorf("no view: %d %s", code, b)
	}
}

func TestNVMLDownGivesNoGPUsAndNullDriverFields(t *testing.T) {
	srv := serve(t, apitest.View("nvml_down"))
	gp := getJSON[api.GPUs](t, srv.URL+api.PathGPUs)
	if gp.NVMLUp || len(gp.GPUs) != 0 || gp.GPUs == nil {
		t.Errorf("gpus while NVML is down: %+v", gp)
	}
	// Pushed-only processes still group by their reserved footprint.
	if len(gp.Duplicates) != 1 {
		t.Errorf("duplicates: %+v", gp.Duplicates)
	}
	_, _, b := do(t, http.MethodGet, srv.URL+api.PathProcesses)
	if !strings.Contains(string(b), `"nvml_used_bytes": null`) || !strings.Contains(string(b), `"unattributed_bytes": null`) {
		t.Errorf("missing driver figures must be null:\n%s", b)
	}
}

// TestGolden pins the wire format of every endpoint on the node fixture; docs/api.md
// quotes it.
func TestGolden(t *testing.T) {
	srv := serve(t, apitest.View("node"))
	for _, p := range []string{api.PathStatus, api.PathGPUs, api.PathProcesses} {
		_, _, b := do(t, http.MethodGet, srv.URL+p)
		name := filepath.Join("testdata", "node_"+filepath.Base(p)+".golden")
		if *update {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(name, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if string(want) != string(b) {
			t.Errorf("%s differs from %s (run with -update if intended):\n%s", p, name, b)
		}
	}
}

func TestHeadIsAllowed(t *testing.T) {
	srv := serve(t, apitest.View("empty"))
	if code, _, _ := do(t, http.MethodHead, srv.URL+api.PathStatus); code != http.StatusOK {
		t.Errorf("HEAD: %d", code)
	}
}

// blockingSource holds every Latest call until release is closed, so a test can keep
// requests in flight without timing.
type blockingSource struct {
	entered chan struct{}
	release chan struct{}
	v       *join.View
}

func (b blockingSource) Latest() *join.View {
	b.entered <- struct{}{}
	<-b.release
	return b.v
}

// Requests beyond MaxInFlight get 503 with Retry-After and are counted; the ones in
// flight still complete.
func TestInFlightLimit(t *testing.T) {
	src := blockingSource{entered: make(chan struct{}, 8), release: make(chan struct{}), v: apitest.View("node")}
	h := apiserver.NewHandler(src, apiserver.Options{MaxInFlight: 2})
	srv := httptest.NewServer(h)
	defer srv.Close()
	codes := make(chan int, 2)
	for range 2 {
		go func() {
			resp, err := http.Get(srv.URL + api.PathProcesses)
			if err != nil {
				codes <- -1
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	<-src.entered
	<-src.entered // both slots are taken now
	resp, err := http.Get(srv.URL + api.PathGPUs)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "limit") {
		t.Errorf("third request: %d %q retry-after %q", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	if h.Rejected() != 1 {
		t.Errorf("rejected = %d, want 1", h.Rejected())
	}
	close(src.release)
	for range 2 {
		if c := <-codes; c != http.StatusOK {
			t.Errorf("in-flight request answered %d", c)
		}
	}
}

// facts.cmdline is "" unless Options.Cmdline: a command line can carry tokens, and the
// API is as unauthenticated as /metrics by default.
func TestCmdlineIsOptIn(t *testing.T) {
	for _, on := range []bool{false, true} {
		srv := httptest.NewServer(apiserver.NewHandler(apitest.Static{V: apitest.View("node")}, apiserver.Options{Cmdline: on}))
		ps := getJSON[api.Processes](t, srv.URL+api.PathProcesses)
		srv.Close()
		published := 0
		for _, p := range ps.Processes {
			if p.Facts == nil || p.Facts.Comm == "" {
				t.Fatalf("pid %d lost its facts or comm: %+v", p.PID, p.Facts)
			}
			if p.Facts.Cmdline != "" {
				published++
			}
		}
		if on != (published > 0) || (!on && published != 0) {
			t.Errorf("Cmdline %v: %d of %d processes carry a command line", on, published, len(ps.Processes))
		}
	}
}
