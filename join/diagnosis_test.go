package join

import (
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/api"
	"github.com/vram-exporter/vram_exporter/clock"
	"github.com/vram-exporter/vram_exporter/push"
)

// oomDev is GPU A with a torch pool of the given allocated bytes and 2 GiB reserved,
// carrying an OOM stream.
func oomDev(allocated, seq uint64, evs ...push.OOMEvent) push.Device {
	d := push.Device{UUID: gpuA, Pools: []push.Pool{{Name: "torch", Allocated: allocated, Reserved: 2 * GiB}}, OOMSeq: set(seq), OOMEvents: evs}
	return d
}

// shortage: 1 GiB requested, nothing free, 1 GiB cached at most.
func shortageEvent(seq uint64) push.OOMEvent {
	return push.OOMEvent{Seq: seq, Source: push.OOMSourceObserver, Requested: set(3 * GiB), DeviceFree: set(0), Allocated: set(1 * GiB), Reserved: set(2 * GiB)}
}

func fragmentationEvent(seq uint64) push.OOMEvent {
	return push.OOMEvent{Seq: seq, Source: push.OOMSourceObserver, Requested: set(512 * MiB), DeviceFree: set(0), Allocated: set(1 * GiB), Reserved: set(2 * GiB)}
}

func TestOOMEventsCountedOnceEach(t *testing.T) {
	now := time.Unix(1000, 0)
	clk := clock.NewFake(now)
	ps := &fakePush{}
	j := New(&fakeNVML{snapshot(now)}, ps, nil, Options{Clock: clk}, zap.NewNop())
	tick := func(d push.Device) *OOMStats {
		t.Helper()
		ps.s = []push.Sender{sender(1, 100, clk.Now(), d)}
		v := j.Tick()
		return find(t, v, 100, gpuA).OOM
	}
	if s := tick(push.Device{UUID: gpuA, Pools: []push.Pool{{Name: "torch", Allocated: GiB, Reserved: 2 * GiB}}}); s != nil {
		t.Fatalf("OOM stats %+v for a process that sends no oom_seq", s)
	}
	s := tick(oomDev(GiB, 0))
	if s == nil || s.Last != nil || s.Events[api.OOMShortage] != 0 || len(s.Events) != len(api.OOMKinds()) {
		t.Fatalf("oom_seq 0: stats %+v, want every kind at 0 and no last event", s)
	}
	s = tick(oomDev(GiB, 1, shortageEvent(1)))
	if s.Events[api.OOMShortage] != 1 || s.Last == nil || s.Last.Result.Kind != api.OOMShortage || !s.Last.Time.Equal(clk.Now()) {
		t.Fatalf("after one shortage: %+v", s)
	}
	// The same event repeated in the next message is not counted again.
	first := s.Last.Time
	clk.Advance(5 * time.Second)
	s = tick(oomDev(GiB, 1, shortageEvent(1)))
	if s.Events[api.OOMShortage] != 1 || !s.Last.Time.Equal(first) {
		t.Fatalf("repeated event counted again or re-stamped: %+v", s)
	}
	// Two new events, one of them known: the other was lost beyond the message's events.
	s = tick(oomDev(GiB, 4, shortageEvent(1), fragmentationEvent(4)))
	if s.Events[api.OOMShortage] != 1 || s.Events[api.OOMFragmentation] != 1 || s.Events[api.OOMUnknown] != 2 {
		t.Fatalf("after seq 4: %+v, want shortage 1, fragmentation 1, unknown 2", s.Events)
	}
	if s.Last.Event.Seq != 4 || s.Last.Result.Kind != api.OOMFragmentation {
		t.Fatalf("last = %+v, want seq 4 fragmentation", s.Last)
	}
	// A new reporter in the same process starts again from 1: counted, never subtracted.
	s = tick(oomDev(GiB, 1, shortageEvent(1)))
	if s.Events[api.OOMShortage] != 2 || s.Events[api.OOMFragmentation] != 1 {
		t.Fatalf("after a reporter restart: %+v", s.Events)
	}
}

// A peak needs the usual floor, which needs FloorWarmup of watching; the OOM tick's own
// sample is not part of the floor it is compared with.
func TestOOMPeakAgainstUsualFloor(t *testing.T) {
	now := time.Unix(1000, 0)
	clk := clock.NewFake(now)
	ps := &fakePush{}
	j := New(&fakeNVML{snapshot(now)}, ps, nil, Options{Clock: clk}, zap.NewNop())
	// demand = 1.5 GiB + 2 GiB = 3.5 GiB against a floor of 512 MiB: a peak once known.
	peak := push.OOMEvent{Seq: 1, Requested: set(2 * GiB), DeviceFree: set(0), Allocated: set(1536 * MiB), Reserved: set(2 * GiB)}
	run := func(warm time.Duration) *OOMStats {
		for d := time.Duration(0); d < warm; d += 5 * time.Second {
			ps.s = []push.Sender{sender(1, 100, clk.Now(), oomDev(512*MiB, 0))}
			j.Tick()
			clk.Advance(5 * time.Second)
		}
		ps.s = []push.Sender{sender(1, 100, clk.Now(), oomDev(1536*MiB, 1, peak))}
		return find(t, j.Tick(), 100, gpuA).OOM
	}
	if s := run(30 * time.Second); s.Last.Result.Kind != api.OOMShortage || s.Last.Floor.Known {
		t.Fatalf("30 s of watching: %+v (floor %+v), want shortage with no floor known", s.Last.Result, s.Last.Floor)
	}
	j = New(&fakeNVML{snapshot(now)}, ps, nil, Options{Clock: clk}, zap.NewNop())
	s := run(FloorWarmup)
	if s.Last.Result.Kind != api.OOMPeak || s.Last.Floor.Bytes != 512*MiB {
		t.Fatalf("after the warm-up: %+v (floor %+v), want peak against 512 MiB", s.Last.Result, s.Last.Floor)
	}
}

func TestFloorForgetsOldBuckets(t *testing.T) {
	var f floorState
	t0 := time.Unix(0, 0)
	f.observe(t0, 1*GiB)
	f.observe(t0.Add(time.Minute), 5*GiB)
	if fl := f.floor(t0.Add(time.Minute)); fl.Bytes != GiB || !fl.Known {
		t.Fatalf("floor %+v, want 1 GiB known", fl)
	}
	f.observe(t0.Add(FloorBucket), 6*GiB)   // opens bucket 2; bucket 1's 1 GiB is the previous one
	f.observe(t0.Add(2*FloorBucket), 7*GiB) // opens bucket 3; 1 GiB is gone
	if fl := f.floor(t0.Add(2 * FloorBucket)); fl.Bytes != 6*GiB {
		t.Fatalf("floor %+v, want 6 GiB once the first bucket has aged out", fl)
	}
}

// Only caches the runtime hands back on request are reclaimable.
func TestReclaimableByRuntime(t *testing.T) {
	now := time.Unix(1000, 0)
	torch := sender(1, 100, now, push.Device{UUID: gpuA, Pools: []push.Pool{
		{Name: "torch", Allocated: 1 * GiB, Reserved: 4 * GiB},
		{Name: "kv", Parent: "torch", Allocated: 1 * GiB, Reserved: 2 * GiB},
	}})
	jax := sender(2, 400, now, push.Device{UUID: gpuA, Pools: []push.Pool{{Name: "jax", Allocated: 1 * GiB, Reserved: 8 * GiB}}})
	jax.Msg.Runtime = "jax"
	jax.Msg.Allocator = map[string]string{"preallocate": "true"}
	j := New(&fakeNVML{snapshot(now)}, &fakePush{[]push.Sender{torch, jax}}, nil, Options{Clock: clock.NewFake(now)}, zap.NewNop())
	v := j.Tick()
	if got := find(t, v, 100, gpuA).ReclaimableBytes; got != 3*GiB {
		t.Errorf("torch reclaimable = %d, want 3 GiB (the nested pool is inside its parent)", got)
	}
	p := find(t, v, 400, gpuA)
	if p.ReclaimableBytes != 0 {
		t.Errorf("jax reclaimable = %d, want 0: XLA's pool is not handed back", p.ReclaimableBytes)
	}
	if p.Runtimes[0].Allocator["preallocate"] != "true" {
		t.Errorf("allocator settings not joined: %+v", p.Runtimes)
	}
}

// The newest message with phase peaks wins; phases are sorted by name.
func TestPhasePeaksFromTheNewestMessage(t *testing.T) {
	now := time.Unix(1000, 0)
	dev := func(peaks ...push.PhasePeak) push.Device {
		return push.Device{UUID: gpuA, Pools: []push.Pool{{Name: "torch", Allocated: GiB, Reserved: 2 * GiB}}, PhasePeaks: peaks}
	}
	older := sender(1, 100, now.Add(-time.Second), dev(push.PhasePeak{Phase: "infer", PeakAllocated: 1}))
	newer := sender(2, 100, now, dev(push.PhasePeak{Phase: "preprocess", PeakAllocated: 3}, push.PhasePeak{Phase: "infer", PeakAllocated: 2}))
	quiet := sender(3, 100, now.Add(time.Second), dev())
	j := New(&fakeNVML{snapshot(now)}, &fakePush{[]push.Sender{older, newer, quiet}}, nil, Options{Clock: clock.NewFake(now)}, zap.NewNop())
	got := find(t, j.Tick(), 100, gpuA).PhasePeaks
	want := []push.PhasePeak{{Phase: "infer", PeakAllocated: 2}, {Phase: "preprocess", PeakAllocated: 3}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("phase peaks %+v, want %+v", got, want)
	}
}
