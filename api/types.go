// Package api is the wire contract of the JSON API (docs/api.md): the response types
// served at /api/v1/… and the shared words (verdicts, series, windows). It imports
// nothing of the daemon, so the on-call command (package triage) decodes the very types
// package apiserver encodes, and builds without cgo, NVML or procfs.
//
// Field names are snake_case; byte counts are integers; times are RFC 3339; a value
// that a source did not provide is null (or omitted where noted), never 0.
package api

import "time"

// Version is the API path version.
const Version = "v1"

// Paths served by the handler.
const (
	PathStatus    = "/api/v1/status"
	PathGPUs      = "/api/v1/gpus"
	PathProcesses = "/api/v1/processes"
)

// Status is GET /api/v1/status: what the daemon is and how its sources are.
type Status struct {
	// Time is when the view being served was joined.
	Time time.Time `json:"time"`
	// Node is the daemon host's name.
	Node string `json:"node"`
	// Version is the exporter's version.
	Version string `json:"version"`
	// Demo is true when every figure is simulated (demo mode).
	Demo          bool   `json:"demo"`
	NVMLUp        bool   `json:"nvml_up"`
	DriverVersion string `json:"driver_version"`
	NVMLVersion   string `json:"nvml_version"`
	GPUs          int    `json:"gpus"`
	Processes     int    `json:"processes"`
	// PushSenders is the number of live push connections.
	PushSenders int `json:"push_senders"`
	// ProcfsErrors counts process-fact reads that failed in the last join for a reason
	// other than the process having exited.
	ProcfsErrors int `json:"procfs_errors"`
	// UnknownDevices counts pushed (pid, uuid) pairs with a UUID NVML does not know.
	UnknownDevices int `json:"unknown_devices"`
	// SafetyMarginBytes is the headroom safety margin (headroom.safety_margin_bytes).
	SafetyMarginBytes uint64 `json:"safety_margin_bytes"`
}

// GPUs is GET /api/v1/gpus.
type GPUs struct {
	Time   time.Time `json:"time"`
	Demo   bool      `json:"demo"`
	NVMLUp bool      `json:"nvml_up"`
	GPUs   []GPU     `json:"gpus"`
	// Duplicates lists worker duplication over all GPUs, sorted by uuid then service.
	Duplicates []Duplicate `json:"duplicates"`
}

// GPU is one NVML GPU or MIG device.
type GPU struct {
	Index    int    `json:"index"`
	UUID     string `json:"uuid"`
	Name     string `json:"name"`
	PCIBusID string `json:"pci_bus_id"`
	// ParentUUID is set on a MIG device; MIGEnabled on a physical GPU in MIG mode.
	ParentUUID string `json:"parent_uuid,omitempty"`
	MIGEnabled bool   `json:"mig_enabled"`
	// MemoryAPI is "v2" or "v1" (v1: driver reservation unknown, reported 0).
	MemoryAPI           string `json:"memory_api"`
	TotalBytes          uint64 `json:"total_bytes"`
	UsedBytes           uint64 `json:"used_bytes"`
	FreeBytes           uint64 `json:"free_bytes"`
	DriverReservedBytes uint64 `json:"driver_reserved_bytes"`
	// Processes is how many processes the view has on this GPU.
	Processes int `json:"processes"`
	// Growth holds the fitted slopes of the GPU's used memory (series "used").
	Growth []Growth `json:"growth"`
	// Exhaustion is null unless used memory rises with a good fit.
	Exhaustion *Exhaustion `json:"exhaustion"`
	// Headroom is null when the GPU has no process with a known footprint.
	Headroom *Headroom `json:"headroom"`
	// ReclaimableBytes is what ReclaimableProcesses processes hold cached that their
	// runtime hands back on request (torch, CuPy; never JAX or TensorRT).
	ReclaimableBytes     uint64 `json:"reclaimable_bytes"`
	ReclaimableProcesses int    `json:"reclaimable_processes"`
}

// Growth is one fitted slope.
type Growth struct {
	Series         string  `json:"series"` // allocated, reserved, used, unattributed
	Window         string  `json:"window"` // short, long
	BytesPerSecond float64 `json:"bytes_per_second"`
	Fit            float64 `json:"fit"` // R², 0..1
	// Valid is false until the window holds enough points for the slope to mean
	// anything; an invalid slope is 0.
	Valid bool `json:"valid"`
}

// Exhaustion forecasts when a GPU runs out of memory at the current rate.
type Exhaustion struct {
	Seconds float64 `json:"seconds"`
	// At is Time + Seconds.
	At time.Time `json:"at"`
	// UsedBytesPerSecond is the short-window slope of used memory the forecast uses.
	UsedBytesPerSecond float64 `json:"used_bytes_per_second"`
}

// Headroom is how many more workers like the GPU's largest still fit.
type Headroom struct {
	// Workers = floor((free_bytes − margin_bytes) / largest_worker_bytes), ≥ 0.
	Workers            uint64 `json:"workers"`
	LargestWorkerBytes uint64 `json:"largest_worker_bytes"`
	LargestWorkerPID   uint32 `json:"largest_worker_pid"`
	FreeBytes          uint64 `json:"free_bytes"`
	MarginBytes        uint64 `json:"margin_bytes"`
	// WorkersIfReclaimed counts in free + the GPU's reclaimable cache.
	WorkersIfReclaimed uint64 `json:"workers_if_reclaimed"`
}

// Duplicate is a group of workers of one service on one GPU with similar footprints.
type Duplicate struct {
	UUID string `json:"uuid"`
	GPU  string `json:"gpu"`
	// Service is the "service" client label, or the comm when Basis is "cmdline".
	Service string `json:"service"`
	// Basis is "service_label" or "cmdline".
	Basis       string   `json:"basis"`
	PIDs        []uint32 `json:"pids"`
	WorkerBytes []uint64 `json:"worker_bytes"` // footprint per worker, in pids order
	MedianBytes uint64   `json:"median_bytes"`
	TotalBytes  uint64   `json:"total_bytes"`
}

// Processes is GET /api/v1/processes.
type Processes struct {
	Time      time.Time `json:"time"`
	Demo      bool      `json:"demo"`
	NVMLUp    bool      `json:"nvml_up"`
	Processes []Process `json:"processes"` // sorted by uuid then pid
}

// Process is one process on one GPU.
type Process struct {
	PID  uint32 `json:"pid"`
	UUID string `json:"uuid"`
	// GPU is the NVML index of the (parent) GPU as a string, "" when NVML does not know
	// the UUID.
	GPU string `json:"gpu"`

	// NVMLUsedBytes is the driver's figure, null when NVML does not see the process.
	NVMLUsedBytes *uint64  `json:"nvml_used_bytes"`
	NVMLKinds     []string `json:"nvml_kinds,omitempty"`

	// Facts is null when procfs could not be read (process gone, other PID namespace).
	Facts *Facts `json:"facts"`

	// Pushed is true when the process pushes allocator stats; the allocator fields
	// below are null when it does not.
	Pushed         bool              `json:"pushed"`
	UnknownDevice  bool              `json:"unknown_device"`
	Runtimes       []Runtime         `json:"runtimes"`
	Labels         map[string]string `json:"labels"`
	Pools          []Pool            `json:"pools"`
	AllocatedBytes *uint64           `json:"allocated_bytes"`
	ReservedBytes  *uint64           `json:"reserved_bytes"`
	CachedBytes    *uint64           `json:"cached_bytes"`
	// UnattributedBytes = nvml_used_bytes − reserved_bytes, null unless both exist;
	// may be negative.
	UnattributedBytes *int64     `json:"unattributed_bytes"`
	LastPush          *time.Time `json:"last_push"`

	// Trend is null until the trend engine has seen the process.
	Trend *Trend `json:"trend"`
	// Duplicate is set when the process is one of duplicated workers.
	Duplicate *DuplicateRef `json:"duplicate"`
	// ReclaimableBytes is the part of cached_bytes the runtime hands back on request,
	// null when the process pushes nothing.
	ReclaimableBytes *uint64 `json:"reclaimable_bytes"`
	// OOM is null until the process's client reports out-of-memory events.
	OOM *OOM `json:"oom"`
	// PhasePeaks are the peak allocated bytes per named phase since the process's
	// previous push, sorted by phase ([] when it reports none).
	PhasePeaks []PhasePeak `json:"phase_peaks"`
	// TRTEngines are the process's TensorRT engines on this GPU ([] when none).
	TRTEngines []TRTEngine `json:"trt_engines"`
}

// TRTEngine is one TensorRT engine and its execution contexts; figures the client did
// not report are null.
type TRTEngine struct {
	Engine   string `json:"engine"`
	Contexts uint64 `json:"contexts"`
	// ContextBytes is one context's activation memory; HeldBytes all contexts'.
	ContextBytes         *uint64 `json:"context_bytes"`
	HeldBytes            *uint64 `json:"held_bytes"`
	WeightsBytes         *uint64 `json:"weights_bytes"`
	StreamableBytes      *uint64 `json:"streamable_bytes"`
	StreamingBudgetBytes *uint64 `json:"streaming_budget_bytes"`
}

// PhasePeak is the highest allocated bytes inside one phase of a process.
type PhasePeak struct {
	Phase              string `json:"phase"`
	PeakAllocatedBytes uint64 `json:"peak_allocated_bytes"`
}

// Facts are the host's facts about a process.
type Facts struct {
	Comm    string `json:"comm"`
	Cmdline string `json:"cmdline"`
	// StartTime is omitted when unknown.
	StartTime   *time.Time `json:"start_time,omitempty"`
	RSSBytes    uint64     `json:"rss_bytes"`
	ContainerID string     `json:"container_id"` // "<runtime>://<64 hex>", "" outside a container
	PodUID      string     `json:"pod_uid"`
}

// Runtime is one push connection's runtime and client labels.
type Runtime struct {
	Name    string            `json:"name"`
	Version string            `json:"version"`
	Labels  map[string]string `json:"labels"`
	// Allocator holds the allocator settings the client pushed ({} when none).
	Allocator map[string]string `json:"allocator"`
}

// Pool is one allocator pool; optional figures are null when the runtime does not
// report them.
type Pool struct {
	Name               string  `json:"name"`
	Parent             string  `json:"parent"`
	AllocatedBytes     uint64  `json:"allocated_bytes"`
	ReservedBytes      uint64  `json:"reserved_bytes"`
	CachedBytes        uint64  `json:"cached_bytes"`
	PeakAllocatedBytes *uint64 `json:"peak_allocated_bytes"`
	ActiveBytes        *uint64 `json:"active_bytes"`
	InactiveSplitBytes *uint64 `json:"inactive_split_bytes"`
	LimitBytes         *uint64 `json:"limit_bytes"`
	AllocRetries       *uint64 `json:"alloc_retries"`
	OOMs               *uint64 `json:"ooms"`
}

// Trend is the leak detector's state for a process.
type Trend struct {
	// Verdict is leak, cache_growth, unattributed_growth, steady or warming_up.
	Verdict string    `json:"verdict"`
	Since   time.Time `json:"since"`
	Reason  string    `json:"reason"`
	Growth  []Growth  `json:"growth"`
	// KeyGrowth is the slope that explains the verdict (see docs/api.md), null when
	// none is valid yet.
	KeyGrowth *Growth `json:"key_growth"`
}

// DuplicateRef points from a process to its duplicate group.
type DuplicateRef struct {
	Service string `json:"service"`
	Basis   string `json:"basis"`
	Workers int    `json:"workers"`
	// PIDs of all workers of the group, this one included.
	PIDs        []uint32 `json:"pids"`
	MedianBytes uint64   `json:"median_bytes"`
}

// Error is the body of every error response.
type Error struct {
	Status int    `json:"status"`
	Error  string `json:"error"`
}
