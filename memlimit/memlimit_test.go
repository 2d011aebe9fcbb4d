package memlimit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vram-exporter/vram_exporter/clock"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCgroupLimit(t *testing.T) {
	for _, tc := range []struct {
		name, selfCgroup string
		files            map[string]string
		want             uint64
		err              error
	}{
		{"v2 systemd unit", "0::/system.slice/vram_exporter.service\n",
			map[string]string{"system.slice/vram_exporter.service/memory.max": "268435456\n"}, 256 << 20, nil},
		{"v2 no limit", "0::/system.slice/x.service\n",
			map[string]string{"system.slice/x.service/memory.max": "max\n"}, 0, ErrNoLimit},
		{"v2 container namespace", "0::/kubepods.slice/pod.slice/cri-containerd-abc.scope\n",
			map[string]string{"memory.max": "134217728\n"}, 128 << 20, nil},
		{"v1", "12:pids:/x\n11:memory:/docker/abc\n",
			map[string]string{"memory/docker/abc/memory.limit_in_bytes": "536870912\n"}, 512 << 20, nil},
		{"v1 unlimited", "11:memory:/\n",
			map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0, ErrNoLimit},
		{"no memory controller", "12:pids:/x\n", nil, 0, ErrNoLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			self := filepath.Join(dir, "self-cgroup")
			writeFile(t, self, tc.selfCgroup)
			root := filepath.Join(dir, "cgroup")
			for f, c := range tc.files {
				writeFile(t, filepath.Join(root, f), c)
			}
			got, err := CgroupLimit(self, root)
			if got != tc.want || !errors.Is(err, tc.err) {
				t.Fatalf("%d %v, want %d %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestSetFromCgroup(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	limit := uint64(256 << 20)
	if got := SetFromCgroup(limit, func(string) string { return "" }); got != int64(float64(limit)*Fraction) || debug.SetMemoryLimit(-1) != got {
		t.Fatalf("set %d, runtime has %d", got, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(old)
	if got := SetFromCgroup(256<<20, func(k string) string { return map[string]string{"GOMEMLIMIT": "100MiB"}[k] }); got != 0 || debug.SetMemoryLimit(-1) != old {
		t.Fatalf("GOMEMLIMIT set by the operator was overridden (%d)", got)
	}
	if got := SetFromCgroup(0, func(string) string { return "" }); got != 0 {
		t.Fatalf("no cgroup limit set %d", got)
	}
}

// A check frees only above the floor, and every interval.
func TestReturnerFreesAboveTheFloor(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	var held atomic.Uint64
	frees := make(chan struct{}, 10)
	checked := make(chan struct{}, 10)
	r := Returner{Interval: time.Second, Floor: 100, Drop: 10, Clock: clk,
		Held:    func() uint64 { defer func() { checked <- struct{}{} }(); return held.Load() },
		Surplus: func() uint64 { return 1000 },
		Free:    func() { frees <- struct{}{}; held.Store(50) }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	<-clk.Registered()
	wait := func(ch chan struct{}, what string) { t.Helper(); received(t, ch, what) }
	held.Store(50)
	clk.Advance(time.Second)
	wait(checked, "check")
	held.Store(500) // a burst's garbage
	clk.Advance(time.Second)
	wait(checked, "check")
	wait(frees, "free above the floor")
	clk.Advance(time.Second)
	wait(checked, "check")
	cancel()
	<-done
	if len(frees) != 0 {
		t.Fatalf("freed below the floor")
	}
}

// At steady state the runtime holds more than the floor but about its heap goal: no
// check forces a collection. Once a burst's memory is dead and held beyond the goal,
// the next check returns it, once.
func TestReturnerLeavesTheSteadyStateAlone(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	var surplus atomic.Uint64
	frees := make(chan struct{}, 10)
	checked := make(chan struct{}, 10)
	r := Returner{Interval: time.Second, Floor: 100, Drop: 64, Clock: clk,
		Held:    func() uint64 { return 500 },
		Surplus: func() uint64 { defer func() { checked <- struct{}{} }(); return surplus.Load() },
		Free:    func() { frees <- struct{}{}; surplus.Store(0) }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	<-clk.Registered()
	wait := func(ch chan struct{}, what string) { t.Helper(); received(t, ch, what) }
	surplus.Store(63)
	for range 5 {
		clk.Advance(time.Second)
		wait(checked, "check")
	}
	if len(frees) != 0 {
		t.Fatal("freed at steady state (surplus below Drop)")
	}
	surplus.Store(64)
	clk.Advance(time.Second)
	wait(checked, "check")
	wait(frees, "free once the surplus reached Drop")
	clk.Advance(time.Second)
	wait(checked, "check")
	if len(frees) != 0 {
		t.Fatal("freed again after the surplus was returned")
	}
}

// Surplus sees a burst that a collection found dead, and not the heap after it was
// returned.
func TestSurplusSeesADeadBurst(t *testing.T) {
	debug.FreeOSMemory()
	before := Surplus()
	func() {
		burst := make([][]byte, 0, 64)
		for range 64 {
			burst = append(burst, make([]byte, 1<<20))
		}
		sink = burst[len(burst)-1]
	}()
	runtime.GC()
	if s := Surplus(); s < before+32<<20 {
		t.Errorf("Surplus after a dead 64 MiB burst = %d MiB (before %d MiB), want ≥ 32 MiB more", s>>20, before>>20)
	}
	sink = nil
	debug.FreeOSMemory()
	if s := Surplus(); s >= DefaultDrop {
		t.Errorf("Surplus after the return = %d MiB, want < %d MiB", s>>20, DefaultDrop>>20)
	}
}

func TestHeldIsPlausible(t *testing.T) {
	if h := Held(); h < 1<<20 || h > 1<<40 {
		t.Fatalf("Held() = %d", h)
	}
}

func TestSetGCPercent(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	if got := SetGCPercent(func(string) string { return "" }); got != GCPercent || debug.SetGCPercent(100) != GCPercent {
		t.Fatalf("set %d, the runtime had %d", got, GCPercent)
	}
	if got := SetGCPercent(func(k string) string { return map[string]string{"GOGC": "200"}[k] }); got != 0 || debug.SetGCPercent(100) != 100 {
		t.Fatalf("GOGC set by the operator was overridden (%d)", got)
	}
}

// received waits for one value on ch; the bound only keeps a broken test from hanging.
func received(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
	}
}
