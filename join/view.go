// Package join is the join: on every sample tick it takes the latest of each source —
// the NVML snapshot, the pushed allocator stats, process facts from procfs — joins them
// per (kernel-verified PID, GPU UUID), feeds the trend engine, and publishes one
// immutable View. Everything that reads (the Prometheus collector, the JSON API) reads a
// View; nothing that reads ever reaches a source, so a scrape costs the same whatever
// the driver is doing.
package join

import (
	"math"
	"time"

	"github.com/vram-exporter/vram_exporter/leak/trend"
	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/procinfo"
	"github.com/vram-exporter/vram_exporter/push"
)

// View is one joined, immutable picture of the node. Readers must not modify it.
type View struct {
	Time time.Time
	// NVML is the driver snapshot the view was joined from (Up, versions, errors, poll
	// duration). Its GPUs and Processes are also reflected in GPUs and Processes below.
	NVML nvml.Snapshot
	GPUs []GPU
	// Processes holds one entry per (PID, GPU UUID) seen by NVML or pushed by a client,
	// sorted by UUID then PID.
	Processes []Process
	// Senders are the live push connections the view was joined from (within the TTL).
	Senders []push.Sender
	// ProcfsErrors counts process-fact reads in this tick that failed for a reason other
	// than the process having exited (a wrong --path.procfs, permissions).
	ProcfsErrors int
	// UnknownDevices counts pushed (pid, uuid) pairs whose UUID NVML does not know while
	// NVML is up (a client reporting the wrong UUID, or a GPU NVML cannot see).
	UnknownDevices int
	// PIDReusedSenders counts, since the daemon started, push connections left out of
	// the view because their PID had been reused by another process (each once).
	PIDReusedSenders uint64
	// TrendKeys is how many (pid, uuid) histories the trend engine holds after this tick;
	// TrendRefused counts, since the daemon started, samples of new (pid, uuid) the
	// engine did not track because it held its maximum (trend.max_keys).
	TrendKeys    int
	TrendRefused uint64
	// Demo is true when the sources are simulated (demo mode), never on a real node.
	Demo bool
}

// GPU is one NVML GPU (or MIG device) with its growth trend.
type GPU struct {
	nvml.GPU
	Trend    trend.GPUResult
	HasTrend bool
}

// Sample is what the trend engine (and a recorded trace) sees of g at t.
func (g *GPU) Sample(t time.Time) trend.GPUSample {
	return trend.GPUSample{UUID: g.UUID, T: t, Used: float64(g.UsedBytes), Total: float64(g.TotalBytes)}
}

// Process is one process on one GPU: what the driver sees, what its allocators said, and
// what the two together mean.
type Process struct {
	PID  uint32
	UUID string
	// GPU is the NVML index of the (parent) GPU as a label string, "" when NVML does not
	// know the UUID.
	GPU string

	// Driver's view.
	HasNVML   bool
	UsedBytes uint64
	Kinds     []string

	// Host facts; HasFacts is false when procfs could not be read (process gone,
	// not in our PID namespace).
	HasFacts bool
	Facts    procinfo.Facts

	// Allocator's view, merged over the process's push connections.
	Pushed        bool
	UnknownDevice bool // pushed UUID that NVML does not know while NVML is up
	Runtimes      []Runtime
	Pools         []push.Pool // sorted by name
	// AllocatedBytes and ReservedBytes sum the top-level pools (Parent == ""): nested
	// pools live inside their parent and are never counted twice.
	AllocatedBytes uint64
	ReservedBytes  uint64
	// LastPush is when the newest message for this process arrived.
	LastPush time.Time
	// PushRepeat: the allocator's view is the push an earlier tick already had (the
	// client pushes on its own clock): the trend engine takes it for the floors, not as
	// a new sample of the process at rest.
	PushRepeat bool
	// InFlight is how many requests the process had in flight when its client read the
	// stats it pushed (requests_in_flight, an opt-in: HasInFlight), the largest of its
	// connections' that say: a request in flight on any of them lifts the allocated
	// bytes above the floor a leak grows (see trend.Sample.InFlight).
	InFlight    uint64
	HasInFlight bool

	// UnattributedBytes = UsedBytes − ReservedBytes, only when both views exist
	// (HasUnattributed). Negative when an allocator reports more than the driver sees
	// (e.g. reserved virtual ranges not yet backed, or a stale push racing a free).
	HasUnattributed   bool
	UnattributedBytes int64

	Trend    trend.Result
	HasTrend bool

	// The diagnosis (diagnosis.go). OOM is nil until the process sends oom_seq for
	// this GPU. ReclaimableBytes is the cache of its top-level pools that the runtime
	// hands back on request (torch's empty_cache, CuPy's free_all_blocks); a JAX or
	// TensorRT pool is never counted: neither gives memory back while the process lives.
	OOM              *OOMStats
	ReclaimableBytes uint64
	// PhasePeaks are the phase peaks of the newest message that reported any, sorted
	// by phase; nil when the process reports none.
	PhasePeaks []push.PhasePeak
	// TRTEngines are the TensorRT engines of the newest message that reported any.
	TRTEngines []push.TRTEngine
}

// Runtime describes one push connection's runtime and client labels.
type Runtime struct {
	Name    string
	Version string
	Labels  map[string]string
	// Allocator holds the runtime's allocator settings as pushed (nil when none).
	Allocator map[string]string
}

// Sample is what the trend engine (and a recorded trace) sees of p at t: the driver's
// used bytes and the top-level pool sums, each present only when its view exists.
func (p *Process) Sample(t time.Time) trend.Sample {
	return trend.Sample{
		Key:  p.Key(),
		T:    t,
		Used: float64(p.UsedBytes), HasUsed: p.HasNVML,
		Allocated: float64(p.AllocatedBytes), HasAllocated: p.Pushed,
		Reserved: float64(p.ReservedBytes), HasReserved: p.Pushed,
		Repeat:   p.Pushed && p.PushRepeat,
		InFlight: uint32(min(p.InFlight, math.MaxUint32)), HasInFlight: p.HasInFlight,
	}
}

// Key is p's trend key: the PID with its start time (a reused PID is another process)
// and the GPU.
func (p *Process) Key() trend.Key {
	return trend.Key{PID: p.PID, Start: p.Facts.StartTicks, UUID: p.UUID}
}

// Label returns the client label name from any runtime of the process ("" if none).
func (p *Process) Label(name string) string {
	for _, r := range p.Runtimes {
		if v, ok := r.Labels[name]; ok {
			return v
		}
	}
	return ""
}
