//go:build !linux

package procinfo

import "errors"

// Only Linux has pidfds (and procfs); the Cache falls back to its stat cadence.

func pidfdsUsable(string) bool { return false }

func pidfdOpen(uint32) (int, error) { return -1, errors.New("pidfds are Linux's") }

func pidfdExited(int) bool { return true }

func pidfdClose(int) {}
