//go:build cgo

package nvml

import "go.uber.org/zap"

// NewLibraryPoller returns a Poller for the libnvidia-ml.so.1 at libraryPath ("" lets
// the loader find it). It is the daemon's entry point in every build: without cgo the
// same call returns a Poller that reports ErrNotBuiltIn (poller_nocgo.go).
func NewLibraryPoller(libraryPath string, opts Options, logger *zap.Logger) *Poller {
	return NewPoller(Open(libraryPath), opts, logger)
}
