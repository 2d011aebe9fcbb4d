package api

import "time"

// OOMKind is how the daemon classifies an out-of-memory event (docs/triage.md, "OOM
// kinds"). The set is closed: it is a label value of vram_runtime_oom_events_total.
type OOMKind string

const (
	// OOMShortage: the request exceeded what the device had free for this process plus
	// all this process's cache, and the process's demand was near its usual floor: the
	// work itself does not fit.
	OOMShortage OOMKind = "shortage"
	// OOMFragmentation: free plus this process's cache held enough bytes, yet no block
	// large enough could be had.
	OOMFragmentation OOMKind = "fragmentation"
	// OOMPeak: the bytes were not there, and the process's demand at that instant was
	// far above its usual floor: a peak, usually concurrent requests.
	OOMPeak OOMKind = "peak"
	// OOMUnknown: the event says too little (no requested size, no free figure), or
	// events were lost between two messages.
	OOMUnknown OOMKind = "unknown"
)

// OOMKinds lists every kind in a stable order, for exporting each counter from zero.
func OOMKinds() []OOMKind {
	return []OOMKind{OOMShortage, OOMFragmentation, OOMPeak, OOMUnknown}
}

// OOM is what the daemon knows of a process's out-of-memory events on one GPU.
type OOM struct {
	// Events counts the events since the daemon first saw the process, per kind (every
	// kind present, from 0).
	Events map[OOMKind]uint64 `json:"events"`
	// Last is the newest event the daemon received, null when it has received none
	// (only counts, or events lost between messages).
	Last *OOMEvent `json:"last"`
}

// OOMEvent is one classified out-of-memory event with the figures that decided it;
// a figure the runtime did not report is null.
type OOMEvent struct {
	Seq    uint64  `json:"seq"`
	Kind   OOMKind `json:"kind"`
	Source string  `json:"source"` // observer, counter or ""
	// Time is when the daemon first received the event.
	Time           time.Time `json:"time"`
	RequestedBytes *uint64   `json:"requested_bytes"`
	// FreeBytes is what the device had free for this process: the driver's free
	// memory, capped by the process's limit minus its reserved bytes.
	FreeBytes *uint64 `json:"free_bytes"`
	// CachedBytes is reserved − allocated of the runtime at that instant.
	CachedBytes           *uint64 `json:"cached_bytes"`
	AllocatedBytes        *uint64 `json:"allocated_bytes"`
	ReservedBytes         *uint64 `json:"reserved_bytes"`
	InactiveSplitBytes    *uint64 `json:"inactive_split_bytes"`
	LargestFreeBlockBytes *uint64 `json:"largest_free_block_bytes"`
	// FloorBytes is the process's usual allocated floor the peak rule compared with,
	// null while the daemon has watched the process too briefly.
	FloorBytes *uint64 `json:"floor_bytes"`
	// Reason says in one sentence which rule decided the kind.
	Reason string `json:"reason"`
}
