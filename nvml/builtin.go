package nvml

import "errors"

// ErrNotBuiltIn is what a binary built without cgo (CGO_ENABLED=0, or a cross build for
// macOS) reports instead of initialising NVML: go-nvml is cgo, so such a binary has no
// NVML at all. The daemon still runs; GPU metrics are off, as on a host without a driver.
var ErrNotBuiltIn = errors.New("NVML is not built into this binary (built with CGO_ENABLED=0; go-nvml needs cgo): rebuild with CGO_ENABLED=1")
