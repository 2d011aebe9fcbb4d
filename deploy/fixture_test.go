package deploy

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/collector"
	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/procinfo"
	"github.com/vram-exporter/vram_exporter/push"
	"github.com/vram-exporter/vram_exporter/state"
	"github.com/vram-exporter/vram_exporter/trend"
)

// The exporter's real collectors over a complete node (copied from the collector
// package's fixture, which this package must not import): one GPU with NVML data and a
// forecast, a pushing torch process with every optional pool field and a nested pool,
// an NVML-only process, NVML error counters, push statistics.

const (
	mib  = 1 << 20
	gib  = 1 << 30
	gpuA = "GPU-aaaaaaaa-0000-0000-0000-000000000000"
)

type staticView struct{ v *state.View }

func (s staticView) Latest() *state.View { return s.v }

type staticPush struct{ s push.Stats }

func (s staticPush) Stats() push.Stats { return s.s }

func fixtureView(now time.Time, verdict trend.Verdict) *state.View {
	set := func(v uint64) state.OptionalBytes { return state.OptionalBytes{Value: v, Set: true} }
	return &state.View{
		Time: now,
		NVML: nvml.Snapshot{
			Up: true, DriverVersion: "580.159.04", NVMLVersion: "13.580.159.04", PollDuration: 2 * time.Millisecond,
			Errors: map[nvml.ErrorKey]uint64{{Call: "GetBAR1MemoryInfo", Error: "not_supported"}: 3},
		},
		GPUs: []state.GPU{{
			GPU: nvml.GPU{Index: 0, UUID: gpuA, Name: "NVIDIA H200", PCIBusID: "00000000:18:00.0", MemoryAPI: "v2",
				TotalBytes: 143771 * mib, UsedBytes: 20 * gib, FreeBytes: 143771*mib - 20*gib - 577*mib, DriverReservedBytes: 577 * mib,
				BAR1Valid: true, BAR1TotalBytes: 256 * gib, BAR1UsedBytes: 8 * mib, GPUInstanceID: -1, ComputeInstanceID: -1},
			HasTrend: true,
			Trend: trend.GPUResult{Growth: []trend.Growth{
				{Series: "used", Window: "short", BytesPerSecond: 1 * mib, Fit: 0.97, Valid: true},
				{Series: "used", Window: "long", BytesPerSecond: 1 * mib, Fit: 0.95, Valid: true},
			}, ExhaustionSeconds: 3600, ExhaustionValid: true},
		}},
		Processes: []state.Process{
			{
				PID: 4242, UUID: gpuA, GPU: "0", HasNVML: true, UsedBytes: 2 * gib,
				HasFacts: true, Facts: procinfo.Facts{PID: 4242, Comm: "python3", Cmdline: "python3 serve.py", RSSBytes: 3 * gib,
					StartTime: now.Add(-time.Hour), ContainerID: "containerd://" + strings.Repeat("ab", 32), PodUID: "0f8b6a3e-1111-2222-3333-444455556666"},
				Pushed:   true,
				Runtimes: []state.Runtime{{Name: "torch", Version: "2.11.0", Labels: map[string]string{"service": "ranker", "model": "bert"}}},
				Pools: []state.Pool{
					{Name: "torch", Allocated: 1 * gib, Reserved: 1536 * mib, PeakAllocated: set(1200 * mib), Active: set(1100 * mib),
						InactiveSplit: set(2 * mib), Limit: set(100 * gib), AllocRetries: set(1), OOMs: set(0)},
					{Name: "vllm.kv_cache", Parent: "torch", Allocated: 512 * mib, Reserved: 512 * mib},
				},
				AllocatedBytes: 1 * gib, ReservedBytes: 1536 * mib, LastPush: now.Add(-2 * time.Second),
				HasUnattributed: true, UnattributedBytes: 512 * mib,
				HasTrend: true, Trend: trend.Result{Verdict: verdict, Growth: []trend.Growth{
					{Series: "allocated", Window: "short", BytesPerSecond: 204800, Fit: 0.99, Valid: true},
					{Series: "allocated", Window: "long", BytesPerSecond: 204800, Fit: 0.98, Valid: true},
				}},
			},
			{PID: 5151, UUID: gpuA, GPU: "0", HasNVML: true, UsedBytes: 1 * gib},
		},
		Senders: []push.Sender{{ConnID: 1, PID: 4242, LastSeen: now.Add(-2 * time.Second), Msg: push.Message{ClientDropped: 4}}},
	}
}

func fixturePushStats() push.Stats {
	return push.Stats{Connections: 1, ConnectionsAccepted: 3, MessagesAccepted: 100, BytesReceived: 50000,
		Rejected: map[string]uint64{"invalid_json": 2}, Disconnects: map[string]uint64{}}
}

// fixtureRegistry gathers the exporter's metrics over the fixture view, plus the build
// info metric the daemon adds (cmd/vram_exporter registers a version collector under
// that name). The collector is used through the client_golang interfaces only, as a
// prometheus.Gatherer or a prometheus.Collector, whichever it implements.
func fixtureRegistry(t testing.TB, verdict trend.Verdict) prometheus.Gatherer {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "vram_exporter_build_info", Help: "build metadata (stands in for the daemon's version collector)",
		ConstLabels: prometheus.Labels{"version": "test", "revision": "test"},
	}))
	var c any = collector.New(staticView{fixtureView(time.Now(), verdict)}, staticPush{fixturePushStats()}, zap.NewNop())
	switch c := c.(type) {
	case prometheus.Gatherer:
		return prometheus.Gatherers{reg, c}
	case prometheus.Collector:
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
		return reg
	}
	t.Fatalf("collector.New returned %T, neither a prometheus.Gatherer nor a prometheus.Collector", c)
	return nil
}

// exporterMetrics maps every metric name the exporter produces to its label names.
func exporterMetrics(t testing.TB) map[string]map[string]bool {
	t.Helper()
	mfs, err := fixtureRegistry(t, trend.Leak).Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	for _, mf := range mfs {
		ls := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				ls[lp.GetName()] = true
			}
		}
		out[mf.GetName()] = ls
	}
	// Families the fixture leaves empty (or that a companion collector exports) still
	// count as produced when the collector package lists them; their labels are unknown.
	for _, n := range collector.MetricNames() {
		if out[n] == nil {
			out[n] = map[string]bool{anyLabel: true}
		}
	}
	return out
}

// anyLabel marks a metric whose label names are not known to the test.
const anyLabel = "*"
