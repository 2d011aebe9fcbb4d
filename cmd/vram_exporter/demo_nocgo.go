//go:build !cgo

package main

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/config"
	"github.com/vram-exporter/vram_exporter/nvml"
)

// newDemoSources refuses demo mode: its fake NVML implements go-nvml's interface, which
// is cgo, so a binary built without cgo has no simulated GPUs to show.
func newDemoSources(config.Config, *zap.Logger) (*sources, error) {
	return nil, fmt.Errorf("demo mode: %w (the simulated GPUs are a fake NVML on go-nvml's types)", nvml.ErrNotBuiltIn)
}
