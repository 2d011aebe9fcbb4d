//go:build cgo

package nvml

import (
	"context"
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/clock"
)

// Open returns go-nvml's library for libraryPath ("" searches for libnvidia-ml.so.1 the
// usual way). It does not load the library or call Init: that is the Poller's job, so a
// host without a driver fails softly inside Run rather than at startup.
func Open(libraryPath string) gonvml.Interface {
	if libraryPath == "" {
		return gonvml.New()
	}
	return gonvml.New(gonvml.WithLibraryPath(libraryPath))
}

// Poller owns one NVML library: it initialises it (with backoff), polls it on a timer
// and publishes each result as an immutable Snapshot. Latest is safe to call from any
// goroutine and never touches NVML, so a scrape cannot hang on a wedged driver.
type Poller struct {
	lib   gonvml.Interface
	opts  Options
	clock clock.Clock
	log   *zap.Logger

	latest atomic.Pointer[Snapshot]

	// mu serialises Poll (Run's ticks and direct callers in tests and benchmarks) and
	// guards everything below. Latest never takes it.
	mu            sync.Mutex
	up            bool // Init succeeded and Shutdown has not been called
	lost          bool // the last poll found the driver gone; Run re-initialises
	syms          symbols
	raw           *rawLists // the driver's v3 list calls, nil without them
	driverVersion string
	nvmlVersion   string
	devices       []deviceState // per NVML index, rebuilt when the count changes
	errs          map[ErrorKey]uint64
	kinds         [8][]string // Process.Kinds per list bitmask, shared by snapshots
	scratch       procScratch
	now           time.Time // the clock at the start of the poll in progress
}

// symbols records which optional NVML entry points the loaded driver exports. go-nvml
// binds symbols lazily, so calling one an older driver lacks aborts the whole process
// with a dynamic linker error; everything here is looked up once after Init instead.
type symbols struct {
	memoryV2 bool // nvmlDeviceGetMemoryInfo_v2 (R510+)
	mps      bool // nvmlDeviceGetMPSComputeRunningProcesses{,_v2,_v3}
	mig      bool // the MIG device calls (R450+)
}

// NewPoller returns a Poller for lib (from Open, or a mock in tests). It makes no NVML
// call; Run does.
func NewPoller(lib gonvml.Interface, opts Options, logger *zap.Logger) *Poller {
	opts = opts.withDefaults()
	if logger == nil {
		logger = zap.NewNop()
	}
	p := &Poller{
		lib:   lib,
		opts:  opts,
		clock: opts.Clock,
		log:   logger,
		errs:  map[ErrorKey]uint64{},
	}
	for mask := range p.kinds {
		for i, name := range kindNames {
			if mask&(1<<i) != 0 {
				p.kinds[mask] = append(p.kinds[mask], name)
			}
		}
	}
	p.latest.Store(&Snapshot{Errors: map[ErrorKey]uint64{}})
	return p
}

// Latest returns the most recently published snapshot. Before the first poll it is an
// empty snapshot with Up=false. It never calls NVML and never blocks on a poll.
func (p *Poller) Latest() Snapshot { return *p.latest.Load() }

// Run initialises NVML, polls it every Interval and publishes snapshots until ctx is
// done, then shuts NVML down. When NVML cannot be initialised (no driver, no library)
// it keeps retrying with exponential backoff and publishes Up=false snapshots, so the
// rest of the daemon keeps serving. Run must not be called twice concurrently.
func (p *Poller) Run(ctx context.Context) {
	backoff := p.opts.InitBackoffMin
	warned := false // one warn line per outage; repeats go to debug
	for {
		if ctx.Err() != nil {
			return
		}
		err := p.start()
		if err != nil {
			p.publishDown()
			var ce *CallError
			if !warned && errors.As(err, &ce) {
				p.log.Warn(notAvailableMessage(ce.Return), zap.Error(err), zap.Duration("retry_in", backoff))
				warned = true
			} else {
				p.log.Debug("NVML init failed again", zap.Error(err), zap.Duration("retry_in", backoff))
			}
		} else {
			healthy, lostErr := p.serve(ctx, &warned)
			p.stop()
			if ctx.Err() != nil {
				return
			}
			p.publishDown()
			if healthy {
				backoff = p.opts.InitBackoffMin
			}
			if !warned {
				p.log.Warn("NVML stopped answering (driver unloaded or GPUs gone); GPU metrics are off (vram_nvml_up 0) "+
					"and pushed allocator stats are still served. Re-initialising in the background.",
					zap.Error(lostErr), zap.Duration("retry_in", backoff))
				warned = true
			} else {
				p.log.Debug("NVML lost again", zap.Error(lostErr), zap.Duration("retry_in", backoff))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-p.clock.After(backoff):
		}
		backoff = min(backoff*2, p.opts.InitBackoffMax)
	}
}

// serve polls until ctx is done or the driver goes away. healthy reports whether at
// least one poll saw the devices, which resets the init backoff.
func (p *Poller) serve(ctx context.Context, warned *bool) (healthy bool, lost error) {
	snap, lost := p.poll()
	if lost != nil {
		return false, lost
	}
	p.log.Info("NVML is up",
		zap.String("driver_version", snap.DriverVersion),
		zap.String("nvml_version", snap.NVMLVersion),
		zap.Int("gpus", countPhysical(snap.GPUs)))
	*warned = false
	t := p.clock.NewTicker(p.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return true, nil
		case <-t.C():
			if _, lost := p.poll(); lost != nil {
				return true, lost
			}
		}
	}
}

func countPhysical(gpus []GPU) int {
	n := 0
	for i := range gpus {
		if gpus[i].ParentUUID == "" {
			n++
		}
	}
	return n
}

// start calls Init and, on success, records what the driver supports. No other NVML
// call is made when Init fails: the library may not even be loaded.
func (p *Poller) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ret := p.lib.Init(); ret != gonvml.SUCCESS {
		p.countLocked(CallInit, ret)
		return &CallError{Call: CallInit, Return: ret}
	}
	ext := p.lib.Extensions()
	has := func(names ...string) bool {
		for _, n := range names {
			if ext.LookupSymbol(n) == nil {
				return true
			}
		}
		return false
	}
	p.syms = symbols{
		memoryV2: has("nvmlDeviceGetMemoryInfo_v2"),
		// go-nvml picks the newest of these it finds and falls back to the
		// unversioned one, so any one present makes the call safe.
		mps: has("nvmlDeviceGetMPSComputeRunningProcesses_v3", "nvmlDeviceGetMPSComputeRunningProcesses_v2",
			"nvmlDeviceGetMPSComputeRunningProcesses"),
		mig: has("nvmlDeviceGetMigMode") && has("nvmlDeviceGetMaxMigDeviceCount") &&
			has("nvmlDeviceGetMigDeviceHandleByIndex") && has("nvmlDeviceGetGpuInstanceId") &&
			has("nvmlDeviceGetComputeInstanceId"),
	}
	// Looked up again after every Init: Shutdown may have unloaded the library.
	p.raw = lookupRawLists()
	if v, ret := p.lib.SystemGetDriverVersion(); ret == gonvml.SUCCESS {
		p.driverVersion = v
	} else {
		p.countLocked(CallSystemGetDriverVersion, ret)
	}
	if v, ret := p.lib.SystemGetNVMLVersion(); ret == gonvml.SUCCESS {
		p.nvmlVersion = v
	} else {
		p.countLocked(CallSystemGetNVMLVersion, ret)
	}
	p.devices = nil
	p.up, p.lost = true, false
	return nil
}

// stop calls Shutdown once for the Init that start made.
func (p *Poller) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.up {
		return
	}
	p.up = false
	p.devices = nil
	if ret := p.lib.Shutdown(); ret != gonvml.SUCCESS {
		p.countLocked(CallShutdown, ret)
		p.log.Debug("NVML shutdown failed", zap.Error(&CallError{Call: CallShutdown, Return: ret}))
	}
}

// publishDown publishes an Up=false snapshot that still carries the error counters, so
// vram_nvml_errors_total{call="Init"} shows why NVML is off.
func (p *Poller) publishDown() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latest.Store(&Snapshot{Time: p.clock.Now(), Errors: p.errorsLocked()})
}

// Poll polls NVML once, publishes the result (Latest returns it from now on) and returns
// it. It is only meaningful after Run's Init succeeded; before that (or after the driver
// went away) it makes no NVML call and returns an Up=false snapshot.
func (p *Poller) Poll() Snapshot {
	s, _ := p.poll()
	return *s
}

func (p *Poller) poll() (*Snapshot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, lost := p.pollLocked()
	p.latest.Store(s)
	return s, lost
}

// countLocked adds one to the error counter for (call, ret).
func (p *Poller) countLocked(call string, ret gonvml.Return) {
	p.countNameLocked(call, ReturnName(ret))
}

func (p *Poller) countNameLocked(call, name string) {
	p.errs[ErrorKey{Call: call, Error: name}]++
}

// errorsLocked returns a fresh copy of the counters for a snapshot. Each snapshot gets
// its own map (one small allocation per poll) so that a consumer that writes to one by
// mistake cannot corrupt the counters or later snapshots.
func (p *Poller) errorsLocked() map[ErrorKey]uint64 {
	return maps.Clone(p.errs)
}
