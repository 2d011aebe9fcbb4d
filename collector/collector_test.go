package collector

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/collector/collectortest"
	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/leak/trend"
	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/nvml/nvmltest"
	"github.com/vram-exporter/vram_exporter/procinfo"
	"github.com/vram-exporter/vram_exporter/push"
)

const (
	MiB  = 1 << 20
	GiB  = 1 << 30
	gpuA = "GPU-aaaaaaaa-0000-0000-0000-000000000000"
)

type staticView = collectortest.StaticView
type staticPush = collectortest.StaticPush

var now = time.Unix(1_700_000_000, 0)

func fixtureView() *join.View { return collectortest.Node(now, trend.Leak) }

func fixturePushStats() push.Stats { return collectortest.PushStats() }

func newTestRegistry(t testing.TB, v *join.View, ps PushStats) prometheus.Gatherer {
	t.Helper()
	return New(staticView{V: v}, ps, zap.NewNop()).WithNow(func() time.Time { return now })
}

// TestGolden compares the whole exposition (minus the per-scrape durations) with
// testdata/golden.prom. Regenerate with: go test ./collector -run TestGolden -update
func TestGolden(t *testing.T) {
	reg := newTestRegistry(t, fixtureView(), staticPush{S: fixturePushStats()})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		if mf.GetName() != "vram_collector_duration_seconds" {
			names = append(names, mf.GetName())
		}
	}
	golden := filepath.Join("testdata", "golden.prom")
	if *update {
		var sb strings.Builder
		for _, mf := range mfs {
			if mf.GetName() == "vram_collector_duration_seconds" {
				continue
			}
			if err := writeFamily(&sb, mf); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(golden, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(golden)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := testutil.GatherAndCompare(reg, f, names...); err != nil {
		t.Fatal(err)
	}
}

func TestLintClean(t *testing.T) {
	c := New(staticView{V: fixtureView()}, staticPush{S: fixturePushStats()}, zap.NewNop())
	problems, err := testutil.GatherAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	// The same families through a real Registry's consistency checks (duplicate series,
	// label names per family, HELP and type): what the emitter skips at scrape time.
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(asCollector{c}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("the families are not consistent: %v", err)
	}
}

func TestNVMLDownAndNoPushSocket(t *testing.T) {
	v := &join.View{Time: now}
	reg := newTestRegistry(t, v, nil)
	want := `
# HELP vram_nvml_up 1 if NVML is initialised and the last poll enumerated the GPUs, 0 if NVML is unavailable (no driver, library not found, driver gone).
# TYPE vram_nvml_up gauge
vram_nvml_up 0
# HELP vram_collector_success 1 if the named collector's source was healthy at the last sample (nvml: NVML up; process: procfs readable), else 0.
# TYPE vram_collector_success gauge
vram_collector_success{collector="capacity"} 1
vram_collector_success{collector="gpu"} 1
vram_collector_success{collector="nvml"} 0
vram_collector_success{collector="process"} 1
vram_collector_success{collector="push"} 1
vram_collector_success{collector="runtime"} 1
vram_collector_success{collector="trend"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "vram_nvml_up", "vram_collector_success"); err != nil {
		t.Fatal(err)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "vram_gpu_") || strings.HasPrefix(mf.GetName(), "vram_push_connections") {
			t.Errorf("%s exported without NVML / push socket", mf.GetName())
		}
	}
}

func TestEveryMetricHasHelpAndBaseUnits(t *testing.T) {
	reg := newTestRegistry(t, fixtureView(), staticPush{S: fixturePushStats()})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		n := mf.GetName()
		if mf.GetHelp() == "" {
			t.Errorf("%s has no HELP", n)
		}
		if strings.Contains(n, "mib") || strings.Contains(n, "_mb") || strings.Contains(n, "milli") {
			t.Errorf("%s is not in base units", n)
		}
		if strings.HasSuffix(n, "_total") != (mf.GetType().String() == "COUNTER") {
			t.Errorf("%s: _total suffix must be used exactly on counters (type %s)", n, mf.GetType())
		}
	}
}

// benchView is 8 H200s × 64 processes, every process also pushing a torch pool with
// trend results: the scrape the target is about.
func benchView(pushed bool) *join.View {
	v := &join.View{Time: now, NVML: nvml.Snapshot{Up: true, DriverVersion: "580", NVMLVersion: "13"}}
	for gi, g := range nvmltest.H200s(8, 64) {
		uuid := "GPU-" + strconv.Itoa(gi) + "-bench"
		v.GPUs = append(v.GPUs, join.GPU{GPU: nvml.GPU{Index: gi, UUID: uuid, Name: "NVIDIA H200", MemoryAPI: "v2",
			TotalBytes: g.Total, UsedBytes: g.Used, BAR1Valid: true}, HasTrend: true})
		for _, p := range g.Procs {
			if !pushed {
				v.Processes = append(v.Processes, join.Process{PID: p.PID, UUID: uuid, GPU: strconv.Itoa(gi), HasNVML: true, UsedBytes: p.Used,
					HasFacts: true, Facts: procinfo.Facts{PID: p.PID, Comm: "python3", RSSBytes: GiB, StartTime: now}})
				continue
			}
			v.Processes = append(v.Processes, join.Process{
				PID: p.PID, UUID: uuid, GPU: strconv.Itoa(gi), HasNVML: true, UsedBytes: p.Used,
				HasFacts: true, Facts: procinfo.Facts{PID: p.PID, Comm: "python3", RSSBytes: GiB},
				Pushed: true, Runtimes: []join.Runtime{{Name: "torch", Version: "2.11", Labels: map[string]string{"service": "s"}}},
				Pools:          []push.Pool{{Name: "torch", Allocated: p.Used / 2, Reserved: p.Used * 3 / 4}},
				AllocatedBytes: p.Used / 2, ReservedBytes: p.Used * 3 / 4, HasUnattributed: true, UnattributedBytes: int64(p.Used / 4),
				HasTrend: true, Trend: trend.Result{Verdict: trend.Steady, Growth: []trend.Growth{
					{Series: "allocated", Window: "short", Valid: true}, {Series: "reserved", Window: "short", Valid: true},
					{Series: "used", Window: "short", Valid: true}, {Series: "unattributed", Window: "short", Valid: true},
				}},
			})
		}
	}
	return v
}

// BenchmarkScrape is one HTTP scrape (gather + text encoding) of 8 GPUs × 64 processes
// through the daemon's kind of registry: "nvml" has the driver view only, "pushed" adds a
// pushed pool and trend results for every process. allocs/op ÷ 512 is the allocations
// per process.
func BenchmarkScrape(b *testing.B) {
	for _, bc := range []struct {
		name   string
		pushed bool
	}{{"nvml", false}, {"pushed", true}} {
		b.Run(bc.name, func(b *testing.B) {
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector())
			c := New(staticView{V: benchView(bc.pushed)}, staticPush{S: fixturePushStats()}, zap.NewNop())
			h := promhttp.HandlerForTransactional(NewTransactional(c, reg), promhttp.HandlerOpts{})
			req := httptest.NewRequest("GET", "/metrics", nil)
			w := &discardWriter{header: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, req)
				if w.code != 200 || w.n == 0 {
					b.Fatal(w.code, w.n)
				}
			}
		})
	}
}

// TestReadmeListsEveryMetric keeps the README's metrics table true to the code.
// BenchmarkGather is the exporter's own part of a scrape: building the families from the
// view, without client_golang's text encoding (which BenchmarkScrape adds).
func BenchmarkGather(b *testing.B) {
	for _, bc := range []struct {
		name   string
		pushed bool
	}{{"nvml", false}, {"pushed", true}} {
		b.Run(bc.name, func(b *testing.B) {
			c := New(staticView{V: benchView(bc.pushed)}, staticPush{S: fixturePushStats()}, zap.NewNop())
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Gather(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// discardWriter is a ResponseWriter that counts and drops the body, as a socket would
// take it: httptest.ResponseRecorder's growing buffer would dominate the benchmark.
type discardWriter struct {
	header http.Header
	code   int
	n      int
}

func (d *discardWriter) Header() http.Header  { return d.header }
func (d *discardWriter) WriteHeader(code int) { d.code = code }
func (d *discardWriter) Write(p []byte) (int, error) {
	if d.code == 0 {
		d.code = 200
	}
	d.n += len(p)
	return len(p), nil
}

// Pooled emitters are reused only after promhttp has encoded their families: concurrent
// scrapes (under -race) must each get a whole, identical exposition.
func TestConcurrentScrapesShareNothing(t *testing.T) {
	c := New(staticView{V: benchView(true)}, staticPush{S: fixturePushStats()}, zap.NewNop()).WithNow(func() time.Time { return now })
	h := promhttp.HandlerForTransactional(NewTransactional(c, nil), promhttp.HandlerOpts{})
	scrape := func() string {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		return w.Body.String()
	}
	strip := func(body string) string { // per-scrape durations differ
		var keep []string
		for _, l := range strings.Split(body, "\n") {
			if !strings.HasPrefix(l, "vram_collector_duration_seconds{") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	want := strip(scrape())
	errs := make(chan string, 8)
	for range 8 {
		go func() {
			for range 5 {
				if got := strip(scrape()); got != want {
					errs <- got
					return
				}
			}
			errs <- ""
		}()
	}
	for range 8 {
		if got := <-errs; got != "" {
			t.Fatalf("a concurrent scrape differs from a lone one (%d vs %d bytes)", len(got), len(want))
		}
	}
}

// Two reporters in one process that differ only in a client label sorting before "pid"
// (app, env, model) are two series, not one: the de-duplication key once dropped such
// labels.
func TestRuntimeInfoKeepsLabelsSortingBeforePID(t *testing.T) {
	v := &join.View{Time: now, Processes: []join.Process{{
		PID: 7, UUID: gpuA,
		Runtimes: []join.Runtime{
			{Name: "torch", Version: "2.11", Labels: map[string]string{"model": "a", "service": "s"}},
			{Name: "torch", Version: "2.11", Labels: map[string]string{"model": "b", "service": "s"}},
		},
	}}}
	want := `
# HELP vram_runtime_info Runtime of a pushing process with its client labels (service, model, …); always 1.
# TYPE vram_runtime_info gauge
vram_runtime_info{model="a",pid="7",runtime="torch",runtime_version="2.11",service="s"} 1
vram_runtime_info{model="b",pid="7",runtime="torch",runtime_version="2.11",service="s"} 1
`
	if err := testutil.GatherAndCompare(newTestRegistry(t, v, nil), strings.NewReader(want), "vram_runtime_info"); err != nil {
		t.Fatal(err)
	}
}

// The command line is published only when asked for (collector.process_cmdline): it can
// carry tokens, and /metrics is unauthenticated by default. comm always is.
func TestProcessCmdlineIsOptIn(t *testing.T) {
	for _, on := range []bool{false, true} {
		c := New(staticView{V: fixtureView()}, nil, zap.NewNop()).WithNow(func() time.Time { return now }).WithCmdline(on)
		mfs, err := c.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var labels map[string]string
		for _, mf := range mfs {
			if mf.GetName() == "vram_process_info" {
				labels = map[string]string{}
				for _, l := range mf.GetMetric()[0].GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
			}
		}
		want := ""
		if on {
			want = "python3 serve.py"
		}
		if labels == nil || labels["cmdline"] != want || labels["comm"] != "python3" {
			t.Errorf("WithCmdline(%v): vram_process_info labels %v, want cmdline %q and comm python3", on, labels, want)
		}
	}
}

// TestRequestsInFlight: a process whose client counts its requests has the count as a
// gauge, 0 included (a moment at rest); one whose client does not has no such series.
func TestRequestsInFlight(t *testing.T) {
	v := fixtureView()
	var counted *join.Process
	for i := range v.Processes {
		if p := &v.Processes[i]; p.Pushed && counted == nil {
			counted = p
		} else if p.HasInFlight {
			t.Fatalf("the fixture's pid %d reports its requests in flight too: the test wants one that does not", p.PID)
		}
	}
	if counted == nil {
		t.Fatal("the fixture has no pushing process")
	}
	for _, n := range []uint64{0, 7} {
		counted.InFlight, counted.HasInFlight = n, true
		mfs, err := newTestRegistry(t, v, nil).Gather()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, mf := range mfs {
			if mf.GetName() != "vram_process_requests_in_flight" {
				continue
			}
			for _, m := range mf.GetMetric() {
				pid := ""
				for _, l := range m.GetLabel() {
					if l.GetName() == "pid" {
						pid = l.GetValue()
					}
				}
				got = append(got, pid+"="+strconv.FormatFloat(m.GetGauge().GetValue(), 'g', -1, 64))
			}
		}
		want := strconv.Itoa(int(counted.PID)) + "=" + strconv.FormatUint(n, 10)
		if len(got) != 1 || got[0] != want {
			t.Errorf("in flight %d: vram_process_requests_in_flight %v, want only %s", n, got, want)
		}
	}
}
