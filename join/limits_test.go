package join

import (
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/leak/trend"
	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/procinfo"
	"github.com/vram-exporter/vram_exporter/push"
)

func torchOn(uuid string) push.Device {
	return push.Device{UUID: uuid, Pools: []push.Pool{{Name: "torch", Allocated: MiB, Reserved: 2 * MiB}}}
}

func newEngine(t *testing.T, maxKeys int) *trend.Engine {
	t.Helper()
	cfg := trend.DefaultConfig()
	cfg.MaxKeys = maxKeys
	e, err := trend.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A sender's data is dropped once its PID's start time in procfs is not the one
// recorded when the connection first spoke for it: the PID names another process.
func TestJoinDropsSenderOfReusedPID(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	reused := sender(1, 100, now, torchOn(gpuA))
	reused.StartTicks = 999 // fakeFacts: PID 100 started at tick 1000
	same := sender(2, 300, now, torchOn(gpuB))
	same.StartTicks = 3000
	unknown := sender(3, 400, now, torchOn(gpuA)) // start time not recorded: kept
	ps := &fakePush{s: []push.Sender{reused, same, unknown}}
	j := New(&fakeNVML{snapshot(now)}, ps, fakeFacts{}, Options{}, zap.NewNop())
	for range 2 {
		v := j.Tick()
		if p := find(t, v, 100, gpuA); p.Pushed {
			t.Errorf("the reused PID's process carries the dead sender's pools: %+v", p.Pools)
		}
		if p := find(t, v, 300, gpuB); !p.Pushed {
			t.Error("a sender whose start time matches was dropped")
		}
		if p := find(t, v, 400, gpuA); !p.Pushed {
			t.Error("a sender without a recorded start time was dropped")
		}
		if len(v.Senders) != 2 || v.PIDReusedSenders != 1 {
			t.Errorf("senders %d, reused %d; want 2 and 1 (counted once per connection)", len(v.Senders), v.PIDReusedSenders)
		}
	}
}

// A pushed UUID NVML does not know (while it is up) feeds no trend history, so a
// sender making up UUIDs costs the engine nothing.
func TestJoinUnknownUUIDsDoNotFeedTrends(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var devs []push.Device
	for i := range 16 {
		devs = append(devs, torchOn("GPU-made-up-"+string(rune('a'+i))))
	}
	ps := &fakePush{s: []push.Sender{sender(1, 100, now, append(devs, torchOn(gpuA))...)}}
	e := newEngine(t, 1000)
	j := New(&fakeNVML{snapshot(now)}, ps, nil, Options{Trend: e}, zap.NewNop())
	v := j.Tick()
	if v.UnknownDevices != 16 {
		t.Fatalf("unknown devices %d, want 16", v.UnknownDevices)
	}
	// NVML's 3 processes; PID 100 on gpuA is one of them.
	if n, _ := e.Len(); n != 3 || v.TrendKeys != 3 {
		t.Errorf("trend holds %d keys (view says %d), want the 3 on known GPUs", n, v.TrendKeys)
	}
	for _, p := range v.Processes {
		if p.UnknownDevice && p.HasTrend {
			t.Errorf("unknown device %s has a trend", p.UUID)
		}
	}
}

func TestJoinTrendKeyBound(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	e := newEngine(t, 2)
	j := New(&fakeNVML{snapshot(now)}, nil, nil, Options{Trend: e}, zap.NewNop())
	v := j.Tick()
	trended := 0
	for _, p := range v.Processes {
		if p.HasTrend {
			trended++
		}
	}
	if trended != 2 || v.TrendKeys != 2 || v.TrendRefused != 1 {
		t.Errorf("trended %d, keys %d, refused %d; want 2, 2, 1", trended, v.TrendKeys, v.TrendRefused)
	}
}

// While NVML is down every pushed (pid, uuid) feeds the trend engine; once its sender's
// data is gone nothing feeds that history again, so it is forgotten on the next tick
// instead of holding some KiB per key for SweepIdle (UUID churn held 2048 of them).
func TestJoinForgetsPushOnlyTrendsWhenTheSenderLeaves(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var devs []push.Device
	for i := range 8 {
		devs = append(devs, torchOn("GPU-made-up-"+string(rune('a'+i))))
	}
	ps := &fakePush{s: []push.Sender{sender(1, 100, now, devs...), sender(2, 200, now, torchOn(gpuA))}}
	e := newEngine(t, 1000)
	j := New(&fakeNVML{nvml.Snapshot{Up: false}}, ps, nil, Options{Trend: e}, zap.NewNop())
	if v := j.Tick(); v.TrendKeys != 9 {
		t.Fatalf("trend keys %d, want the 9 pushed (pid, uuid)", v.TrendKeys)
	}
	ps.s = ps.s[1:] // sender 1 left
	if v := j.Tick(); v.TrendKeys != 1 {
		t.Errorf("trend keys %d after the sender left, want only the remaining sender's 1", v.TrendKeys)
	}
}

// staleFacts is a caching FactsReader whose Facts may be older than procfs: PID 100's
// cached start is its previous owner's (1000); Refresh reads procfs (now).
type staleFacts struct {
	now       map[uint32]uint64
	refreshes int
}

func (f *staleFacts) Facts(pid uint32) (procinfo.Facts, error) {
	return procinfo.Facts{PID: pid, Comm: "python3", StartTicks: uint64(pid) * 10}, nil
}

func (f *staleFacts) Refresh(pid uint32) (procinfo.Facts, error) {
	f.refreshes++
	return procinfo.Facts{PID: pid, Comm: "python3", StartTicks: f.now[pid]}, nil
}

// A new pusher whose PID the facts cache still remembers under its previous owner is not
// taken for a reused PID: the disagreeing start time is read again first. A connection
// found reused is not re-read on later ticks.
func TestJoinRereadsStaleStartBeforeDroppingSender(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	fresh := sender(1, 100, now, torchOn(gpuA))
	fresh.StartTicks = 5000 // the new owner of PID 100, as the push server read it at connect
	reused := sender(2, 300, now, torchOn(gpuB))
	reused.StartTicks = 2999 // PID 300 really names another process now (started at 3000)
	facts := &staleFacts{now: map[uint32]uint64{100: 5000, 300: 3000}}
	j := New(&fakeNVML{snapshot(now)}, &fakePush{s: []push.Sender{fresh, reused}}, facts, Options{}, zap.NewNop())
	for tick := range 3 {
		v := j.Tick()
		p := find(t, v, 100, gpuA)
		if !p.Pushed || p.Facts.StartTicks != 5000 {
			t.Fatalf("tick %d: the new pusher was dropped or carries stale facts: pushed %v start %d", tick, p.Pushed, p.Facts.StartTicks)
		}
		if p := find(t, v, 300, gpuB); p.Pushed || v.PIDReusedSenders != 1 {
			t.Fatalf("tick %d: reused PID 300 kept (pushed %v), reused count %d", tick, p.Pushed, v.PIDReusedSenders)
		}
	}
	// Per tick: PID 100 re-read (its cached start still disagrees); PID 300 only once.
	if facts.refreshes != 3+1 {
		t.Fatalf("%d refreshes over 3 ticks, want 4", facts.refreshes)
	}
}
