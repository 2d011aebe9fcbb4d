package join

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/clock"
	"github.com/vram-exporter/vram_exporter/leak/trend"
	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/procinfo"
	"github.com/vram-exporter/vram_exporter/push"
)

// NVMLSource gives the latest driver snapshot without calling NVML.
type NVMLSource interface {
	Latest() nvml.Snapshot
}

// PushSource gives the pushed allocator stats of live senders.
type PushSource interface {
	Snapshot() []push.Sender
}

// FactsReader reads host facts of a process.
type FactsReader interface {
	Facts(pid uint32) (procinfo.Facts, error)
}

// refresher is a FactsReader that keeps facts between ticks and can be asked to read a
// process again now (procinfo.Cache): a start time that disagrees with a connection's
// may only be the cache's, up to procinfo.StatRefresh old where pidfds are unavailable,
// so it is re-read before a connection is left out for a reused PID.
type refresher interface {
	Refresh(pid uint32) (procinfo.Facts, error)
}

// Recorder receives every joined view (trace recording). Errors are logged, never fatal.
type Recorder interface {
	Record(v *View) error
}

// DefaultSweepIdle is Options.SweepIdle's default.
const DefaultSweepIdle = 2 * time.Minute

// Options configure a Joiner. Zero values take the defaults.
type Options struct {
	// Interval is the sample tick; trend needs it even, so it is a timer, not the
	// scrape. The default is the poller's, nvml.DefaultPollInterval: the join samples
	// what the poller publishes.
	Interval time.Duration
	Clock    clock.Clock
	// Trend may be nil: then no slopes or verdicts are computed.
	Trend *trend.Engine
	// SweepIdle forgets trend history of a series not seen for this long.
	SweepIdle time.Duration
	Recorder  Recorder
	Demo      bool
}

// Joiner joins the sources on a timer and publishes immutable views.
type Joiner struct {
	nvml   NVMLSource
	push   PushSource
	facts  FactsReader
	opts   Options
	log    *zap.Logger
	latest atomic.Pointer[View]

	lastProcfsErr time.Time
	recordBroken  bool

	// pidReused counts push connections found speaking for a reused PID, each once;
	// reusedConns are those found (pruned to the live senders every tick).
	pidReused   uint64
	reusedConns map[uint64]bool
	// pushOnly are the trend keys fed last tick by pushed stats alone (NVML did not see
	// the process); one that is not fed again is forgotten at once (see observeTrends).
	pushOnly map[trend.Key]bool
	// fed and observed are observeTrends' scratch, kept to spare two maps a tick.
	fed, observed map[trend.Key]bool
	// pushFed is the newest push fed to the trend engine per key last tick, and
	// pushNext this tick's (swapped each tick, so only keys in the view are held): a
	// tick whose push is not newer is a repeat (see Process.PushRepeat).
	pushFed, pushNext map[trend.Key]time.Time

	diag diagnosis

	scratch tickScratch
}

// tickScratch are Tick's lookup maps, cleared and refilled every tick.
type tickScratch struct {
	gpuIndex map[string]string
	procs    map[procKey]*Process
	facts    map[uint32]procinfo.Facts
	factsErr map[uint32]bool
}

// New returns a Joiner. push and facts may be nil (socket disabled, no procfs).
func New(nv NVMLSource, ps PushSource, facts FactsReader, opts Options, logger *zap.Logger) *Joiner {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Interval <= 0 {
		opts.Interval = nvml.DefaultPollInterval
	}
	if opts.SweepIdle <= 0 {
		opts.SweepIdle = DefaultSweepIdle
	}
	j := &Joiner{nvml: nv, push: ps, facts: facts, opts: opts, log: logger}
	j.diag = newDiagnosis(opts.SweepIdle)
	j.latest.Store(&View{Time: opts.Clock.Now(), Demo: opts.Demo})
	return j
}

// Latest returns the newest view; never nil.
func (j *Joiner) Latest() *View { return j.latest.Load() }

// Run joins on every tick until ctx is done.
func (j *Joiner) Run(ctx context.Context) {
	t := j.opts.Clock.NewTicker(j.opts.Interval)
	defer t.Stop()
	// A push connection that closes is joined out at once, so an exited process vanishes
	// from the next scrape rather than up to one tick later. The extra join is harmless
	// to trends: they fit per-bucket floors, not evenly spaced raw samples.
	var wake <-chan struct{}
	if c, ok := j.push.(interface{ Changed() <-chan struct{} }); ok {
		wake = c.Changed()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			j.Tick()
		case <-wake:
			j.Tick()
		}
	}
}

type procKey struct {
	pid  uint32
	uuid string
}

// Tick joins the sources once, publishes and returns the view. Not safe for concurrent
// calls (Run serialises them); the trend engine it feeds is single-threaded by design.
func (j *Joiner) Tick() *View {
	now := j.opts.Clock.Now()
	snap := j.nvml.Latest()
	v := &View{Time: now, NVML: snap, Demo: j.opts.Demo}

	// The per-tick maps are scratch kept between ticks (nothing published refers to
	// them); the view and its processes are new every tick, since views are immutable.
	sc := &j.scratch
	if sc.gpuIndex == nil {
		sc.gpuIndex, sc.procs = map[string]string{}, map[procKey]*Process{}
		sc.facts, sc.factsErr = map[uint32]procinfo.Facts{}, map[uint32]bool{}
	}
	clear(sc.gpuIndex)
	clear(sc.procs)
	clear(sc.facts)
	clear(sc.factsErr)
	gpuIndex, procs, facts, factsErr := sc.gpuIndex, sc.procs, sc.facts, sc.factsErr
	for _, g := range snap.GPUs {
		gpuIndex[g.UUID] = strconv.Itoa(g.Index)
		v.GPUs = append(v.GPUs, GPU{GPU: g})
	}

	get := func(pid uint32, uuid string) *Process {
		k := procKey{pid, uuid}
		p, ok := procs[k]
		if !ok {
			p = &Process{PID: pid, UUID: uuid, GPU: gpuIndex[uuid]}
			procs[k] = p
		}
		return p
	}
	for _, np := range snap.Processes {
		p := get(np.PID, np.UUID)
		p.HasNVML = true
		p.UsedBytes = np.UsedBytes
		p.Kinds = np.Kinds
	}
	if j.push != nil {
		senders := j.dropReusedPIDs(j.push.Snapshot(), facts, factsErr)
		v.Senders = senders
		for _, s := range senders {
			j.mergeSender(s, get)
		}
	}
	v.PIDReusedSenders = j.pidReused

	v.Processes = make([]Process, 0, len(procs))
	for _, p := range procs {
		if p.Pushed && snap.Up {
			if _, known := gpuIndex[p.UUID]; !known {
				p.UnknownDevice = true
				v.UnknownDevices++
			}
		}
		if p.HasNVML && p.Pushed {
			p.HasUnattributed = true
			p.UnattributedBytes = int64(p.UsedBytes) - int64(p.ReservedBytes)
		}
		if j.facts != nil {
			f, ok := facts[p.PID]
			if !ok && !factsErr[p.PID] {
				var err error
				f, err = j.facts.Facts(p.PID)
				switch {
				case err == nil:
					facts[p.PID] = f
					ok = true
				case errors.Is(err, procinfo.ErrNotFound):
					factsErr[p.PID] = true
				default:
					factsErr[p.PID] = true
					v.ProcfsErrors++
					j.logProcfs(now, p.PID, err)
				}
			}
			if ok {
				p.HasFacts, p.Facts = true, f
			}
		}
		sort.Slice(p.Pools, func(a, b int) bool { return p.Pools[a].Name < p.Pools[b].Name })
		v.Processes = append(v.Processes, *p)
	}
	clear(procs) // the Processes are copied into the view; hold no pointers to them
	sort.Slice(v.Processes, func(a, b int) bool {
		pa, pb := &v.Processes[a], &v.Processes[b]
		if pa.UUID != pb.UUID {
			return pa.UUID < pb.UUID
		}
		return pa.PID < pb.PID
	})

	j.diag.observe(v)
	j.markRepeats(v)
	j.observeTrends(v)
	if j.opts.Recorder != nil && !j.recordBroken {
		if err := j.opts.Recorder.Record(v); err != nil {
			j.recordBroken = true
			j.log.Warn("trace recording stopped; the daemon keeps running without it", zap.Error(err))
		}
	}
	j.latest.Store(v)
	return v
}

// mergeSender folds one push connection into the per-(pid, uuid) entries. A process may
// hold several connections; on a pool name both report, the newer message wins.
func (j *Joiner) mergeSender(s push.Sender, get func(uint32, string) *Process) {
	rt := Runtime{Name: s.Msg.Runtime, Version: s.Msg.RuntimeVersion, Labels: s.Msg.Labels, Allocator: s.Msg.Allocator}
	for _, d := range s.Msg.Devices {
		p := get(s.PID, d.UUID)
		if f := s.Msg.RequestsInFlight; f.Set {
			p.InFlight, p.HasInFlight = max(p.InFlight, f.Value), true
		}
		newer := s.LastSeen.After(p.LastPush)
		if !p.Pushed || newer {
			p.LastPush = maxTime(p.LastPush, s.LastSeen)
		}
		p.Pushed = true
		p.Runtimes = appendRuntime(p.Runtimes, rt)
		for _, np := range d.Pools {
			replaced := false
			for i := range p.Pools {
				if p.Pools[i].Name == np.Name {
					if newer {
						p.subtract(p.Pools[i])
						p.Pools[i] = np
						p.add(np)
					}
					replaced = true
					break
				}
			}
			if !replaced {
				p.Pools = append(p.Pools, np)
				p.add(np)
			}
		}
	}
}

func (p *Process) add(pl push.Pool) {
	if pl.Parent == "" {
		p.AllocatedBytes += pl.Allocated
		p.ReservedBytes += pl.Reserved
	}
}

func (p *Process) subtract(pl push.Pool) {
	if pl.Parent == "" {
		p.AllocatedBytes -= pl.Allocated
		p.ReservedBytes -= pl.Reserved
	}
}

func appendRuntime(rs []Runtime, r Runtime) []Runtime {
	for _, x := range rs {
		if x.Name == r.Name && x.Version == r.Version && equalLabels(x.Labels, r.Labels) && equalLabels(x.Allocator, r.Allocator) {
			return rs
		}
	}
	return append(rs, r)
}

func equalLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// dropReusedPIDs leaves out every sender whose PID now names another process than the
// one that connected: the start time the server recorded when it first saw the PID
// differs from the PID's start time in procfs (a dead sender's connection kept open by
// a child that inherited it, and the PID reused by an unrelated process). Its facts
// are read once into facts, which the join reads on; a PID procfs cannot read keeps its
// data (the TTL and the close of the connection still remove it).
func (j *Joiner) dropReusedPIDs(senders []push.Sender, facts map[uint32]procinfo.Facts, factsErr map[uint32]bool) []push.Sender {
	if j.facts == nil {
		return senders
	}
	var kept []push.Sender // a new slice: the source's may be shared
	dropped := false
	live := make(map[uint64]bool, len(senders))
	for _, s := range senders {
		live[s.ConnID] = true
		if s.StartTicks != 0 {
			f, ok := facts[s.PID]
			if !ok && !factsErr[s.PID] {
				var err error
				if f, err = j.facts.Facts(s.PID); err == nil {
					facts[s.PID], ok = f, true
				}
				// Other errors are left to the fact reads below, which count and log them.
			}
			if ok && f.StartTicks != 0 && f.StartTicks != s.StartTicks && !j.reusedConns[s.ConnID] {
				if r, can := j.facts.(refresher); can {
					var err error
					if f, err = r.Refresh(s.PID); err == nil {
						facts[s.PID] = f
					} else {
						delete(facts, s.PID) // gone: the fact reads below see it too
						ok = false
					}
				}
			}
			if ok && f.StartTicks != 0 && f.StartTicks != s.StartTicks {
				if j.reusedConns == nil {
					j.reusedConns = map[uint64]bool{}
				}
				if !j.reusedConns[s.ConnID] {
					j.reusedConns[s.ConnID] = true
					j.pidReused++
					j.log.Info("left out a push connection whose PID now names another process (PID reused)",
						zap.Uint32("pid", s.PID), zap.Uint64("conn", s.ConnID),
						zap.Uint64("start_ticks_at_connect", s.StartTicks), zap.Uint64("start_ticks_now", f.StartTicks))
				}
				dropped = true
				continue
			}
		}
		kept = append(kept, s)
	}
	for id := range j.reusedConns {
		if !live[id] {
			delete(j.reusedConns, id)
		}
	}
	if !dropped {
		return senders
	}
	return kept
}

// markRepeats sets PushRepeat on every pushed process whose newest push an earlier tick
// already had, for the trend engine and the trace recorder alike.
func (j *Joiner) markRepeats(v *View) {
	if j.pushFed == nil {
		j.pushFed, j.pushNext = map[trend.Key]time.Time{}, map[trend.Key]time.Time{}
	}
	next := j.pushNext
	clear(next)
	for i := range v.Processes {
		p := &v.Processes[i]
		if !p.Pushed {
			continue
		}
		k := p.Key()
		prev, ok := j.pushFed[k]
		p.PushRepeat = ok && !p.LastPush.After(prev)
		next[k] = p.LastPush
	}
	j.pushFed, j.pushNext = next, j.pushFed
}

// observeTrends feeds the trend engine. A pushed (pid, uuid) whose UUID NVML does not
// know while it is up is left out: a sender making up UUIDs would otherwise make a
// history per UUID (some KiB each) that lives on for SweepIdle; and a key the engine
// refuses at its bound has no trend this tick.
func (j *Joiner) observeTrends(v *View) {
	e := j.opts.Trend
	if e == nil {
		return
	}
	defer func() {
		v.TrendKeys, _ = e.Len()
		v.TrendRefused = e.Refused()
	}()
	for i := range v.GPUs {
		g := &v.GPUs[i]
		g.Trend = e.ObserveGPU(g.Sample(v.Time))
		g.HasTrend = true
	}
	if j.fed == nil {
		j.fed, j.observed = map[trend.Key]bool{}, map[trend.Key]bool{}
	}
	fed, observed := j.fed, j.observed // push-only keys fed this tick; all keys fed
	clear(fed)
	clear(observed)
	for i := range v.Processes {
		p := &v.Processes[i]
		if p.UnknownDevice && !p.HasNVML {
			continue
		}
		s := p.Sample(v.Time)
		p.Trend, p.HasTrend = e.TryObserve(s)
		if p.HasTrend {
			observed[s.Key] = true
			if !p.HasNVML {
				fed[s.Key] = true
			}
		}
	}
	// A series only pushes kept alive ends when its sender's data leaves the store
	// (connection closed, TTL): nothing will feed it again, so its history (some KiB) is
	// dropped now rather than after SweepIdle. A sender churning through made-up UUIDs
	// while NVML is down would otherwise hold up to trend.max_keys histories for minutes.
	for k := range j.pushOnly {
		if !observed[k] {
			e.Forget(k)
		}
	}
	j.pushOnly, j.fed = fed, j.pushOnly // last tick's set becomes next tick's scratch
	e.Sweep(v.Time, j.opts.SweepIdle)
}

func (j *Joiner) logProcfs(now time.Time, pid uint32, err error) {
	// One line a minute is enough to point at a wrong --path.procfs without flooding.
	if now.Sub(j.lastProcfsErr) < time.Minute {
		return
	}
	j.lastProcfsErr = now
	j.log.Warn("cannot read process facts from procfs; check --path.procfs and that the daemon runs in the host PID namespace",
		zap.Uint32("pid", pid), zap.Error(err))
}
