// Package nvml is the driver's view: it owns the NVIDIA Management Library, polls it on
// a timer and publishes immutable snapshots of per-GPU and per-process memory. Nothing
// outside this package calls NVML, so a scrape can never hang on a wedged driver.
package nvml

import "time"

// MemoryAPI names the NVML call that produced a GPU's memory figures.
const (
	MemoryAPIv2 = "v2" // nvmlDeviceGetMemoryInfo_v2: used excludes the driver's reservation
	MemoryAPIv1 = "v1" // nvmlDeviceGetMemoryInfo: older drivers; driver reservation unknown (0)
)

// Process list kinds, in the bit order used by the kinds bitmask.
const (
	KindCompute  = "compute"
	KindGraphics = "graphics"
	KindMPS      = "mps"
)

// GPU is one physical GPU, or one MIG device when MIG mode is on.
type GPU struct {
	Index    int    // NVML index of the physical GPU (not the CUDA index)
	UUID     string // "GPU-…" for a physical GPU, "MIG-…" for a MIG device
	Name     string
	PCIBusID string // e.g. "00000000:18:00.0"

	MemoryAPI           string // MemoryAPIv2 or MemoryAPIv1
	TotalBytes          uint64
	UsedBytes           uint64
	FreeBytes           uint64
	DriverReservedBytes uint64 // v2 only; 0 with v1

	BAR1Valid      bool // false when BAR1 could not be read
	BAR1TotalBytes uint64
	BAR1UsedBytes  uint64

	// MIG fields. ParentUUID is empty for a physical GPU. When MIG mode is on for a
	// physical GPU, MIGEnabled is true on it and each of its MIG devices follows as its
	// own GPU entry with ParentUUID set.
	MIGEnabled        bool
	ParentUUID        string
	GPUInstanceID     int // -1 when not a MIG device
	ComputeInstanceID int // -1 when not a MIG device
}

// Process is one process's memory on one GPU (or MIG device), deduplicated across the
// compute, graphics and MPS lists.
type Process struct {
	PID       uint32 // host PID namespace, as NVML reports it
	UUID      string // the GPU or MIG device UUID
	UsedBytes uint64
	// Kinds lists the NVML process lists the PID appeared in, sorted:
	// any of "compute", "graphics", "mps".
	Kinds []string
}

// ErrorKey identifies an NVML call failure for vram_nvml_errors_total.
type ErrorKey struct {
	Call  string // e.g. "GetMemoryInfo_v2"
	Error string // short, bounded NVML return name, e.g. "gpu_is_lost", "not_supported"
}

// Snapshot is an immutable view of one poll. Consumers must not modify it.
type Snapshot struct {
	Time          time.Time
	Up            bool // NVML initialised and the last poll enumerated devices
	DriverVersion string
	NVMLVersion   string
	PollDuration  time.Duration // wall time of the last poll
	GPUs          []GPU
	Processes     []Process
	// Errors holds cumulative counts since the daemon started (a copy).
	Errors map[ErrorKey]uint64
}
