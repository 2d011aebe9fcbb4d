// Package capacity draws conclusions across the processes of one joined
// View: workers of one service that each load the same model on a GPU (duplication),
// how many more such workers still fit (headroom), and which growth slope explains a
// process's verdict. It is pure and cheap — no I/O, no clock, O(n log n) in the number
// of processes — so the collector can call it on every scrape and the JSON API on every
// request, and both see the same answer in the same order.
package capacity

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/leak/trend"
)

// DuplicateTolerance is how far (as a fraction of the group median) a worker's
// footprint may be from the median and still count as "the same model loaded again".
const DuplicateTolerance = 0.10

// Grouping bases: what made processes workers of one service.
const (
	BasisServiceLabel = "service_label" // the client label "service"
	BasisCmdline      = "cmdline"       // same comm and command line (no label pushed)
)

// Footprint is a process's memory on its GPU as the driver sees it (NVML used); for a
// process NVML does not see (NVML down, another PID namespace) it falls back to what
// its allocators reserved. ok is false when neither view exists.
func Footprint(p *join.Process) (bytes uint64, ok bool) {
	switch {
	case p.HasNVML:
		return p.UsedBytes, true
	case p.Pushed:
		return p.ReservedBytes, true
	}
	return 0, false
}

// Worker is one member of a duplicate group.
type Worker struct {
	PID   uint32
	Bytes uint64 // Footprint
}

// DuplicateGroup is two or more processes of one service on one GPU that each hold a
// similar footprint: the model is loaded once per worker.
type DuplicateGroup struct {
	UUID string
	GPU  string // NVML index label, "" when NVML does not know the UUID
	// Service is the "service" client label, or the comm for BasisCmdline.
	Service string
	Basis   string   // BasisServiceLabel or BasisCmdline
	Workers []Worker // sorted by PID
	// MedianBytes is the median footprint of the group's candidates; TotalBytes sums
	// the workers' footprints.
	MedianBytes uint64
	TotalBytes  uint64
}

// PIDs returns the workers' PIDs in order.
func (g DuplicateGroup) PIDs() []uint32 {
	out := make([]uint32, len(g.Workers))
	for i, w := range g.Workers {
		out[i] = w.PID
	}
	return out
}

type groupKey struct {
	uuid, basis, service, cmdline string
}

// Duplicates finds duplicated workers in v, sorted by UUID, then service, then basis.
// A process with a "service" label groups by it; one without groups by comm and
// command line (container images are not known to the exporter). Within a candidate
// group, the workers are those whose footprint is within DuplicateTolerance of the
// median; a group is reported when at least two remain. Processes with no footprint
// (or 0 bytes) never take part.
func Duplicates(v *join.View) []DuplicateGroup {
	if v == nil {
		return nil
	}
	type cand struct {
		gpu     string
		workers []Worker
	}
	cands := map[groupKey]*cand{}
	for i := range v.Processes {
		p := &v.Processes[i]
		b, ok := Footprint(p)
		if !ok || b == 0 {
			continue
		}
		k := groupKey{uuid: p.UUID}
		if s := p.Label("service"); s != "" {
			k.basis, k.service = BasisServiceLabel, s
		} else if p.HasFacts && (p.Facts.Comm != "" || p.Facts.Cmdline != "") {
			k.basis, k.service, k.cmdline = BasisCmdline, p.Facts.Comm, p.Facts.Cmdline
		} else {
			continue
		}
		c := cands[k]
		if c == nil {
			c = &cand{gpu: p.GPU}
			cands[k] = c
		}
		c.workers = append(c.workers, Worker{PID: p.PID, Bytes: b})
	}
	var out []DuplicateGroup
	for k, c := range cands {
		if len(c.workers) < 2 {
			continue
		}
		med := median(c.workers)
		lo, hi := float64(med)*(1-DuplicateTolerance), float64(med)*(1+DuplicateTolerance)
		g := DuplicateGroup{UUID: k.uuid, GPU: c.gpu, Service: k.service, Basis: k.basis, MedianBytes: med}
		for _, w := range c.workers {
			if f := float64(w.Bytes); f >= lo && f <= hi {
				g.Workers = append(g.Workers, w)
				g.TotalBytes += w.Bytes
			}
		}
		if len(g.Workers) < 2 {
			continue
		}
		slices.SortFunc(g.Workers, func(a, b Worker) int { return cmp.Compare(a.PID, b.PID) })
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b DuplicateGroup) int {
		return cmp.Or(cmp.Compare(a.UUID, b.UUID), cmp.Compare(a.Service, b.Service), cmp.Compare(a.Basis, b.Basis),
			cmp.Compare(a.Workers[0].PID, b.Workers[0].PID))
	})
	return out
}

// median of the footprints; for an even count, the lower middle, so the median is
// always a real worker's footprint.
func median(ws []Worker) uint64 {
	b := make([]uint64, len(ws))
	for i, w := range ws {
		b[i] = w.Bytes
	}
	slices.Sort(b)
	return b[(len(b)-1)/2]
}

// Headroom is how many more workers like the largest one fit on a GPU.
type Headroom struct {
	UUID string
	GPU  string // NVML index label
	// LargestWorkerBytes is the largest footprint among the GPU's processes, and
	// LargestPID its process.
	LargestWorkerBytes uint64
	LargestPID         uint32
	FreeBytes          uint64
	MarginBytes        uint64
	// Workers = floor((free − margin) / largest), 0 when free ≤ margin.
	Workers uint64
	// ReclaimableBytes is what the GPU's processes hold cached that their runtimes
	// would hand back (Reclaimable); WorkersIfReclaimed counts workers in free plus
	// that: "no room now, 3 if the caches were returned" is another page than "full".
	ReclaimableBytes   uint64
	WorkersIfReclaimed uint64
}

// HeadroomPerGPU returns, in the View's GPU order, the headroom of every GPU that NVML
// reports and that has at least one process with a non-zero footprint. Free memory is
// NVML's, so nothing is returned while NVML is down.
func HeadroomPerGPU(v *join.View, marginBytes uint64) []Headroom {
	if v == nil || len(v.GPUs) == 0 {
		return nil
	}
	type big struct {
		pid   uint32
		bytes uint64
	}
	largest := make(map[string]big, len(v.GPUs))
	for i := range v.Processes {
		p := &v.Processes[i]
		b, ok := Footprint(p)
		if !ok || b == 0 {
			continue
		}
		if cur, seen := largest[p.UUID]; !seen || b > cur.bytes || (b == cur.bytes && p.PID < cur.pid) {
			largest[p.UUID] = big{p.PID, b}
		}
	}
	reclaim := map[string]GPUReclaim{}
	for _, r := range Reclaimable(v) {
		reclaim[r.UUID] = r
	}
	var out []Headroom
	for _, g := range v.GPUs {
		l, ok := largest[g.UUID]
		if !ok {
			continue
		}
		h := Headroom{UUID: g.UUID, GPU: strconv.Itoa(g.Index), LargestWorkerBytes: l.bytes, LargestPID: l.pid,
			FreeBytes: g.FreeBytes, MarginBytes: marginBytes}
		if g.FreeBytes > marginBytes {
			h.Workers = (g.FreeBytes - marginBytes) / l.bytes
		}
		h.ReclaimableBytes = reclaim[g.UUID].Bytes
		if f := g.FreeBytes + h.ReclaimableBytes; f > marginBytes {
			h.WorkersIfReclaimed = (f - marginBytes) / l.bytes
		}
		out = append(out, h)
	}
	return out
}

// KeyGrowth returns the growth that explains a verdict: for leak the allocated series
// (used when the process pushes nothing), for unattributed_growth the unattributed
// series, for cache_growth the reserved series; otherwise the steepest of allocated and
// used. Of a series' two windows the one with the better fit wins (the short one on a
// tie), as the detector accepts growth from either: a cache that has plateaued still
// shows its growth in the long window. ok is false when no valid growth exists.
func KeyGrowth(r trend.Result) (trend.Growth, bool) {
	find := func(series string) (trend.Growth, bool) {
		var best trend.Growth
		var ok bool
		for _, g := range r.Growth {
			if g.Series != series || !g.Valid {
				continue
			}
			if !ok || g.Fit > best.Fit || (g.Fit == best.Fit && g.Window == trend.WindowShort) {
				best, ok = g, true
			}
		}
		return best, ok
	}
	switch r.Verdict {
	case trend.Leak:
		if g, ok := find(trend.SeriesAllocated); ok {
			return g, true
		}
		return find(trend.SeriesUsed)
	case trend.UnattributedGrowth:
		return find(trend.SeriesUnattributed)
	case trend.CacheGrowth:
		return find(trend.SeriesReserved)
	}
	a, aok := find(trend.SeriesAllocated)
	u, uok := find(trend.SeriesUsed)
	switch {
	case aok && uok:
		if u.BytesPerSecond > a.BytesPerSecond {
			return u, true
		}
		return a, true
	case aok:
		return a, true
	}
	return u, uok
}
