// Package push is where serving processes hand their allocator's view of GPU
// memory to the daemon: the unix SOCK_SEQPACKET server, the strict decoder of the v1
// protocol (docs/protocol.md) and the bounded per-connection Store. It knows nothing of
// Prometheus: it exposes plain Stats and Snapshot structs that the collector turns into
// metrics.
package push

import "fmt"

// Version is the only protocol version this package accepts.
const Version = 1

// Limits of the v1 protocol; docs/protocol.md lists the same numbers.
const (
	MaxLabels              = 8
	MaxLabelNameBytes      = 64
	MaxLabelValueBytes     = 128
	MaxRuntimeBytes        = 32
	MaxRuntimeVersionBytes = 64
	MaxDevices             = 16
	MaxUUIDBytes           = 96
	MaxPools               = 32
	MaxPoolNameBytes       = 64
	// Allocator settings and OOM events (docs/protocol.md, "Allocator settings" and
	// "OOM events"): optional, bounded like everything a sender controls.
	MaxAllocatorSettings   = 16
	MaxAllocatorKeyBytes   = 32
	MaxAllocatorValueBytes = 64
	MaxOOMEvents           = 8
	MaxPhases              = 16
	MaxTRTEngines          = 8
	MaxPhaseBytes          = 32
	// MaxRequestsInFlight bounds requests_in_flight (docs/protocol.md, "Requests in
	// flight"): far above what one process serves at once.
	MaxRequestsInFlight = 1 << 20
	// MaxValue bounds every byte and counter field (1 PiB): far above any GPU, and low
	// enough that sums over pools and devices can never overflow a uint64 or lose
	// precision in a float64.
	MaxValue = 1 << 50
)

// Message is one decoded, validated snapshot from a sender. Decode returns fresh maps and
// slices; the Store shares them with every Snapshot, so nobody may modify a Message once
// it has been handed to the Store.
type Message struct {
	V              int
	Runtime        string
	RuntimeVersion string
	Labels         map[string]string // nil when the message has none
	ClientDropped  uint64
	// RequestsInFlight is how many requests the sender had in flight when it read the
	// allocator stats of this message (0: idle at that instant), unset when the client
	// does not say. A server that is never idle has a floor of allocated bytes equal to
	// the least load in flight, which climbs with traffic like a leak; a sample taken
	// with 0 in flight is the process at rest, its true floor, and a window without one
	// had no idle moment.
	RequestsInFlight Optional
	Devices          []Device
	// Allocator holds the runtime's allocator settings (expandable_segments,
	// preallocate, …), nil when the message has none: advice depends on them.
	Allocator map[string]string
}

// Device is the part of a Message about one GPU (or MIG instance), keyed by NVML UUID.
type Device struct {
	UUID  string
	Pools []Pool
	// OOMSeq is the number of out-of-memory events the client recorded on this device
	// since the process started; OOMEvents the newest of them (at most MaxOOMEvents),
	// oldest first. Every message repeats them, so a lost message loses no event: the
	// daemon counts each Seq once.
	OOMSeq    Optional
	OOMEvents []OOMEvent
	// PhasePeaks is the peak allocated bytes inside each named phase of the process
	// (with reporter.phase(…)) since the previous message, nil when none ran.
	PhasePeaks []PhasePeak
	// TRTEngines are the TensorRT engines of the process on this device with their
	// execution contexts (the client's TensorRTTracker), nil when none.
	TRTEngines []TRTEngine
}

// TRTEngine is one TensorRT engine and the activation memory of its contexts.
type TRTEngine struct {
	Engine   string // the engine's pool name
	Contexts uint64
	// ContextBytes is the largest device memory one context needs for activations;
	// HeldBytes what all contexts hold together (less than Contexts × ContextBytes when
	// contexts share one user-managed buffer).
	ContextBytes, HeldBytes Optional
	WeightsBytes            Optional
	// StreamableBytes and StreamingBudgetBytes are set under weight streaming.
	StreamableBytes, StreamingBudgetBytes Optional
}

// PhasePeak is the highest allocated bytes seen inside one phase since the last push.
type PhasePeak struct {
	Phase         string
	PeakAllocated uint64
}

// OOMEvent is what the runtime knew at the instant an allocation failed. Every figure
// but Seq is optional: an event derived from the ooms counter carries none.
type OOMEvent struct {
	Seq uint64 // 1 for the process's first event on the device, then 2, 3, …
	// Source is "observer" (the runtime's OOM callback) or "counter" (the ooms
	// counter rose between two samples).
	Source string
	// Requested is the size of the allocation that failed.
	Requested Optional
	// DeviceFree is the driver's free memory; DeviceLimit the most this process may
	// hold (a per-process fraction, else the device's total).
	DeviceFree, DeviceLimit Optional
	// The runtime's own figures at that instant.
	Allocated, Reserved, InactiveSplit Optional
	// LargestFreeBlock is the largest cached block not in use: a request larger than it
	// cannot be served from the cache whatever the cache holds.
	LargestFreeBlock Optional
}

// OOM event sources.
const (
	OOMSourceObserver = "observer"
	OOMSourceCounter  = "counter"
)

// Pool is one allocator inside the process. A pool with a Parent is carved out of that
// parent's reserved bytes and must never be added into a process total.
type Pool struct {
	Name, Parent        string
	Allocated, Reserved uint64
	PeakAllocated       Optional
	Active              Optional
	InactiveSplit       Optional
	Limit               Optional
	AllocRetries        Optional
	OOMs                Optional
}

// CachedBytes is reserved − allocated: memory the allocator holds for reuse.
func (p Pool) CachedBytes() uint64 {
	if p.Reserved < p.Allocated {
		return 0 // Decode rejects this; kept defensive for hand-built pools
	}
	return p.Reserved - p.Allocated
}

// Optional is a byte or counter field a runtime may not report; Set tells "absent" from 0.
type Optional struct {
	Value uint64
	Set   bool
}

// Reject reasons, exactly the values of vram_push_rejected_total{reason}.
const (
	ReasonTooLarge           = "too_large"
	ReasonInvalidJSON        = "invalid_json"
	ReasonSchema             = "schema"
	ReasonUnsupportedVersion = "unsupported_version"
	ReasonInvalidRuntime     = "invalid_runtime"
	ReasonInvalidLabel       = "invalid_label"
	ReasonTooManyLabels      = "too_many_labels"
	ReasonTooManyDevices     = "too_many_devices"
	ReasonInvalidUUID        = "invalid_uuid"
	ReasonTooManyPools       = "too_many_pools"
	ReasonInvalidPool        = "invalid_pool"
	ReasonInvalidBytes       = "invalid_bytes"
	ReasonNoPID              = "no_pid"
	ReasonRateLimited        = "rate_limited"
	ReasonTooManyProcesses   = "too_many_processes"
	// The bounds over all of a process's connections and over all senders (StoreOptions).
	ReasonTooManyProcessDevices = "too_many_process_devices"
	ReasonTooManyProcessPools   = "too_many_process_pools"
	ReasonTooManySeries         = "too_many_series"
	ReasonInvalidAllocator      = "invalid_allocator"
	ReasonTooManyOOMEvents      = "too_many_oom_events"
	ReasonInvalidOOMEvent       = "invalid_oom_event"
	ReasonInvalidPhase          = "invalid_phase"
	ReasonInvalidTRTEngine      = "invalid_trt_engine"
)

// reasons is the closed set, in a fixed order, so counters can live in an array.
var reasons = [...]string{
	ReasonTooLarge, ReasonInvalidJSON, ReasonSchema, ReasonUnsupportedVersion,
	ReasonInvalidRuntime, ReasonInvalidLabel, ReasonTooManyLabels, ReasonTooManyDevices,
	ReasonInvalidUUID, ReasonTooManyPools, ReasonInvalidPool, ReasonInvalidBytes,
	ReasonNoPID, ReasonRateLimited, ReasonTooManyProcesses,
	ReasonTooManyProcessDevices, ReasonTooManyProcessPools, ReasonTooManySeries,
	ReasonInvalidAllocator, ReasonTooManyOOMEvents, ReasonInvalidOOMEvent, ReasonInvalidPhase,
	ReasonInvalidTRTEngine,
}

// Reasons returns every reject reason, so a collector can export each at zero from the
// start (a counter that appears only on its first increment breaks rate()).
func Reasons() []string { return append([]string(nil), reasons[:]...) }

func reasonIndex(r string) int {
	for i, x := range reasons {
		if x == r {
			return i
		}
	}
	return -1
}

// RejectError says why a message was dropped. Reason is one of the bounded Reason*
// values (safe as a metric label); Detail is for humans and logs only.
type RejectError struct {
	Reason string
	Detail string
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("push message rejected (%s): %s", e.Reason, e.Detail)
}

func reject(reason, format string, args ...any) *RejectError {
	return &RejectError{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// quote shortens client-supplied text before it goes into a Detail, so a hostile sender
// cannot make the daemon log 64 KiB lines.
func quote(s string) string {
	const max = 48
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}
