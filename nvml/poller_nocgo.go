//go:build !cgo

package nvml

import (
	"context"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/clock"
)

// Poller stands in for the NVML poller in a binary built without cgo, which has no NVML
// (ErrNotBuiltIn). Run says so once and publishes an Up=false snapshot, so the daemon
// serves vram_nvml_up 0 and everything that does not need NVML, as it does on a host
// without a driver.
type Poller struct {
	clock  clock.Clock
	log    *zap.Logger
	latest atomic.Pointer[Snapshot]
}

// NewLibraryPoller returns the stand-in Poller; libraryPath is ignored, there is no
// library to load.
func NewLibraryPoller(_ string, opts Options, logger *zap.Logger) *Poller {
	opts = opts.withDefaults()
	if logger == nil {
		logger = zap.NewNop()
	}
	p := &Poller{clock: opts.Clock, log: logger}
	p.latest.Store(&Snapshot{Errors: map[ErrorKey]uint64{}})
	return p
}

// Latest returns the Up=false snapshot; after Run started it counts the Init that could
// not happen.
func (p *Poller) Latest() Snapshot { return *p.latest.Load() }

// Run reports ErrNotBuiltIn once and waits for ctx: unlike a missing driver, a missing
// NVML binding never comes back, so there is nothing to retry.
func (p *Poller) Run(ctx context.Context) {
	p.latest.Store(&Snapshot{Time: p.clock.Now(), Errors: map[ErrorKey]uint64{{Call: CallInit, Error: NotBuiltIn}: 1}})
	p.log.Warn("NVML is not built in: GPU metrics are off (vram_nvml_up 0) and pushed allocator stats are still served",
		zap.Error(ErrNotBuiltIn))
	<-ctx.Done()
}
