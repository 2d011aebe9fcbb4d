// Package collector turns the joined View into Prometheus metrics. It is a reader: at
// scrape time it serialises the latest View into const metrics and never calls NVML,
// procfs or the socket, so scrape latency does not depend on the driver or on GPU count.
// Metric values are as old as the last sample tick (--nvml.poll-interval); HELP says so
// where it matters, as the Prometheus guidance on caching asks.
package collector

import (
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/capacity"
	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/leak/trend"
	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/push"
)

const namespace = "vram"

// ViewSource gives the latest joined view.
type ViewSource interface {
	Latest() *join.View
}

// PushStats gives the push server's counters; nil when the socket is disabled.
type PushStats interface {
	Stats() push.Stats
}

// Collector exports every vram_* metric of the joined view. It is a
// prometheus.Gatherer; the daemon serves it through Transactional, next to a Registry
// for the Go runtime and build info.
type Collector struct {
	views  ViewSource
	push   PushStats
	log    *zap.Logger
	now    func() time.Time
	margin uint64 // headroom safety margin, bytes
	// cmdline publishes command lines in vram_process_info; off, the label is empty.
	cmdline bool
	d       descs
}

// New returns a Collector reading views and, if not nil, push server stats.
func New(views ViewSource, ps PushStats, logger *zap.Logger) *Collector {
	return &Collector{views: views, push: ps, log: logger, now: time.Now, d: newDescs()}
}

// WithNow replaces the clock used for ages: tests, and demo mode, whose pushes carry
// simulated time.
func (c *Collector) WithNow(now func() time.Time) *Collector { c.now = now; return c }

// WithHeadroomMargin sets the safety margin (bytes) kept free when counting how many
// more workers fit on a GPU (headroom.safety_margin_bytes).
func (c *Collector) WithHeadroomMargin(bytes uint64) *Collector { c.margin = bytes; return c }

// WithCmdline publishes each process's command line in vram_process_info
// (collector.process_cmdline). Off by default: a command line can carry tokens, and
// /metrics is often served without auth; comm is always published.
func (c *Collector) WithCmdline(on bool) *Collector { c.cmdline = on; return c }

// Gather serialises the latest view into metric families, sorted by name. The families
// are the caller's (tests, other gatherers); the daemon uses Transactional instead.
func (c *Collector) Gather() ([]*dto.MetricFamily, error) {
	return c.gather(newEmitter()), nil
}

func (c *Collector) gather(e *emitter) []*dto.MetricFamily {
	v := c.views.Latest()
	c.gatherView(e, v)
	c.gatherLive(e, v)
	return e.families()
}

// gatherView adds every family that depends on the view alone: encoded once per view
// (Handler) and served as bytes until the next sample tick.
func (c *Collector) gatherView(e *emitter, v *join.View) {
	sub := []struct {
		name string
		fn   func(*emitter, *join.View) bool
	}{
		{"nvml", c.collectNVML},
		{"gpu", c.collectGPUs},
		{"process", c.collectProcesses},
		{"runtime", c.collectRuntime},
		{"push", c.collectPush},
		{"trend", c.collectTrend},
		{"capacity", c.collectCapacity},
	}
	for _, s := range sub {
		start := time.Now()
		ok := s.fn(e, v)
		e.gauge(c.d.collectorDuration, time.Since(start).Seconds(), s.name)
		e.gauge(c.d.collectorSuccess, b2f(ok), s.name)
	}
	e.gauge(c.d.demo, b2f(v.Demo))
	c.collectRuntimeInfo(e, v)
	c.collectDiagnosis(e, v)
}

// gatherLive adds the families that change between sample ticks: the push server's own
// counters and the age of each sender's last message. They are few (a handful plus one
// per pushing process), so they are encoded on every scrape.
func (c *Collector) gatherLive(e *emitter, v *join.View) {
	c.collectPushLive(e, v)
}

// Transactional gathers everything afresh into a pooled emitter (its memory is reused
// once promhttp has encoded the families, signalled by done, and trimmed to what that
// scrape needed) plus Others' (the Go runtime, process and build info Registry). Use it
// with promhttp.HandlerForTransactional; the daemon's Handler does, for name[] filters.
type Transactional struct {
	C      *Collector
	Others prometheus.Gatherer
	pool   *sync.Pool
}

// NewTransactional returns the daemon's gatherer.
func NewTransactional(c *Collector, others prometheus.Gatherer) Transactional {
	return Transactional{C: c, Others: others, pool: &sync.Pool{New: func() any { return newEmitter() }}}
}

// Gather implements prometheus.TransactionalGatherer. The families are valid until done
// is called. The vram_* families and Others' must not share names (they do not: vram_*
// against go_*, process_*, promhttp_* and vram_exporter_build_info), so they are
// concatenated without prometheus.Gatherers' per-series consistency hashing.
func (t Transactional) Gather() ([]*dto.MetricFamily, func(), error) {
	e := t.pool.Get().(*emitter)
	e.reset()
	mfs := t.C.gather(e)
	var err error
	if t.Others != nil {
		var others []*dto.MetricFamily
		others, err = t.Others.Gather()
		mfs = append(mfs, others...)
		sort.Slice(mfs, func(a, b int) bool { return mfs[a].GetName() < mfs[b].GetName() })
	}
	return mfs, func() {
		e.reset()
		e.trim()
		t.pool.Put(e)
	}, err
}

func (c *Collector) collectNVML(e *emitter, v *join.View) bool {
	s := v.NVML
	e.gauge(c.d.nvmlUp, b2f(s.Up))
	if s.Up {
		e.gauge(c.d.nvmlInfo, 1, s.DriverVersion, s.NVMLVersion)
		e.gauge(c.d.nvmlPollDuration, s.PollDuration.Seconds())
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
		e.counter(c.d.nvmlErrors, float64(s.Errors[k]), k.Call, k.Error)
	}
	return s.Up
}

func (c *Collector) collectGPUs(e *emitter, v *join.View) bool {
	for _, g := range v.GPUs {
		idx := strconv.Itoa(g.Index)
		migMode := "disabled"
		if g.MIGEnabled || g.ParentUUID != "" {
			migMode = "enabled"
		}
		e.gauge(c.d.gpuInfo, 1,
			g.UUID, idx, g.Name, g.PCIBusID, g.MemoryAPI, migMode, g.ParentUUID, optInt(g.GPUInstanceID), optInt(g.ComputeInstanceID))
		gauge(e, c.d.gpuTotal, g.TotalBytes, g.UUID, idx)
		gauge(e, c.d.gpuUsed, g.UsedBytes, g.UUID, idx)
		gauge(e, c.d.gpuFree, g.FreeBytes, g.UUID, idx)
		if g.MemoryAPI == nvml.MemoryAPIv2 {
			gauge(e, c.d.gpuDriverReserved, g.DriverReservedBytes, g.UUID, idx)
		}
		if g.BAR1Valid {
			gauge(e, c.d.gpuBAR1Total, g.BAR1TotalBytes, g.UUID, idx)
			gauge(e, c.d.gpuBAR1Used, g.BAR1UsedBytes, g.UUID, idx)
		}
	}
	return true
}

func (c *Collector) collectProcesses(e *emitter, v *join.View) bool {
	seen := map[uint32]bool{}
	for i := range v.Processes {
		p := &v.Processes[i]
		pid := pidLabel(p.PID)
		if p.HasNVML {
			gauge(e, c.d.procUsed, p.UsedBytes, pid, p.UUID, p.GPU)
		}
		if p.HasUnattributed {
			e.gauge(c.d.procUnattributed, float64(p.UnattributedBytes), pid, p.UUID, p.GPU)
		}
		if p.HasInFlight {
			gauge(e, c.d.procInFlight, p.InFlight, pid, p.UUID, p.GPU)
		}
		if seen[p.PID] || !p.HasFacts {
			continue
		}
		seen[p.PID] = true
		f := p.Facts
		cmdline := ""
		if c.cmdline {
			cmdline = f.Cmdline
		}
		e.gauge(c.d.procInfo, 1, pid, f.Comm, cmdline, f.ContainerID, f.PodUID)
		gauge(e, c.d.procRSS, f.RSSBytes, pid)
		if !f.StartTime.IsZero() {
			e.gauge(c.d.procStart, float64(f.StartTime.UnixNano())/1e9, pid)
		}
	}
	return v.ProcfsErrors == 0
}

func (c *Collector) collectRuntime(e *emitter, v *join.View) bool {
	for i := range v.Processes {
		p := &v.Processes[i]
		if !p.Pushed {
			continue
		}
		pid := pidLabel(p.PID)
		for _, pl := range p.Pools {
			lv := []string{pid, p.UUID, p.GPU, pl.Name, pl.Parent}
			gauge(e, c.d.rtAllocated, pl.Allocated, lv...)
			gauge(e, c.d.rtReserved, pl.Reserved, lv...)
			gauge(e, c.d.rtCached, pl.CachedBytes(), lv...)
			optGauge(e, c.d.rtPeak, pl.PeakAllocated, lv...)
			optGauge(e, c.d.rtActive, pl.Active, lv...)
			optGauge(e, c.d.rtInactiveSplit, pl.InactiveSplit, lv...)
			optGauge(e, c.d.rtLimit, pl.Limit, lv...)
			if pl.AllocRetries.Set {
				e.counter(c.d.rtRetries, float64(pl.AllocRetries.Value), lv...)
			}
			if pl.OOMs.Set {
				e.counter(c.d.rtOOMs, float64(pl.OOMs.Value), lv...)
			}
		}
	}
	return true
}

// collectPush exports what the view says about pushing processes; collectPushLive the
// rest.
func (c *Collector) collectPush(e *emitter, v *join.View) bool {
	dropped := map[uint32]uint64{}
	for _, s := range v.Senders {
		dropped[s.PID] += s.Msg.ClientDropped
	}
	for _, pid := range sortedPIDs(dropped) {
		e.counter(c.d.pushClientDropped, float64(dropped[pid]), pidLabel(pid))
	}
	e.gauge(c.d.pushProcesses, float64(len(dropped)))
	e.gauge(c.d.pushUnknownDevices, float64(v.UnknownDevices))
	e.counter(c.d.pushPIDReused, float64(v.PIDReusedSenders))
	return true
}

// collectPushLive exports the push server's counters and each sender's message age, as
// of the scrape.
func (c *Collector) collectPushLive(e *emitter, v *join.View) {
	now := c.now()
	last := map[uint32]time.Time{}
	for _, s := range v.Senders {
		if t, ok := last[s.PID]; !ok || s.LastSeen.After(t) {
			last[s.PID] = s.LastSeen
		}
	}
	for _, pid := range sortedPIDs(last) {
		age := now.Sub(last[pid]).Seconds()
		if age < 0 {
			age = 0
		}
		e.gauge(c.d.pushAge, age, pidLabel(pid))
	}
	if c.push == nil {
		return
	}
	st := c.push.Stats()
	e.gauge(c.d.pushSeries, float64(st.Series))
	e.gauge(c.d.pushConnections, float64(st.Connections))
	e.counter(c.d.pushConnectionsTotal, float64(st.ConnectionsAccepted))
	e.counter(c.d.pushMessages, float64(st.MessagesAccepted))
	e.counter(c.d.pushBytes, float64(st.BytesReceived))
	for _, r := range push.Reasons() {
		e.counter(c.d.pushRejected, float64(st.Rejected[r]), r)
	}
	for _, r := range push.DisconnectReasons() {
		e.counter(c.d.pushDisconnects, float64(st.Disconnects[r]), r)
	}
}

func sortedPIDs[V any](m map[uint32]V) []uint32 {
	out := make([]uint32, 0, len(m))
	for pid := range m {
		out = append(out, pid)
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}

func (c *Collector) collectTrend(e *emitter, v *join.View) bool {
	e.gauge(c.d.trendKeys, float64(v.TrendKeys))
	e.counter(c.d.trendUntracked, float64(v.TrendRefused))
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
			e.gauge(c.d.growth, g.BytesPerSecond, pid, p.UUID, p.GPU, g.Series, g.Window)
			e.gauge(c.d.growthFit, g.Fit, pid, p.UUID, p.GPU, g.Series, g.Window)
		}
		for _, verdict := range trend.Verdicts() {
			e.gauge(c.d.verdict, b2f(p.Trend.Verdict == verdict), pid, p.UUID, p.GPU, string(verdict))
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
			e.gauge(c.d.gpuGrowth, gr.BytesPerSecond, g.UUID, idx, gr.Window)
			e.gauge(c.d.gpuGrowthFit, gr.Fit, g.UUID, idx, gr.Window)
		}
		if g.Trend.ExhaustionValid {
			e.gauge(c.d.gpuExhaustion, g.Trend.ExhaustionSeconds, g.UUID, idx)
		}
	}
	return true
}

// collectCapacity exports worker duplication and per-GPU headroom (package analysis):
// the usual cause of out-of-memory when workers are added is one model copy per worker.
func (c *Collector) collectCapacity(e *emitter, v *join.View) bool {
	for _, g := range capacity.Duplicates(v) {
		e.gauge(c.d.duplicates, float64(len(g.Workers)), g.UUID, g.GPU, g.Service, g.Basis)
		e.gauge(c.d.duplicateBytes, float64(g.TotalBytes), g.UUID, g.GPU, g.Service, g.Basis)
	}
	for _, h := range capacity.HeadroomPerGPU(v, c.margin) {
		e.gauge(c.d.headroom, float64(h.Workers), h.UUID, h.GPU)
		e.gauge(c.d.largestWorker, float64(h.LargestWorkerBytes), h.UUID, h.GPU)
	}
	return true
}

func gauge(e *emitter, d *metricDesc, v uint64, lv ...string) { e.gauge(d, float64(v), lv...) }

func optGauge(e *emitter, d *metricDesc, o push.Optional, lv ...string) {
	if o.Set {
		gauge(e, d, o.Value, lv...)
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

// collectRuntimeInfo exports vram_runtime_info, whose label names include the clients'
// own labels (service, model, …). They differ per sender; the protocol bounds their
// names, count and length.
func (c *Collector) collectRuntimeInfo(e *emitter, v *join.View) {
	type key struct {
		pid                   uint32
		name, version, labels string
	}
	var mf *dto.MetricFamily
	seen := map[key]bool{}
	for i := range v.Processes {
		p := &v.Processes[i]
		for _, rt := range p.Runtimes {
			pairs := map[string]string{"pid": pidLabel(p.PID), "runtime": rt.Name, "runtime_version": rt.Version}
			var client []string
			for n, val := range rt.Labels {
				if _, clash := pairs[n]; clash || val == "" {
					continue // the protocol forbids these; defensive for hand-built views
				}
				pairs[n] = val
				client = append(client, n)
			}
			// The de-duplication key is built from the client labels alone: slicing the
			// sorted list of all names would drop a client label that sorts before pid
			// (app, env, model) and merge two reporters of one process.
			sort.Strings(client)
			ls := ""
			for _, n := range client {
				ls += n + "=" + pairs[n] + "\x00"
			}
			names := append([]string{"pid", "runtime", "runtime_version"}, client...)
			sort.Strings(names)
			k := key{p.PID, rt.Name, rt.Version, ls}
			if seen[k] {
				continue
			}
			seen[k] = true
			if mf == nil {
				name, help, typ := namespace+"_runtime_info", "Runtime of a pushing process with its client labels (service, model, …); always 1.", dto.MetricType_GAUGE
				mf = &dto.MetricFamily{Name: &name, Help: &help, Type: &typ}
			}
			m := &dto.Metric{Gauge: &dto.Gauge{Value: new(float64)}}
			*m.Gauge.Value = 1
			for _, n := range names {
				n, val := n, pairs[n]
				m.Label = append(m.Label, &dto.LabelPair{Name: &n, Value: &val})
			}
			mf.Metric = append(mf.Metric, m)
		}
	}
	if mf != nil {
		e.extra = append(e.extra, mf)
	}
}
