// Package apiserver serves /api/v1/status, /api/v1/gpus and /api/v1/processes: it turns
// the daemon's joined View into the wire types of package api, a bounded number of
// requests at a time, streamed.
package apiserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/vram-exporter/vram_exporter/api"
	"math"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/vram-exporter/vram_exporter/capacity"
	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/leak/trend"
	"github.com/vram-exporter/vram_exporter/push"
)

// ViewSource gives the latest joined view (the daemon's join.Joiner).
type ViewSource interface {
	Latest() *join.View
}

// Options configure the handler.
type Options struct {
	// SafetyMarginBytes is kept free when counting headroom workers.
	SafetyMarginBytes uint64
	// Node and Version are reported by /api/v1/status.
	Node    string
	Version string
	// MaxInFlight bounds the requests built at once (0: DefaultMaxInFlight). Each one
	// converts the whole view, so two dashboards refreshing /api/v1/processes in a loop
	// must not multiply the daemon's memory; a request over the bound gets 503.
	MaxInFlight int
	// Cmdline publishes each process's command line in facts.cmdline
	// (collector.process_cmdline); off, it is "". It can carry tokens.
	Cmdline bool
}

// DefaultMaxInFlight is the default bound on concurrent /api/v1 requests: triage and a
// dashboard or two at once, with room to spare.
const DefaultMaxInFlight = 4

// NewHandler serves /api/v1/status, /api/v1/gpus and /api/v1/processes from src. Every
// request reads one view, so one response is always self-consistent.
func NewHandler(src ViewSource, opts Options) *Handler {
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	return &Handler{src: src, opts: opts, slots: make(chan struct{}, opts.MaxInFlight)}
}

// Handler is the /api/v1 handler.
type Handler struct {
	src      ViewSource
	opts     Options
	slots    chan struct{}
	rejected atomic.Uint64
}

// Rejected counts requests answered 503 because MaxInFlight were already being served.
func (h *Handler) Rejected() uint64 { return h.rejected.Load() }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var build func(*join.View) any
	switch r.URL.Path {
	case api.PathStatus:
		build = func(v *join.View) any { return BuildStatus(v, h.opts) }
	case api.PathGPUs:
		build = func(v *join.View) any { return BuildGPUs(v, h.opts.SafetyMarginBytes) }
	case api.PathProcesses:
		build = func(v *join.View) any { return withoutCmdlines(BuildProcesses(v), !h.opts.Cmdline) }
	default:
		writeError(w, http.StatusNotFound, "no such API path "+r.URL.Path+"; try "+api.PathStatus+", "+api.PathGPUs+" or "+api.PathProcesses)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed; use GET")
		return
	}
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		h.rejected.Add(1)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("%d API requests are already being served (the limit); retry in a second", h.opts.MaxInFlight))
		return
	}
	v := h.src.Latest()
	if v == nil {
		writeError(w, http.StatusServiceUnavailable, "no joined view yet; the daemon is starting")
		return
	}
	writeJSON(w, http.StatusOK, build(v))
}

// writeJSON streams body to w: a large view is encoded through a small buffer instead
// of being held as a whole indented document per request.
func writeJSON(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	bw := bufio.NewWriterSize(w, 32<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false) // reasons hold "<" and "→"; nothing here is HTML
	enc.SetIndent("", "  ")
	if err := enc.Encode(body); err != nil {
		// The status is sent already: cut the connection so the client sees a broken
		// response, never a truncated document it could take for a whole one.
		panic(http.ErrAbortHandler)
	}
	_ = bw.Flush()
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, api.Error{Status: code, Error: msg})
}

// BuildStatus converts a view into the /api/v1/status response.
func BuildStatus(v *join.View, opts Options) api.Status {
	return api.Status{
		Time: v.Time.UTC(), Node: opts.Node, Version: opts.Version, Demo: v.Demo,
		NVMLUp: v.NVML.Up, DriverVersion: v.NVML.DriverVersion, NVMLVersion: v.NVML.NVMLVersion,
		GPUs: len(v.GPUs), Processes: len(v.Processes), PushSenders: len(v.Senders),
		ProcfsErrors: v.ProcfsErrors, UnknownDevices: v.UnknownDevices, SafetyMarginBytes: opts.SafetyMarginBytes,
	}
}

// BuildGPUs converts a view into the /api/v1/gpus response.
func BuildGPUs(v *join.View, marginBytes uint64) api.GPUs {
	out := api.GPUs{Time: v.Time.UTC(), Demo: v.Demo, NVMLUp: v.NVML.Up, GPUs: []api.GPU{}, Duplicates: []api.Duplicate{}}
	head := map[string]capacity.Headroom{}
	for _, h := range capacity.HeadroomPerGPU(v, marginBytes) {
		head[h.UUID] = h
	}
	reclaim := map[string]capacity.GPUReclaim{}
	for _, r := range capacity.Reclaimable(v) {
		reclaim[r.UUID] = r
	}
	count := map[string]int{}
	for i := range v.Processes {
		count[v.Processes[i].UUID]++
	}
	for _, g := range v.GPUs {
		o := api.GPU{
			Index: g.Index, UUID: g.UUID, Name: g.Name, PCIBusID: g.PCIBusID, ParentUUID: g.ParentUUID,
			MIGEnabled: g.MIGEnabled, MemoryAPI: g.MemoryAPI, TotalBytes: g.TotalBytes, UsedBytes: g.UsedBytes,
			FreeBytes: g.FreeBytes, DriverReservedBytes: g.DriverReservedBytes, Processes: count[g.UUID],
			Growth: growths(g.Trend.Growth),
		}
		if g.HasTrend && g.Trend.ExhaustionValid {
			e := &api.Exhaustion{Seconds: finite(g.Trend.ExhaustionSeconds),
				At: v.Time.Add(time.Duration(g.Trend.ExhaustionSeconds * float64(time.Second))).UTC().Truncate(time.Second)}
			for _, gr := range g.Trend.Growth {
				if gr.Series == trend.SeriesUsed && gr.Window == trend.WindowShort {
					e.UsedBytesPerSecond = finite(gr.BytesPerSecond)
				}
			}
			o.Exhaustion = e
		}
		if h, ok := head[g.UUID]; ok {
			o.Headroom = &api.Headroom{Workers: h.Workers, LargestWorkerBytes: h.LargestWorkerBytes,
				LargestWorkerPID: h.LargestPID, FreeBytes: h.FreeBytes, MarginBytes: h.MarginBytes,
				WorkersIfReclaimed: h.WorkersIfReclaimed}
		}
		r := reclaim[g.UUID]
		o.ReclaimableBytes, o.ReclaimableProcesses = r.Bytes, r.Processes
		out.GPUs = append(out.GPUs, o)
	}
	for _, d := range capacity.Duplicates(v) {
		o := api.Duplicate{UUID: d.UUID, GPU: d.GPU, Service: d.Service, Basis: d.Basis, PIDs: d.PIDs(),
			MedianBytes: d.MedianBytes, TotalBytes: d.TotalBytes}
		for _, w := range d.Workers {
			o.WorkerBytes = append(o.WorkerBytes, w.Bytes)
		}
		out.Duplicates = append(out.Duplicates, o)
	}
	return out
}

// withoutCmdlines blanks every command line when redact is set (Options.Cmdline off).
func withoutCmdlines(ps api.Processes, redact bool) api.Processes {
	if !redact {
		return ps
	}
	for i := range ps.Processes {
		if f := ps.Processes[i].Facts; f != nil {
			f.Cmdline = ""
		}
	}
	return ps
}

// BuildProcesses converts a view into the /api/v1/processes response.
func BuildProcesses(v *join.View) api.Processes {
	out := api.Processes{Time: v.Time.UTC(), Demo: v.Demo, NVMLUp: v.NVML.Up, Processes: []api.Process{}}
	type key struct {
		pid  uint32
		uuid string
	}
	dups := map[key]*api.DuplicateRef{}
	for _, d := range capacity.Duplicates(v) {
		ref := &api.DuplicateRef{Service: d.Service, Basis: d.Basis, Workers: len(d.Workers), PIDs: d.PIDs(), MedianBytes: d.MedianBytes}
		for _, w := range d.Workers {
			dups[key{w.PID, d.UUID}] = ref
		}
	}
	for i := range v.Processes {
		p := &v.Processes[i]
		o := api.Process{PID: p.PID, UUID: p.UUID, GPU: p.GPU, Pushed: p.Pushed, UnknownDevice: p.UnknownDevice,
			Runtimes: []api.Runtime{}, Labels: map[string]string{}, Pools: []api.Pool{}, Duplicate: dups[key{p.PID, p.UUID}]}
		if p.HasNVML {
			o.NVMLUsedBytes, o.NVMLKinds = ptr(p.UsedBytes), p.Kinds
		}
		if p.HasFacts {
			f := &api.Facts{Comm: p.Facts.Comm, Cmdline: p.Facts.Cmdline, RSSBytes: p.Facts.RSSBytes,
				ContainerID: p.Facts.ContainerID, PodUID: p.Facts.PodUID}
			if !p.Facts.StartTime.IsZero() {
				f.StartTime = ptr(p.Facts.StartTime.UTC())
			}
			o.Facts = f
		}
		for _, r := range p.Runtimes {
			labels := map[string]string{}
			for k, val := range r.Labels {
				labels[k] = val
				if _, seen := o.Labels[k]; !seen {
					o.Labels[k] = val // first runtime wins, as join.Process.Label does
				}
			}
			alloc := map[string]string{}
			for k, val := range r.Allocator {
				alloc[k] = val
			}
			o.Runtimes = append(o.Runtimes, api.Runtime{Name: r.Name, Version: r.Version, Labels: labels, Allocator: alloc})
		}
		if p.Pushed {
			var cached uint64
			for _, pl := range p.Pools {
				o.Pools = append(o.Pools, api.Pool{
					Name: pl.Name, Parent: pl.Parent, AllocatedBytes: pl.Allocated, ReservedBytes: pl.Reserved,
					CachedBytes: pl.CachedBytes(), PeakAllocatedBytes: opt(pl.PeakAllocated), ActiveBytes: opt(pl.Active),
					InactiveSplitBytes: opt(pl.InactiveSplit), LimitBytes: opt(pl.Limit),
					AllocRetries: opt(pl.AllocRetries), OOMs: opt(pl.OOMs),
				})
				if pl.Parent == "" {
					cached += pl.CachedBytes()
				}
			}
			o.AllocatedBytes, o.ReservedBytes, o.CachedBytes = ptr(p.AllocatedBytes), ptr(p.ReservedBytes), ptr(cached)
			o.ReclaimableBytes = ptr(p.ReclaimableBytes)
			if !p.LastPush.IsZero() {
				o.LastPush = ptr(p.LastPush.UTC())
			}
		}
		if p.HasUnattributed {
			o.UnattributedBytes = ptr(p.UnattributedBytes)
		}
		o.OOM = oomStats(p.OOM)
		o.PhasePeaks = phasePeaks(p.PhasePeaks)
		o.TRTEngines = trtEngines(p.TRTEngines)
		if p.HasTrend {
			t := &api.Trend{Verdict: string(p.Trend.Verdict), Since: p.Trend.Since.UTC(), Reason: p.Trend.Reason,
				Growth: growths(p.Trend.Growth)}
			if g, ok := capacity.KeyGrowth(p.Trend); ok {
				t.KeyGrowth = ptr(growth(g))
			}
			o.Trend = t
		}
		out.Processes = append(out.Processes, o)
	}
	return out
}

func growth(g trend.Growth) api.Growth {
	return api.Growth{Series: g.Series, Window: g.Window, BytesPerSecond: finite(g.BytesPerSecond), Fit: finite(g.Fit), Valid: g.Valid}
}

// finite keeps a NaN or infinity (a degenerate fit) from failing the whole response:
// JSON has no encoding for them.
func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

func growths(gs []trend.Growth) []api.Growth {
	out := make([]api.Growth, 0, len(gs))
	for _, g := range gs {
		out = append(out, growth(g))
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func opt(o push.Optional) *uint64 {
	if !o.Set {
		return nil
	}
	return ptr(o.Value)
}
