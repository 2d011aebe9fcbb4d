// Package oom classifies an allocator's out-of-memory event: was it a true shortage,
// fragmentation of the process's cache, or a peak far above the process's usual floor?
// It is pure arithmetic on the figures the runtime reported at that instant (push's
// OOMEvent) and the floor the daemon has watched; docs/triage.md ("OOM kinds") states
// the same rules in words, and the tests pin each boundary.
package oom

import (
	"fmt"

	"github.com/vram-exporter/vram_exporter/api"
	"github.com/vram-exporter/vram_exporter/push"
)

// PeakRatio and PeakMinBytes say how far above the usual floor a demand must be to be a
// peak: at least PeakRatio times the floor and at least PeakMinBytes more than it. The
// ratio alone would call every OOM of a tiny process a peak; the bytes alone would call
// an ordinary batch of a large model one.
const (
	PeakRatio    = 2
	PeakMinBytes = 256 << 20
)

// Floor is the process's usual allocated bytes on the GPU (the lowest the daemon saw
// over the last minutes); Known is false while the daemon has watched it too briefly.
type Floor struct {
	Bytes uint64
	Known bool
}

// Result is the kind of one event and the figures that decided it.
type Result struct {
	Kind api.OOMKind
	// Free is what the device had free for the process: the driver's free memory,
	// capped by the process's limit minus its reserved bytes.
	Free push.Optional
	// Cached is reserved − allocated at that instant.
	Cached push.Optional
	// Demand is allocated + requested: what the process needed at that instant.
	Demand push.Optional
	Reason string
}

// Classify decides the kind of ev. The rules, in order:
//  1. no requested size, or neither a free figure nor a limit with reserved: unknown;
//  2. requested ≤ free + cached: fragmentation (the bytes were there);
//  3. the floor is known, allocated is reported, and demand = allocated + requested is
//     ≥ PeakRatio × floor and ≥ floor + PeakMinBytes: peak;
//  4. otherwise: shortage.
func Classify(ev push.OOMEvent, floor Floor) Result {
	var r Result
	if ev.Allocated.Set && ev.Reserved.Set && ev.Reserved.Value >= ev.Allocated.Value {
		r.Cached = set(ev.Reserved.Value - ev.Allocated.Value)
	}
	r.Free = free(ev)
	if ev.Allocated.Set && ev.Requested.Set {
		r.Demand = set(ev.Allocated.Value + ev.Requested.Value)
	}
	if !ev.Requested.Set {
		r.Kind, r.Reason = api.OOMUnknown, "the runtime did not report the size of the failed request"
		return r
	}
	if !r.Free.Set {
		r.Kind, r.Reason = api.OOMUnknown, "the runtime reported neither the device's free memory nor its limit"
		return r
	}
	req, avail := ev.Requested.Value, r.Free.Value+r.Cached.Value
	if req <= avail {
		r.Kind = api.OOMFragmentation
		r.Reason = fmt.Sprintf("requested %d B ≤ free %d B + cached %d B: the bytes were there but not in one block", req, r.Free.Value, r.Cached.Value)
		return r
	}
	if floor.Known && r.Demand.Set && isPeak(r.Demand.Value, floor.Bytes) {
		r.Kind = api.OOMPeak
		r.Reason = fmt.Sprintf("requested %d B > free %d B + cached %d B, and demand %d B is ≥ %d× the usual floor %d B", req, r.Free.Value, r.Cached.Value, r.Demand.Value, PeakRatio, floor.Bytes)
		return r
	}
	r.Kind = api.OOMShortage
	r.Reason = fmt.Sprintf("requested %d B > free %d B + cached %d B, and demand is near the usual floor", req, r.Free.Value, r.Cached.Value)
	if !floor.Known || !r.Demand.Set {
		r.Reason = fmt.Sprintf("requested %d B > free %d B + cached %d B (no usual floor to compare with yet)", req, r.Free.Value, r.Cached.Value)
	}
	return r
}

func isPeak(demand, floor uint64) bool {
	return demand >= PeakRatio*floor && demand >= floor+PeakMinBytes
}

// free is the driver's free memory, capped by the limit the process may hold: with
// torch.cuda.set_per_process_memory_fraction the allocator fails at the limit while the
// device still has memory free.
func free(ev push.OOMEvent) push.Optional {
	var head push.Optional
	if ev.DeviceLimit.Set && ev.Reserved.Set {
		h := uint64(0)
		if ev.DeviceLimit.Value > ev.Reserved.Value {
			h = ev.DeviceLimit.Value - ev.Reserved.Value
		}
		head = set(h)
	}
	switch {
	case ev.DeviceFree.Set && head.Set:
		return set(min(ev.DeviceFree.Value, head.Value))
	case ev.DeviceFree.Set:
		return ev.DeviceFree
	}
	return head
}

func set(v uint64) push.Optional { return push.Optional{Value: v, Set: true} }
