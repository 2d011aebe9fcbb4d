//go:build cgo

package main

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/clock"
	"github.com/vram-exporter/vram_exporter/config"
	"github.com/vram-exporter/vram_exporter/demo"
	"github.com/vram-exporter/vram_exporter/nvml"
)

// newDemoSources builds the simulated node (demo mode): the real poller over the fake
// NVML, process facts for the simulated PIDs, and the loop that pushes the simulated
// allocator stats into the same store real clients feed. Its clock runs demo.speed
// times faster than the wall clock from now, so every loop of the daemon (NVML polling,
// the join, push TTLs, trend buckets) runs in simulated time.
func newDemoSources(cfg config.Config, logger *zap.Logger) (*sources, error) {
	d := cfg.Demo
	clk := clock.NewScaled(clock.Real{}, time.Now(), d.Speed)
	node, err := demo.New(d.NodeConfig(), clk.Now())
	if err != nil {
		return nil, fmt.Errorf("demo mode: %w", err)
	}
	logger.Named("demo").Info("simulated node ready: processes appear in the first simulated minute, verdicts after the trend warm-up",
		zap.Strings("gpu_uuids", node.UUIDs()), zap.Duration("warm_up_real_time", time.Duration(float64(cfg.Trend.WarmUp)/d.Speed)))
	logger.Warn("DEMO MODE: every GPU, process and allocator figure is simulated, not read from this machine",
		zap.Int("gpus", d.GPUs), zap.Float64("speed", d.Speed), zap.Int64("seed", d.Seed))
	store, err := newStore(cfg, clk)
	if err != nil {
		return nil, err
	}
	return &sources{
		clock: clk,
		nvml:  nvml.NewPoller(node.NVML(), nvml.Options{Interval: cfg.NVML.PollInterval, Clock: clk}, logger.Named("nvml")),
		facts: node,
		store: store,
		loops: []func(context.Context){func(ctx context.Context) { node.Run(ctx, clk, store) }},
	}, nil
}
