package triage

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vram-exporter/vram_exporter/api"
)

// Report is the triage of one node: the JSON output of `vram_exporter triage
// --output json` (docs/triage.md). Field names are stable.
type Report struct {
	Node          string    `json:"node"`
	Time          time.Time `json:"time"` // when the daemon joined the view
	Version       string    `json:"version"`
	Demo          bool      `json:"demo"`
	NVMLUp        bool      `json:"nvml_up"`
	DriverVersion string    `json:"driver_version"`
	// Warnings are things that make the figures below incomplete or unreal, most
	// important first.
	Warnings   []string    `json:"warnings"`
	GPUs       []GPU       `json:"gpus"`
	Duplicates []Duplicate `json:"duplicates"`
	// Processes are sorted by risk, most urgent first.
	Processes []Process `json:"processes"`
}

// GPU is one GPU's memory, forecast and headroom.
type GPU struct {
	Index      int    `json:"index"`
	UUID       string `json:"uuid"`
	Name       string `json:"name"`
	TotalBytes uint64 `json:"total_bytes"`
	UsedBytes  uint64 `json:"used_bytes"`
	FreeBytes  uint64 `json:"free_bytes"`
	Processes  int    `json:"processes"`
	// Forecast is the exhaustion forecast in words: "full in 2h10m at 85 MiB/min",
	// "not growing", "no trend yet".
	Forecast string `json:"forecast"`
	// ExhaustionSeconds and UsedBytesPerSecond are null unless used memory rises with
	// a good fit.
	ExhaustionSeconds  *float64 `json:"exhaustion_seconds"`
	UsedBytesPerSecond *float64 `json:"used_bytes_per_second"`
	// Headroom in words, and the figures: null when the GPU has no process.
	Headroom           string  `json:"headroom"`
	HeadroomWorkers    *uint64 `json:"headroom_workers"`
	LargestWorkerBytes *uint64 `json:"largest_worker_bytes"`
	// ReclaimableBytes is cache the GPU's processes would hand back; Diagnosis says so
	// when it is what fills the GPU ("" otherwise).
	ReclaimableBytes uint64 `json:"reclaimable_bytes"`
	Diagnosis        string `json:"diagnosis"`
}

// Duplicate is a group of workers of one service on one GPU that each load the same
// footprint.
type Duplicate struct {
	UUID           string   `json:"uuid"`
	GPU            string   `json:"gpu"`
	Service        string   `json:"service"`
	Workers        int      `json:"workers"`
	PIDs           []uint32 `json:"pids"`
	PerWorkerBytes uint64   `json:"per_worker_bytes"` // the group's median
	TotalBytes     uint64   `json:"total_bytes"`
	Diagnosis      string   `json:"diagnosis"`
}

// Process is one process on one GPU, explained.
type Process struct {
	PID       uint32 `json:"pid"`
	UUID      string `json:"uuid"`
	GPU       string `json:"gpu"`
	Comm      string `json:"comm"`
	Container string `json:"container"` // first 12 characters of the container ID
	Service   string `json:"service"`
	Model     string `json:"model"`
	// Byte figures are null when the source that knows them is missing: used needs
	// NVML, allocated/reserved/cached need pushed stats, unattributed needs both.
	UsedBytes         *uint64 `json:"used_bytes"`
	AllocatedBytes    *uint64 `json:"allocated_bytes"`
	ReservedBytes     *uint64 `json:"reserved_bytes"`
	CachedBytes       *uint64 `json:"cached_bytes"`
	UnattributedBytes *int64  `json:"unattributed_bytes"`
	// Growth is the slope that explains the verdict, null when none is valid yet.
	GrowthBytesPerSecond *float64 `json:"growth_bytes_per_second"`
	GrowthSeries         string   `json:"growth_series"`
	// Verdict is leak, unattributed_growth, cache_growth, warming_up, steady, or "" when
	// the daemon has no trend for the process yet.
	Verdict      string     `json:"verdict"`
	VerdictSince *time.Time `json:"verdict_since"`
	Reason       string     `json:"reason"` // the detector's own sentence
	Diagnosis    string     `json:"diagnosis"`
	// Runtime is the runtime the advice is about, Allocator its pushed settings.
	Runtime   string            `json:"runtime"`
	Allocator map[string]string `json:"allocator"`
	// OOMEvents counts out-of-memory events per kind, null when the client reports
	// none; LastOOMKind is the last one's kind.
	OOMEvents   map[api.OOMKind]uint64 `json:"oom_events"`
	LastOOMKind string                 `json:"last_oom_kind"`
}

// Build turns what a daemon served into a report. It is pure: the same snapshot gives
// the same report, so the golden tests pin it.
func Build(s Snapshot) Report {
	now := s.Status.Time
	r := Report{
		Node: s.Status.Node, Time: now, Version: s.Status.Version, Demo: s.Status.Demo, NVMLUp: s.Status.NVMLUp,
		DriverVersion: s.Status.DriverVersion, Warnings: []string{}, GPUs: []GPU{}, Duplicates: []Duplicate{},
		Processes: []Process{},
	}
	r.Warnings = warnings(s)

	for _, g := range s.GPUs.GPUs {
		o := GPU{Index: g.Index, UUID: g.UUID, Name: g.Name, TotalBytes: g.TotalBytes, UsedBytes: g.UsedBytes,
			FreeBytes: g.FreeBytes, Processes: g.Processes, Forecast: forecast(g), Headroom: "no process"}
		if e := g.Exhaustion; e != nil {
			o.ExhaustionSeconds, o.UsedBytesPerSecond = &e.Seconds, &e.UsedBytesPerSecond
		}
		if h := g.Headroom; h != nil {
			o.HeadroomWorkers, o.LargestWorkerBytes = &h.Workers, &h.LargestWorkerBytes
			o.Headroom = headroomReclaimWords(h)
		}
		o.ReclaimableBytes, o.Diagnosis = g.ReclaimableBytes, reclaimWords(g)
		r.GPUs = append(r.GPUs, o)
	}

	for _, d := range s.GPUs.Duplicates {
		r.Duplicates = append(r.Duplicates, Duplicate{
			UUID: d.UUID, GPU: d.GPU, Service: d.Service, Workers: len(d.PIDs), PIDs: d.PIDs,
			PerWorkerBytes: d.MedianBytes, TotalBytes: d.TotalBytes,
			Diagnosis: duplicateWords(d.Service, len(d.PIDs), d.MedianBytes, gpuName(d.GPU, d.UUID)),
		})
	}

	for _, p := range s.Processes.Processes {
		r.Processes = append(r.Processes, process(p, now, s.Status.NVMLUp))
	}
	slices.SortStableFunc(r.Processes, func(a, b Process) int {
		return cmp.Or(
			cmp.Compare(risk(a.Verdict), risk(b.Verdict)),
			-cmp.Compare(oomTotal(a), oomTotal(b)),
			-cmp.Compare(deref(a.GrowthBytesPerSecond), deref(b.GrowthBytesPerSecond)),
			-cmp.Compare(footprint(a), footprint(b)),
			cmp.Compare(a.UUID, b.UUID),
			cmp.Compare(a.PID, b.PID),
		)
	})
	return r
}

func warnings(s Snapshot) []string {
	w := []string{}
	if s.Status.Demo {
		w = append(w, "DEMO MODE: every GPU, process and allocator figure is simulated, not read from this machine")
	}
	if !s.Status.NVMLUp {
		w = append(w, "NVML is down: no driver figures (GPU memory, per-process used); verdicts come from pushed allocator stats only. Check the NVIDIA driver and the daemon log")
	}
	if n := s.Status.ProcfsErrors; n > 0 {
		w = append(w, fmt.Sprintf("%d process-fact reads failed: check --path.procfs and permissions (in Kubernetes, run with hostPID)", n))
	}
	if n := s.Status.UnknownDevices; n > 0 {
		w = append(w, fmt.Sprintf("%d pushed (pid, GPU) pairs name a GPU UUID that NVML does not know: check the clients' device mapping (CUDA_VISIBLE_DEVICES)", n))
	}
	return w
}

func forecast(g api.GPU) string {
	if e := g.Exhaustion; e != nil {
		return fmt.Sprintf("full in %s at %s", shortDuration(time.Duration(e.Seconds*float64(time.Second))), rateText(e.UsedBytesPerSecond))
	}
	for _, gr := range g.Growth {
		if gr.Valid {
			return "not growing"
		}
	}
	return "no trend yet"
}

func headroomWords(h *api.Headroom) string {
	size := bytesText(float64(h.LargestWorkerBytes))
	switch h.Workers {
	case 0:
		return fmt.Sprintf("no room for another %s worker", size)
	case 1:
		return fmt.Sprintf("1 more worker of %s", size)
	}
	return fmt.Sprintf("%d more workers of %s", h.Workers, size)
}

// headroomWords adds what the GPU's caches would make room for.
func headroomReclaimWords(h *api.Headroom) string {
	s := headroomWords(h)
	if h.WorkersIfReclaimed > h.Workers {
		s += fmt.Sprintf(" (%d if the caches were handed back)", h.WorkersIfReclaimed)
	}
	return s
}

func duplicateWords(service string, workers int, median uint64, gpu string) string {
	return fmt.Sprintf("%s workers of service %s each hold %s on %s: the model is loaded once per worker (one shared copy would free %s)",
		countWords(workers), service, bytesText(float64(median)), gpu, bytesText(float64(median)*float64(workers-1)))
}

// gpuName says "GPU 0", or the start of the UUID when NVML does not know it.
func gpuName(gpu, uuid string) string {
	if gpu != "" {
		return "GPU " + gpu
	}
	if len(uuid) > 12 {
		return uuid[:12] + "…"
	}
	return uuid
}

func process(p api.Process, now time.Time, nvmlUp bool) Process {
	o := Process{PID: p.PID, UUID: p.UUID, GPU: p.GPU, Service: p.Labels["service"], Model: p.Labels["model"],
		UsedBytes: p.NVMLUsedBytes, AllocatedBytes: p.AllocatedBytes, ReservedBytes: p.ReservedBytes,
		CachedBytes: p.CachedBytes, UnattributedBytes: p.UnattributedBytes}
	if p.Facts != nil {
		o.Comm, o.Container = p.Facts.Comm, shortContainer(p.Facts.ContainerID)
	}
	var key *api.Growth
	if t := p.Trend; t != nil {
		o.Verdict, o.Reason = t.Verdict, t.Reason
		since := t.Since
		o.VerdictSince = &since
		if t.KeyGrowth != nil {
			key = t.KeyGrowth
			o.GrowthBytesPerSecond, o.GrowthSeries = &key.BytesPerSecond, key.Series
		}
	}
	o.Diagnosis = diagnose(p, key, now, nvmlUp)
	a := allocatorOf(p)
	o.Runtime, o.Allocator = a.runtime, a.settings
	if p.OOM != nil {
		o.OOMEvents = p.OOM.Events
		if p.OOM.Last != nil {
			o.LastOOMKind = string(p.OOM.Last.Kind)
		}
	}
	return o
}

func oomTotal(p Process) uint64 {
	var n uint64
	for _, c := range p.OOMEvents {
		n += c
	}
	return n
}

func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

func footprint(p Process) uint64 {
	switch {
	case p.UsedBytes != nil:
		return *p.UsedBytes
	case p.ReservedBytes != nil:
		return *p.ReservedBytes
	}
	return 0
}

const (
	leakCause  = "likely tensors kept across requests (a global list, a cache keyed by request, missing inference_mode)"
	outsideWhy = "likely NCCL communicators or cuBLAS/cuDNN workspaces created for new shapes or process groups (look for communicators or streams created per request)"
	nvmlOnly   = "pushes no allocator stats; verdict from driver bytes only"
)

// diagnose is the one line an on-call engineer reads.
func diagnose(p api.Process, key *api.Growth, now time.Time, nvmlUp bool) string {
	var parts []string
	cacheCure := allocatorOf(p).cacheAdvice()
	t := p.Trend
	age := func() time.Duration {
		if t == nil {
			return 0
		}
		return now.Sub(t.Since)
	}
	verdict := ""
	if t != nil {
		verdict = t.Verdict
	}
	var dup string
	if d := p.Duplicate; d != nil {
		dup = duplicateWords(d.Service, d.Workers, d.MedianBytes, gpuName(p.GPU, p.UUID))
	}

	switch api.Verdict(verdict) {
	case api.VerdictLeak:
		switch {
		case key != nil && key.Series == api.SeriesAllocated:
			parts = append(parts, fmt.Sprintf("allocated has grown %s for %s %s: %s",
				rateText(key.BytesPerSecond), durationWords(age()), fitWords(key.Fit), leakCause))
		case key != nil:
			parts = append(parts, fmt.Sprintf("driver-visible memory has grown %s for %s %s; %s, so a leak cannot be told from a growing cache",
				rateText(key.BytesPerSecond), durationWords(age()), fitWords(key.Fit), nvmlOnly))
		default:
			parts = append(parts, "leak: "+t.Reason)
		}
	case api.VerdictUnattributedGrowth:
		rate := ""
		if key != nil {
			rate = " " + rateText(key.BytesPerSecond)
		}
		parts = append(parts, fmt.Sprintf("memory outside the allocator (used − reserved) has grown%s for %s while allocated stayed flat: %s",
			rate, durationWords(age()), outsideWhy))
	case api.VerdictCacheGrowth:
		if key != nil && plateaued(t.Growth, key) {
			parts = append(parts, fmt.Sprintf("reserved grew %s while allocated stayed flat and has plateaued: an allocator cache, not a leak (%s)",
				rateText(key.BytesPerSecond), cacheCure))
		} else {
			rate := ""
			if key != nil {
				rate = " " + rateText(key.BytesPerSecond)
			}
			parts = append(parts, fmt.Sprintf("reserved grows%s for %s while allocated stays flat: an allocator cache, not a leak unless it never plateaus (%s)",
				rate, durationWords(age()), cacheCure))
		}
	case api.VerdictWarmingUp, api.VerdictSteady:
		var s string
		if verdict == string(api.VerdictWarmingUp) {
			s = fmt.Sprintf("warming up: first seen %s ago, no verdict until the warm-up ends (loading a model grows memory legitimately)", durationWords(age()))
		} else {
			s = fmt.Sprintf("steady for %s", durationWords(age()))
			if p.CachedBytes != nil && p.ReservedBytes != nil && *p.CachedBytes >= 1<<30 && *p.CachedBytes*4 >= *p.ReservedBytes {
				s += fmt.Sprintf("; the allocator holds %s cached for reuse (%s)", bytesText(float64(*p.CachedBytes)), cacheCure)
			}
		}
		if dup != "" {
			parts = append(parts, dup, s)
			dup = ""
		} else {
			parts = append(parts, s)
		}
		if !p.Pushed && p.NVMLUsedBytes != nil {
			parts = append(parts, nvmlOnly)
		}
	default:
		parts = append(parts, "no trend yet: the daemon has not watched this process long enough")
		if !p.Pushed && p.NVMLUsedBytes != nil {
			parts = append(parts, nvmlOnly)
		}
	}
	if dup != "" {
		parts = append(parts, "also "+dup)
	}
	if o := oomWords(p); o != "" {
		parts = append([]string{o}, parts...)
	}
	if ph := phaseWords(p); ph != "" {
		parts = append(parts, ph)
	}
	if w := trtWords(p); w != "" {
		parts = append(parts, w)
	}
	switch {
	case p.UnknownDevice:
		parts = append(parts, "pushes a GPU UUID that NVML does not know (check the client's device mapping)")
	case nvmlUp && p.Pushed && p.NVMLUsedBytes == nil:
		parts = append(parts, "NVML does not list this process on its GPU (another PID namespace? run the daemon with hostPID)")
	}
	return strings.Join(parts, "; ")
}

// plateaued: the short window's reserved slope is well below the slope that earned the
// verdict, so the cache has stopped growing.
func plateaued(growth []api.Growth, key *api.Growth) bool {
	if key.Window == api.WindowShort {
		return false
	}
	for _, g := range growth {
		if g.Series == key.Series && g.Window == api.WindowShort && g.Valid {
			return g.BytesPerSecond < key.BytesPerSecond/4
		}
	}
	return false
}
