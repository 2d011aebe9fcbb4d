//go:build !linux

package procinfo

// builtIn: elsewhere there is no procfs to read, so NewReader reports ErrNotBuiltIn.
const builtIn = false
