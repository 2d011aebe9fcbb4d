// Package memlimit keeps the daemon's Go memory small at steady state and inside its
// cgroup's limit under load, and gives back what a burst used. It is a source-floor
// room: it reads the cgroup files and the Go runtime's own figures, and imports nothing
// of the daemon.
//
// Three things, because the daemon's steady heap is small, it runs under a 256 MiB
// limit (systemd MemoryMax, the DaemonSet's limit), and a large pushed state or scrape
// is transient:
//   - SetGCPercent lowers GOGC for the small, steady heap;
//   - SetFromCgroup gives the Go runtime a soft memory limit below the cgroup's
//     memory.max, so the garbage collector works harder before the kernel kills the
//     daemon, instead of growing the heap to twice its live size;
//   - Returner returns free memory to the kernel at once after a burst went away: once
//     a collection has found the burst's memory dead, the runtime holds far more heap
//     than its own goal, and the background scavenger would give it back only slowly.
//     At steady state it does nothing: a forced collection and scavenge every check
//     cost about 20 ms of CPU each (BenchmarkForcedReturn), more than a minute of
//     sampling ticks.
package memlimit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/vram-exporter/vram_exporter/clock"
)

// Fraction of the cgroup limit given to the Go runtime as its soft limit: the rest is
// for what the runtime does not count (NVML's own allocations, cgo, the kernel's page
// cache charged to the cgroup).
const Fraction = 0.8

// ErrNoLimit means the cgroup sets no memory limit (memory.max is "max"), or there is
// no cgroup memory controller to read.
var ErrNoLimit = errors.New("no cgroup memory limit")

// CgroupLimit returns the memory limit of the cgroup that procSelfCgroup (normally
// /proc/self/cgroup) names, read under cgroupRoot (normally /sys/fs/cgroup): cgroup v2's
// memory.max, or cgroup v1's memory.limit_in_bytes.
func CgroupLimit(procSelfCgroup, cgroupRoot string) (uint64, error) {
	f, err := os.Open(procSelfCgroup)
	if err != nil {
		return 0, fmt.Errorf("read own cgroup: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir, name string
		switch {
		case parts[0] == "0" && parts[1] == "":
			dir, name = cgroupRoot, "memory.max"
		case hasController(parts[1], "memory"):
			dir, name = filepath.Join(cgroupRoot, "memory"), "memory.limit_in_bytes"
		default:
			continue
		}
		limit, err := readLimit(filepath.Join(dir, parts[2], name))
		if errors.Is(err, os.ErrNotExist) {
			// In a container with its own cgroup namespace, the path names the cgroup
			// as the host sees it; the container sees it at the root.
			limit, err = readLimit(filepath.Join(dir, name))
		}
		return limit, err
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read own cgroup: %w", err)
	}
	return 0, ErrNoLimit
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

func readLimit(file string) (uint64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, ErrNoLimit
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	// cgroup v1 writes "no limit" as a huge page-aligned number.
	if v >= math.MaxInt64/2 {
		return 0, ErrNoLimit
	}
	return v, nil
}

// SetFromCgroup sets the Go soft memory limit to Fraction of limit, unless the
// GOMEMLIMIT environment variable (getenv) already set one: an operator's choice wins.
// It returns the limit it set, 0 when it set none.
func SetFromCgroup(limit uint64, getenv func(string) string) int64 {
	if limit == 0 || getenv("GOMEMLIMIT") != "" {
		return 0
	}
	soft := int64(float64(limit) * Fraction)
	debug.SetMemoryLimit(soft)
	return soft
}

// GCPercent is the daemon's GOGC unless the environment sets one. Its heap is small
// (about 2-3 MiB live on a node with 16 pushing processes) and steady, so the default
// 100, a goal of twice the live heap, was a third of the daemon's anonymous memory for
// the sake of collections it hardly needs to avoid: at 50 the same node held 2-3 MiB
// less anonymous memory and collected about five times a minute instead of twice,
// about a millisecond of CPU each (1.3 -> 5 ms a minute; README, "Memory").
const GCPercent = 50

// SetGCPercent sets the garbage collector's GOGC to GCPercent, unless the GOGC
// environment variable (getenv) already set one: an operator's choice wins. It returns
// the percentage it set, 0 when it set none.
func SetGCPercent(getenv func(string) string) int {
	if getenv("GOGC") != "" {
		return 0
	}
	debug.SetGCPercent(GCPercent)
	return GCPercent
}

// Returner gives free memory back to the kernel after a burst; see the package comment.
type Returner struct {
	// Interval between checks; DefaultInterval when zero. A burst's memory is back
	// within about one interval after it ends.
	Interval time.Duration
	// Floor is how much memory the Go runtime may hold (mapped and not returned)
	// before a check considers returning any; DefaultFloor when zero.
	Floor uint64
	// Drop is how much more heap than its own goal the runtime must hold (a burst's
	// memory, found dead by a collection and not yet returned) for a check to return
	// it; DefaultDrop when zero. At steady state the runtime holds about its goal.
	Drop  uint64
	Clock clock.Clock
	// Held, Surplus and Free are the runtime's figures and debug.FreeOSMemory; tests
	// replace them.
	Held    func() uint64
	Surplus func() uint64
	Free    func()
}

// Defaults: the daemon's Go runtime holds well under 32 MiB on a normal node.
const (
	DefaultInterval = 20 * time.Second
	DefaultFloor    = 32 << 20
	DefaultDrop     = 16 << 20
)

// Run checks every Interval until ctx is done.
func (r Returner) Run(ctx context.Context) {
	if r.Interval <= 0 {
		r.Interval = DefaultInterval
	}
	if r.Floor == 0 {
		r.Floor = DefaultFloor
	}
	if r.Clock == nil {
		r.Clock = clock.Real{}
	}
	if r.Drop == 0 {
		r.Drop = DefaultDrop
	}
	if r.Held == nil {
		r.Held = Held
	}
	if r.Surplus == nil {
		r.Surplus = Surplus
	}
	if r.Free == nil {
		r.Free = debug.FreeOSMemory
	}
	t := r.Clock.NewTicker(r.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if r.Held() > r.Floor && r.Surplus() >= r.Drop {
				r.Free()
			}
		}
	}
}

// Held is the memory the Go runtime has mapped and not returned to the kernel: about
// the Go part of the daemon's RSS.
func Held() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

// Surplus is the heap memory the Go runtime holds (mapped, not returned) beyond its
// heap goal. It is near zero at steady state, where the heap grows to the goal and the
// scavenger returns what lies above it; it is large after a collection found a burst's
// memory dead, because the goal fell with the live heap but the pages are still held.
func Surplus() uint64 {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"}, {Name: "/gc/heap/goal:bytes"},
	}
	metrics.Read(s)
	var v [4]uint64
	for i := range s {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		v[i] = s[i].Value.Uint64()
	}
	held := v[0] + v[1] + v[2]
	if held <= v[3] {
		return 0
	}
	return held - v[3]
}
