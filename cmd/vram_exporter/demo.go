package main

import (
	"context"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/clock"
	"github.com/vram-exporter/vram_exporter/config"
	"github.com/vram-exporter/vram_exporter/demo"
	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/push"
)

// demoNode is what demo mode swaps in for the real sources: a simulated NVML, process
// facts for the simulated PIDs, an accelerated clock, and the loop that pushes the
// simulated allocator stats into the same store real clients feed.
type demoNode struct {
	clock clock.Clock
	nvml  gonvml.Interface
	facts join.FactsReader
	run   func(ctx context.Context, store *push.Store)
}

// newDemo builds the simulated node (demo mode): its clock runs demo.speed times faster
// than the wall clock from now, so every loop of the daemon (NVML polling, the join,
// push TTLs, trend buckets) runs in simulated time.
func newDemo(cfg config.Config, logger *zap.Logger) (*demoNode, error) {
	d := cfg.Demo
	clk := clock.NewScaled(clock.Real{}, time.Now(), d.Speed)
	node, err := demo.New(demo.Config{GPUs: d.GPUs, GPUMemoryBytes: d.GPUMemoryBytes, Seed: d.Seed}, clk.Now())
	if err != nil {
		return nil, err
	}
	logger.Info("simulated node ready: processes appear in the first simulated minute, verdicts after the trend warm-up",
		zap.Strings("gpu_uuids", node.UUIDs()), zap.Duration("warm_up_real_time", time.Duration(float64(cfg.Trend.WarmUp)/d.Speed)))
	return &demoNode{
		clock: clk,
		nvml:  node.NVML(),
		facts: node,
		run:   func(ctx context.Context, store *push.Store) { node.Run(ctx, clk, store) },
	}, nil
}

// landingDescription is the landing page's description; in demo mode it says first, in
// capitals, that nothing on the page comes from this machine.
func landingDescription(cfg config.Config) string {
	const desc = "GPU memory explained: NVML joined with pushed allocator stats, leak verdicts."
	if cfg.Demo.Enabled {
		return "DEMO MODE: simulated GPUs, processes and allocator stats, not this machine's. " + desc
	}
	return desc
}
