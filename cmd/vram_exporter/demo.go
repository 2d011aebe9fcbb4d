package main

import (
	"context"
	"errors"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/clock"
	"github.com/vram-exporter/vram_exporter/config"
	"github.com/vram-exporter/vram_exporter/push"
	"github.com/vram-exporter/vram_exporter/state"
)

// demoNode is what demo mode swaps in for the real sources: a simulated NVML, process
// facts for the simulated PIDs, an accelerated clock, and the loop that pushes the
// simulated allocator stats into the same store real clients feed.
type demoNode struct {
	clock clock.Clock
	nvml  gonvml.Interface
	facts state.FactsReader
	run   func(ctx context.Context, store *push.Store)
}

// newDemo builds the simulated node (demo mode).
func newDemo(cfg config.Config, logger *zap.Logger) (*demoNode, error) {
	return nil, errors.New("demo mode is not available in this build")
}
