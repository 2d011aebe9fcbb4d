package join

import (
	"slices"
	"strings"
	"time"

	"github.com/vram-exporter/vram_exporter/api"
	"github.com/vram-exporter/vram_exporter/oom"
	"github.com/vram-exporter/vram_exporter/push"
)

// The diagnosis is the join's memory beyond one tick that the field guides' checklist
// needs: each process's usual allocated floor (to tell a peak from a shortage) and the
// out-of-memory events it has counted (every message repeats the newest, so each seq
// must be counted once). It is bounded by the processes in the view and forgets one
// unseen for SweepIdle.

// FloorBucket and FloorWarmup shape the usual floor: the lowest allocated bytes over
// the current and the previous bucket, known once the process has been watched for
// FloorWarmup. Two buckets keep the floor recent (a model unloaded an hour ago no longer
// counts) without keeping every sample.
const (
	FloorBucket = 5 * time.Minute
	FloorWarmup = time.Minute
)

// OOMStats is what the daemon has counted of a process's OOM events on one GPU.
type OOMStats struct {
	// Events per kind since the daemon first saw the process; every kind is present.
	Events map[api.OOMKind]uint64
	// Last is the newest event the messages carried, nil when none has been seen yet
	// (oom_seq without events, or events lost between messages).
	Last *LastOOM
}

// LastOOM is one classified event.
type LastOOM struct {
	Event  push.OOMEvent
	Result oom.Result
	Floor  oom.Floor
	// Time is when the daemon first received the event.
	Time time.Time
}

type diagKey struct {
	pid   uint32
	start uint64
	uuid  string
}

type floorState struct {
	first, bucketStart time.Time
	cur, prev          uint64
	hasPrev            bool
}

func (f *floorState) observe(now time.Time, allocated uint64) {
	switch {
	case f.first.IsZero():
		f.first, f.bucketStart, f.cur = now, now, allocated
	case now.Sub(f.bucketStart) >= FloorBucket:
		f.prev, f.hasPrev = f.cur, true
		f.bucketStart, f.cur = now, allocated
	default:
		f.cur = min(f.cur, allocated)
	}
}

func (f *floorState) floor(now time.Time) oom.Floor {
	if f.first.IsZero() {
		return oom.Floor{}
	}
	b := f.cur
	if f.hasPrev {
		b = min(b, f.prev)
	}
	return oom.Floor{Bytes: b, Known: now.Sub(f.first) >= FloorWarmup}
}

type diagState struct {
	seen   time.Time
	floor  floorState
	seq    uint64
	hasOOM bool
	counts map[api.OOMKind]uint64
	last   *LastOOM
}

type diagnosis struct {
	idle  time.Duration
	state map[diagKey]*diagState
}

func newDiagnosis(idle time.Duration) diagnosis {
	return diagnosis{idle: idle, state: map[diagKey]*diagState{}}
}

// oomStream is the OOM part of one device of one message.
type oomStream struct {
	seq    uint64
	events []push.OOMEvent
}

// observe updates floors and OOM counts from the view and writes each process's OOM
// stats and reclaimable bytes into it. v is not published yet, so it may be modified.
func (d *diagnosis) observe(v *View) {
	now := v.Time
	type pu struct {
		pid  uint32
		uuid string
	}
	// One OOM stream per (pid, uuid): the torch observer is attached once per process,
	// so a second connection with OOM events is a second reporter of the same events;
	// the higher count wins.
	streams := map[pu]oomStream{}
	reclaim := map[pu]uint64{}
	type phases struct {
		at    time.Time
		peaks []push.PhasePeak
	}
	peaks := map[pu]phases{}
	type engines struct {
		at  time.Time
		all []push.TRTEngine
	}
	trt := map[pu]engines{}
	for _, s := range v.Senders {
		returns := returnsCache(s.Msg.Runtime)
		for _, dev := range s.Msg.Devices {
			k := pu{s.PID, dev.UUID}
			if len(dev.TRTEngines) > 0 {
				if cur, ok := trt[k]; !ok || s.LastSeen.After(cur.at) {
					trt[k] = engines{s.LastSeen, dev.TRTEngines}
				}
			}
			if len(dev.PhasePeaks) > 0 {
				if cur, ok := peaks[k]; !ok || s.LastSeen.After(cur.at) {
					peaks[k] = phases{s.LastSeen, dev.PhasePeaks}
				}
			}
			if dev.OOMSeq.Set {
				if cur, ok := streams[k]; !ok || dev.OOMSeq.Value > cur.seq {
					streams[k] = oomStream{dev.OOMSeq.Value, dev.OOMEvents}
				}
			}
			if !returns {
				continue
			}
			for _, pl := range dev.Pools {
				if pl.Parent == "" {
					reclaim[k] += pl.CachedBytes()
				}
			}
		}
	}
	for i := range v.Processes {
		p := &v.Processes[i]
		if !p.Pushed {
			continue
		}
		k := diagKey{p.PID, p.Facts.StartTicks, p.UUID}
		st := d.state[k]
		if st == nil {
			st = &diagState{}
			d.state[k] = st
		}
		st.seen = now
		fl := st.floor.floor(now) // before this tick's sample: an OOM's own sample is no floor
		st.floor.observe(now, p.AllocatedBytes)
		if s, ok := streams[pu{p.PID, p.UUID}]; ok {
			st.count(s, fl, now)
		}
		if st.hasOOM {
			p.OOM = st.stats()
		}
		p.ReclaimableBytes = reclaim[pu{p.PID, p.UUID}]
		if e, ok := trt[pu{p.PID, p.UUID}]; ok {
			p.TRTEngines = e.all
		}
		if ph, ok := peaks[pu{p.PID, p.UUID}]; ok {
			p.PhasePeaks = slices.Clone(ph.peaks)
			slices.SortFunc(p.PhasePeaks, func(a, b push.PhasePeak) int { return strings.Compare(a.Phase, b.Phase) })
		}
	}
	for k, st := range d.state {
		if now.Sub(st.seen) > d.idle {
			delete(d.state, k)
		}
	}
}

// count adds the events of s not counted before. Events beyond those the message
// carries (more than push.MaxOOMEvents between two messages) are counted as unknown.
func (st *diagState) count(s oomStream, fl oom.Floor, now time.Time) {
	if st.counts == nil {
		st.counts = make(map[api.OOMKind]uint64, len(api.OOMKinds()))
	}
	st.hasOOM = true
	if s.seq < st.seq {
		st.seq = 0 // a new reporter in the same process: its count starts again
	}
	if s.seq == st.seq {
		return
	}
	fresh := s.seq - st.seq
	var classified uint64
	for _, ev := range s.events {
		if ev.Seq <= st.seq {
			continue
		}
		r := oom.Classify(ev, fl)
		st.counts[r.Kind]++
		classified++
		st.last = &LastOOM{Event: ev, Result: r, Floor: fl, Time: now}
	}
	if fresh > classified {
		st.counts[api.OOMUnknown] += fresh - classified
	}
	st.seq = s.seq
}

func (st *diagState) stats() *OOMStats {
	out := &OOMStats{Events: make(map[api.OOMKind]uint64, len(api.OOMKinds())), Last: st.last}
	for _, k := range api.OOMKinds() {
		out.Events[k] = st.counts[k]
	}
	return out
}

// returnsCache says whether a runtime's cached bytes go back to the driver when the
// process asks (torch.cuda.empty_cache(), CuPy's free_all_blocks()). XLA's BFC pool and
// TensorRT's memory stay with the process until it exits, whatever they hold unused.
func returnsCache(runtime string) bool {
	switch runtime {
	case "torch", "cupy":
		return true
	}
	return false
}
