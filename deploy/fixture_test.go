package deploy

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/collector"
	"github.com/vram-exporter/vram_exporter/collector/collectortest"
	"github.com/vram-exporter/vram_exporter/leak/trend"
)

// The exporter's real collectors over the complete fixture node of collectortest.

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
	var c any = collector.New(collectortest.StaticView{V: collectortest.Node(time.Now(), verdict)}, collectortest.StaticPush{S: collectortest.PushStats()}, zap.NewNop())
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
