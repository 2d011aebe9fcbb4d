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
	Devices        []Device
}

// Device is the part of a Message about one GPU (or MIG instance), keyed by NVML UUID.
type Device struct {
	UUID  string
	Pools []Pool
}

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
)

// reasons is the closed set, in a fixed order, so counters can live in an array.
var reasons = [...]string{
	ReasonTooLarge, ReasonInvalidJSON, ReasonSchema, ReasonUnsupportedVersion,
	ReasonInvalidRuntime, ReasonInvalidLabel, ReasonTooManyLabels, ReasonTooManyDevices,
	ReasonInvalidUUID, ReasonTooManyPools, ReasonInvalidPool, ReasonInvalidBytes,
	ReasonNoPID, ReasonRateLimited, ReasonTooManyProcesses,
	ReasonTooManyProcessDevices, ReasonTooManyProcessPools, ReasonTooManySeries,
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
