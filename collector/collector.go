// Package collector turns the joined View into Prometheus metrics. It is a reader: at
// scrape time it serialises the latest View into const metrics and never calls NVML,
// procfs or the socket, so scrape latency does not depend on the driver or on GPU count.
// Metric values are as old as the last sample tick (--nvml.poll-interval); HELP says so
// where it matters, as the Prometheus guidance on caching asks.
package collector

import (
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/push"
	"github.com/vram-exporter/vram_exporter/state"
	"github.com/vram-exporter/vram_exporter/trend"
)

const namespace = "vram"

// ViewSource gives the latest joined view.
type ViewSource interface {
	Latest() *state.View
}

// PushStats gives the push server's counters; nil when the socket is disabled.
type PushStats interface {
	Stats() push.Stats
}

// Collector exports every vram_* metric of the joined view. Register it with
// Register, which also adds the runtime info collector whose label names come from
// the clients.
type Collector struct {
	views ViewSource
	push  PushStats
	log   *zap.Logger
	now   func() time.Time
	d     descs
}

// New returns a Collector reading views and, if not nil, push server stats.
func New(views ViewSource, ps PushStats, logger *zap.Logger) *Collector {
	return &Collector{views: views, push: ps, log: logger, now: time.Now, d: newDescs()}
}

// WithNow replaces the clock used for ages (tests).
func (c *Collector) WithNow(now func() time.Time) *Collector { c.now = now; return c }

// Register adds the collector (and its runtime-info companion) to reg.
func Register(reg prometheus.Registerer, c *Collector) error {
	if err := reg.Register(c); err != nil {
		return err
	}
	return reg.Register(runtimeInfo{c})
}

// Describe sends every fixed descriptor.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.d.all() {
		ch <- d
	}
}

// Collect serialises the latest view.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	v := c.views.Latest()
	sub := []struct {
		name string
		fn   func(chan<- prometheus.Metric, *state.View) bool
	}{
		{"nvml", c.collectNVML},
		{"gpu", c.collectGPUs},
		{"process", c.collectProcesses},
		{"runtime", c.collectRuntime},
		{"push", c.collectPush},
		{"trend", c.collectTrend},
	}
	for _, s := range sub {
		start := time.Now()
		ok := s.fn(ch, v)
		ch <- prometheus.MustNewConstMetric(c.d.collectorDuration, prometheus.GaugeValue, time.Since(start).Seconds(), s.name)
		ch <- prometheus.MustNewConstMetric(c.d.collectorSuccess, prometheus.GaugeValue, b2f(ok), s.name)
	}
	ch <- prometheus.MustNewConstMetric(c.d.demo, prometheus.GaugeValue, b2f(v.Demo))
}

func (c *Collector) collectNVML(ch chan<- prometheus.Metric, v *state.View) bool {
	s := v.NVML
	ch <- prometheus.MustNewConstMetric(c.d.nvmlUp, prometheus.GaugeValue, b2f(s.Up))
	if s.Up {
		ch <- prometheus.MustNewConstMetric(c.d.nvmlInfo, prometheus.GaugeValue, 1, s.DriverVersion, s.NVMLVersion)
		ch <- prometheus.MustNewConstMetric(c.d.nvmlPollDuration, prometheus.GaugeValue, s.PollDuration.Seconds())
	}
	keys := make([]nvml.ErrorKey, 0, len(s.Errors))
	for k := range s.Errors {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].Call != keys[b].Call {
			return keys[a].Call < keys[b].Call
		}
		return keys[a].Error < keys[b].Error
	})
	for _, k := range keys {
		ch <- prometheus.MustNewConstMetric(c.d.nvmlErrors, prometheus.CounterValue, float64(s.Errors[k]), k.Call, k.Error)
	}
	return s.Up
}

func (c *Collector) collectGPUs(ch chan<- prometheus.Metric, v *state.View) bool {
	for _, g := range v.GPUs {
		idx := strconv.Itoa(g.Index)
		migMode := "disabled"
		if g.MIGEnabled || g.ParentUUID != "" {
			migMode = "enabled"
		}
		ch <- prometheus.MustNewConstMetric(c.d.gpuInfo, prometheus.GaugeValue, 1,
			g.UUID, idx, g.Name, g.PCIBusID, g.MemoryAPI, migMode, g.ParentUUID, optInt(g.GPUInstanceID), optInt(g.ComputeInstanceID))
		gauge(ch, c.d.gpuTotal, g.TotalBytes, g.UUID, idx)
		gauge(ch, c.d.gpuUsed, g.UsedBytes, g.UUID, idx)
		gauge(ch, c.d.gpuFree, g.FreeBytes, g.UUID, idx)
		if g.MemoryAPI == "v2" {
			gauge(ch, c.d.gpuDriverReserved, g.DriverReservedBytes, g.UUID, idx)
		}
		if g.BAR1Valid {
			gauge(ch, c.d.gpuBAR1Total, g.BAR1TotalBytes, g.UUID, idx)
			gauge(ch, c.d.gpuBAR1Used, g.BAR1UsedBytes, g.UUID, idx)
		}
	}
	return true
}

func (c *Collector) collectProcesses(ch chan<- prometheus.Metric, v *state.View) bool {
	seen := map[uint32]bool{}
	for i := range v.Processes {
		p := &v.Processes[i]
		pid := pidLabel(p.PID)
		if p.HasNVML {
			gauge(ch, c.d.procUsed, p.UsedBytes, pid, p.UUID, p.GPU)
		}
		if p.HasUnattributed {
			ch <- prometheus.MustNewConstMetric(c.d.procUnattributed, prometheus.GaugeValue, float64(p.UnattributedBytes), pid, p.UUID, p.GPU)
		}
		if seen[p.PID] || !p.HasFacts {
			continue
		}
		seen[p.PID] = true
		f := p.Facts
		ch <- prometheus.MustNewConstMetric(c.d.procInfo, prometheus.GaugeValue, 1, pid, f.Comm, f.Cmdline, f.ContainerID, f.PodUID)
		gauge(ch, c.d.procRSS, f.RSSBytes, pid)
		if !f.StartTime.IsZero() {
			ch <- prometheus.MustNewConstMetric(c.d.procStart, prometheus.GaugeValue, float64(f.StartTime.UnixNano())/1e9, pid)
		}
	}
	return v.ProcfsErrors == 0
}

func (c *Collector) collectRuntime(ch chan<- prometheus.Metric, v *state.View) bool {
	for i := range v.Processes {
		p := &v.Processes[i]
		if !p.Pushed {
			continue
		}
		pid := pidLabel(p.PID)
		for _, pl := range p.Pools {
			lv := []string{pid, p.UUID, p.GPU, pl.Name, pl.Parent}
			gauge(ch, c.d.rtAllocated, pl.Allocated, lv...)
			gauge(ch, c.d.rtReserved, pl.Reserved, lv...)
			gauge(ch, c.d.rtCached, pl.CachedBytes(), lv...)
			optGauge(ch, c.d.rtPeak, pl.PeakAllocated, lv...)
			optGauge(ch, c.d.rtActive, pl.Active, lv...)
			optGauge(ch, c.d.rtInactiveSplit, pl.InactiveSplit, lv...)
			optGauge(ch, c.d.rtLimit, pl.Limit, lv...)
			if pl.AllocRetries.Set {
				ch <- prometheus.MustNewConstMetric(c.d.rtRetries, prometheus.CounterValue, float64(pl.AllocRetries.Value), lv...)
			}
			if pl.OOMs.Set {
				ch <- prometheus.MustNewConstMetric(c.d.rtOOMs, prometheus.CounterValue, float64(pl.OOMs.Value), lv...)
			}
		}
	}
	return true
}

func (c *Collector) collectPush(ch chan<- prometheus.Metric, v *state.View) bool {
	now := c.now()
	type perPID struct {
		last    time.Time
		dropped uint64
	}
	pids := map[uint32]*perPID{}
	for _, s := range v.Senders {
		pp := pids[s.PID]
		if pp == nil {
			pp = &perPID{}
			pids[s.PID] = pp
		}
		if s.LastSeen.After(pp.last) {
			pp.last = s.LastSeen
		}
		pp.dropped += s.Msg.ClientDropped
	}
	order := make([]uint32, 0, len(pids))
	for pid := range pids {
		order = append(order, pid)
	}
	sort.Slice(order, func(a, b int) bool { return order[a] < order[b] })
	for _, pid := range order {
		pp := pids[pid]
		age := now.Sub(pp.last).Seconds()
		if age < 0 {
			age = 0
		}
		ch <- prometheus.MustNewConstMetric(c.d.pushAge, prometheus.GaugeValue, age, pidLabel(pid))
		ch <- prometheus.MustNewConstMetric(c.d.pushClientDropped, prometheus.CounterValue, float64(pp.dropped), pidLabel(pid))
	}
	ch <- prometheus.MustNewConstMetric(c.d.pushProcesses, prometheus.GaugeValue, float64(len(pids)))
	ch <- prometheus.MustNewConstMetric(c.d.pushUnknownDevices, prometheus.GaugeValue, float64(v.UnknownDevices))
	if c.push == nil {
		return true
	}
	st := c.push.Stats()
	ch <- prometheus.MustNewConstMetric(c.d.pushConnections, prometheus.GaugeValue, float64(st.Connections))
	ch <- prometheus.MustNewConstMetric(c.d.pushConnectionsTotal, prometheus.CounterValue, float64(st.ConnectionsAccepted))
	ch <- prometheus.MustNewConstMetric(c.d.pushMessages, prometheus.CounterValue, float64(st.MessagesAccepted))
	ch <- prometheus.MustNewConstMetric(c.d.pushBytes, prometheus.CounterValue, float64(st.BytesReceived))
	for _, r := range push.Reasons() {
		ch <- prometheus.MustNewConstMetric(c.d.pushRejected, prometheus.CounterValue, float64(st.Rejected[r]), r)
	}
	for _, r := range push.DisconnectReasons() {
		ch <- prometheus.MustNewConstMetric(c.d.pushDisconnects, prometheus.CounterValue, float64(st.Disconnects[r]), r)
	}
	return true
}

func (c *Collector) collectTrend(ch chan<- prometheus.Metric, v *state.View) bool {
	for i := range v.Processes {
		p := &v.Processes[i]
		if !p.HasTrend {
			continue
		}
		pid := pidLabel(p.PID)
		for _, g := range p.Trend.Growth {
			if !g.Valid {
				continue
			}
			ch <- prometheus.MustNewConstMetric(c.d.growth, prometheus.GaugeValue, g.BytesPerSecond, pid, p.UUID, p.GPU, g.Series, g.Window)
			ch <- prometheus.MustNewConstMetric(c.d.growthFit, prometheus.GaugeValue, g.Fit, pid, p.UUID, p.GPU, g.Series, g.Window)
		}
		for _, verdict := range trend.Verdicts() {
			ch <- prometheus.MustNewConstMetric(c.d.verdict, prometheus.GaugeValue, b2f(p.Trend.Verdict == verdict), pid, p.UUID, p.GPU, string(verdict))
		}
	}
	for _, g := range v.GPUs {
		if !g.HasTrend {
			continue
		}
		idx := strconv.Itoa(g.Index)
		for _, gr := range g.Trend.Growth {
			if !gr.Valid {
				continue
			}
			ch <- prometheus.MustNewConstMetric(c.d.gpuGrowth, prometheus.GaugeValue, gr.BytesPerSecond, g.UUID, idx, gr.Window)
			ch <- prometheus.MustNewConstMetric(c.d.gpuGrowthFit, prometheus.GaugeValue, gr.Fit, g.UUID, idx, gr.Window)
		}
		if g.Trend.ExhaustionValid {
			ch <- prometheus.MustNewConstMetric(c.d.gpuExhaustion, prometheus.GaugeValue, g.Trend.ExhaustionSeconds, g.UUID, idx)
		}
	}
	return true
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v uint64, lv ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), lv...)
}

func optGauge(ch chan<- prometheus.Metric, d *prometheus.Desc, o state.OptionalBytes, lv ...string) {
	if o.Set {
		gauge(ch, d, o.Value, lv...)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func optInt(i int) string {
	if i < 0 {
		return ""
	}
	return strconv.Itoa(i)
}

func pidLabel(pid uint32) string { return strconv.FormatUint(uint64(pid), 10) }
