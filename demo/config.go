package demo

import (
	"errors"
	"fmt"
)

// The simulated node's settings build without cgo (package config reads them), while the
// node itself runs on the fake NVML, which needs go-nvml's cgo types.

const (
	// MiB and GiB are 2^20 and 2^30 bytes.
	MiB = 1 << 20
	GiB = 1 << 30

	// H200Bytes is an H200's memory as NVML reports it, the size the scenarios are
	// written for; other sizes scale them (only down: a bigger GPU just has more room).
	H200Bytes = 143771 * MiB
)

// Config sizes the simulated node.
type Config struct {
	GPUs           int    // number of GPUs, 1 to MaxGPUs
	GPUMemoryBytes uint64 // per GPU, at least MinGPUMemoryBytes
	Seed           int64
}

// Bounds of Config: MaxGPUs keeps a typo from simulating a node far larger than any real
// one (8 to 16 GPUs); MinGPUMemoryBytes is the smallest GPU the scenarios scale down to.
const (
	MaxGPUs           = 64
	MinGPUMemoryBytes = GiB
)

// DefaultConfig is a four-GPU H200 node; package config reads demo's defaults from here.
func DefaultConfig() Config {
	return Config{GPUs: 4, GPUMemoryBytes: H200Bytes, Seed: 1}
}

// Check reports every setting New cannot run with, one call per problem: field is the
// Config field's name; problem says what is wrong and what to use without naming the
// field, so package config can name the key the user wrote.
func (c Config) Check(report func(field, problem string)) {
	if c.GPUs < 1 || c.GPUs > MaxGPUs {
		report("GPUs", fmt.Sprintf("%d is out of range; use 1 to %d", c.GPUs, MaxGPUs))
	}
	if c.GPUMemoryBytes < MinGPUMemoryBytes {
		report("GPUMemoryBytes", fmt.Sprintf("%d is below the minimum of %d (1 GiB); use a real GPU's size, like %d (an H200)", c.GPUMemoryBytes, MinGPUMemoryBytes, H200Bytes))
	}
}

// Validate reports every problem Check finds, each prefixed with its field, or nil.
func (c Config) Validate() error {
	var errs []error
	c.Check(func(field, problem string) {
		errs = append(errs, fmt.Errorf("demo: %s: %s", field, problem))
	})
	return errors.Join(errs...)
}
