package main

import (
	"context"
	"errors"
	"os"

	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/memlimit"
)

// limitMemory lowers GOGC for the daemon's small heap, unless GOGC is set, and gives the
// Go runtime a soft limit below the cgroup's memory limit (README: Memory), unless
// GOMEMLIMIT is set.
func limitMemory(logger *zap.Logger) {
	if gc := memlimit.SetGCPercent(os.Getenv); gc > 0 {
		logger.Debug("garbage collector set for a small steady heap (GOGC overrides it)", zap.Int("gogc", gc))
	}
	limit, err := memlimit.CgroupLimit("/proc/self/cgroup", "/sys/fs/cgroup")
	switch {
	case errors.Is(err, memlimit.ErrNoLimit):
		logger.Debug("no cgroup memory limit; the Go runtime runs without a soft limit")
		return
	case err != nil:
		logger.Debug("cannot read the cgroup memory limit; the Go runtime runs without a soft limit", zap.Error(err))
		return
	}
	if soft := memlimit.SetFromCgroup(limit, os.Getenv); soft > 0 {
		logger.Info("Go soft memory limit set from the cgroup's (GOMEMLIMIT overrides it)",
			zap.Uint64("cgroup_limit_bytes", limit), zap.Int64("go_limit_bytes", soft))
	}
}

// returnMemory gives a burst's memory back to the kernel until ctx is done.
func returnMemory(ctx context.Context) { memlimit.Returner{}.Run(ctx) }
