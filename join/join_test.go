package join

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/vram-exporter/vram_exporter/clock"
	"github.com/vram-exporter/vram_exporter/leak/trace"
	"github.com/vram-exporter/vram_exporter/leak/trend"
	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/procinfo"
	"github.com/vram-exporter/vram_exporter/push"
)

const (
	gpuA = "GPU-aaaaaaaa-0000-0000-0000-000000000000"
	gpuB = "GPU-bbbbbbbb-0000-0000-0000-000000000000"
	MiB  = 1 << 20
	GiB  = 1 << 30
)

type fakeNVML struct{ s nvml.Snapshot }

func (f *fakeNVML) Latest() nvml.Snapshot { return f.s }

type fakePush struct{ s []push.Sender }

func (f *fakePush) Snapshot() []push.Sender { return f.s }

type fakeFacts map[uint32]error

func (f fakeFacts) Facts(pid uint32) (procinfo.Facts, error) {
	if err, ok := f[pid]; ok && err != nil {
		return procinfo.Facts{}, err
	}
	return procinfo.Facts{PID: pid, Comm: "python3", StartTicks: uint64(pid) * 10, RSSBytes: 4 * MiB}, nil
}

func set(v uint64) push.Optional { return push.Optional{Value: v, Set: true} }

func sender(conn uint64, pid uint32, last time.Time, devs ...push.Device) push.Sender {
	return push.Sender{ConnID: conn, PID: pid, LastSeen: last, Msg: push.Message{
		V: 1, Runtime: "torch", RuntimeVersion: "2.11.0", Labels: map[string]string{"service": "ranker"}, Devices: devs,
	}}
}

func snapshot(now time.Time) nvml.Snapshot {
	return nvml.Snapshot{
		Time: now, Up: true,
		GPUs: []nvml.GPU{
			{Index: 0, UUID: gpuA, TotalBytes: 80 * GiB, UsedBytes: 10 * GiB},
			{Index: 1, UUID: gpuB, TotalBytes: 80 * GiB, UsedBytes: 1 * GiB},
		},
		Processes: []nvml.Process{
			{PID: 100, UUID: gpuA, UsedBytes: 2 * GiB, Kinds: []string{"compute"}},
			{PID: 300, UUID: gpuB, UsedBytes: 1 * GiB, Kinds: []string{"compute"}},
			{PID: 400, UUID: gpuA, UsedBytes: 1 * GiB, Kinds: []string{"compute"}},
		},
	}
}

func find(t *testing.T, v *View, pid uint32, uuid string) Process {
	t.Helper()
	for _, p := range v.Processes {
		if p.PID == pid && p.UUID == uuid {
			return p
		}
	}
	t.Fatalf("no process %d on %s in view", pid, uuid)
	return Process{}
}

func TestJoinPerPIDAndUUID(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clk := clock.NewFake(now)
	nv := &fakeNVML{snapshot(now)}
	ps := &fakePush{[]push.Sender{
		// pid 100: a torch pool with a KV cache nested inside it.
		sender(1, 100, now, push.Device{UUID: gpuA, Pools: []push.Pool{
			{Name: "torch", Allocated: 1 * GiB, Reserved: 1536 * MiB, PeakAllocated: set(GiB + 1), AllocRetries: set(2), OOMs: set(0)},
			{Name: "vllm.kv_cache", Parent: "torch", Allocated: 512 * MiB, Reserved: 512 * MiB},
		}}),
		// pid 200 pushes for a GPU NVML does not know.
		sender(2, 200, now, push.Device{UUID: "GPU-ffffffff-0000-0000-0000-000000000000", Pools: []push.Pool{{Name: "torch", Allocated: 1, Reserved: 2}}}),
		// pid 400 reports more reserved than the driver sees.
		sender(3, 400, now, push.Device{UUID: gpuA, Pools: []push.Pool{{Name: "torch", Allocated: GiB, Reserved: 1536 * MiB}}}),
	}}
	j := New(nv, ps, fakeFacts{}, Options{Clock: clk}, zap.NewNop())
	v := j.Tick()
	if v != j.Latest() {
		t.Fatal("Tick's view is not the published one")
	}

	p := find(t, v, 100, gpuA)
	if !p.HasNVML || !p.Pushed || p.GPU != "0" {
		t.Fatalf("pid 100: HasNVML=%v Pushed=%v GPU=%q", p.HasNVML, p.Pushed, p.GPU)
	}
	if p.AllocatedBytes != GiB || p.ReservedBytes != 1536*MiB {
		t.Errorf("pid 100 top-level sums: allocated %d reserved %d; the nested KV cache must not be added", p.AllocatedBytes, p.ReservedBytes)
	}
	if !p.HasUnattributed || p.UnattributedBytes != 512*MiB {
		t.Errorf("pid 100 unattributed = %d (has=%v), want 512 MiB", p.UnattributedBytes, p.HasUnattributed)
	}
	if len(p.Pools) != 2 || p.Pools[0].Name != "torch" || p.Pools[0].CachedBytes() != 512*MiB || !p.Pools[0].AllocRetries.Set {
		t.Errorf("pid 100 pools: %+v", p.Pools)
	}
	if p.Label("service") != "ranker" || !p.HasFacts || p.Facts.Comm != "python3" {
		t.Errorf("pid 100 labels/facts: %q %+v", p.Label("service"), p.Facts)
	}

	u := find(t, v, 200, "GPU-ffffffff-0000-0000-0000-000000000000")
	if !u.UnknownDevice || u.HasNVML || u.HasUnattributed || u.GPU != "" {
		t.Errorf("pid 200 should be flagged unknown and kept: %+v", u)
	}
	if v.UnknownDevices != 1 {
		t.Errorf("UnknownDevices = %d, want 1", v.UnknownDevices)
	}
	if n := find(t, v, 400, gpuA); n.UnattributedBytes != -512*MiB {
		t.Errorf("pid 400 unattributed = %d, want -512 MiB (exported as measured)", n.UnattributedBytes)
	}
	if o := find(t, v, 300, gpuB); o.Pushed || o.HasUnattributed || o.UsedBytes != GiB {
		t.Errorf("pid 300 is NVML-only: %+v", o)
	}
	// Sorted by UUID then PID.
	for i := 1; i < len(v.Processes); i++ {
		a, b := v.Processes[i-1], v.Processes[i]
		if a.UUID > b.UUID || (a.UUID == b.UUID && a.PID >= b.PID) {
			t.Fatalf("processes not sorted: %s/%d before %s/%d", a.UUID, a.PID, b.UUID, b.PID)
		}
	}
	if len(v.Senders) != 3 {
		t.Errorf("Senders = %d, want 3", len(v.Senders))
	}
}

func TestJoinMergesConnectionsOfOneProcessNewestWins(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	nv := &fakeNVML{snapshot(now)}
	ps := &fakePush{[]push.Sender{
		sender(1, 100, now.Add(-time.Second), push.Device{UUID: gpuA, Pools: []push.Pool{
			{Name: "torch", Allocated: 100, Reserved: 200},
			{Name: "cupy", Allocated: 10, Reserved: 20},
		}}),
		sender(2, 100, now, push.Device{UUID: gpuA, Pools: []push.Pool{
			{Name: "torch", Allocated: 300, Reserved: 400}, // newer: replaces the older torch pool
		}}),
	}}
	j := New(nv, ps, nil, Options{Clock: clock.NewFake(now)}, zap.NewNop())
	p := find(t, j.Tick(), 100, gpuA)
	if len(p.Pools) != 2 || p.AllocatedBytes != 310 || p.ReservedBytes != 420 {
		t.Fatalf("merged pools %+v, allocated %d reserved %d; want torch from the newer message plus cupy", p.Pools, p.AllocatedBytes, p.ReservedBytes)
	}
	if !p.LastPush.Equal(now) {
		t.Errorf("LastPush = %v, want the newest %v", p.LastPush, now)
	}
}

func TestJoinProcfsErrors(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	core, logs := observer.New(zap.WarnLevel)
	facts := fakeFacts{100: procinfo.ErrNotFound, 300: errors.New("permission denied"), 400: errors.New("permission denied")}
	j := New(&fakeNVML{snapshot(now)}, nil, facts, Options{Clock: clock.NewFake(now)}, zap.New(core))
	v := j.Tick()
	if find(t, v, 100, gpuA).HasFacts {
		t.Error("a process that exited has no facts")
	}
	if v.ProcfsErrors != 2 {
		t.Errorf("ProcfsErrors = %d, want 2 (an exited process is not an error)", v.ProcfsErrors)
	}
	j.Tick()
	if n := logs.FilterMessageSnippet("--path.procfs").Len(); n != 1 {
		t.Errorf("want one rate-limited warning about procfs, got %d", n)
	}
}

func TestJoinWithoutNVMLStillServesPushes(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	ps := &fakePush{[]push.Sender{sender(1, 100, now, push.Device{UUID: gpuA, Pools: []push.Pool{{Name: "torch", Allocated: 1, Reserved: 2}}})}}
	j := New(&fakeNVML{nvml.Snapshot{Up: false}}, ps, nil, Options{Clock: clock.NewFake(now)}, zap.NewNop())
	v := j.Tick()
	p := find(t, v, 100, gpuA)
	if !p.Pushed || p.UnknownDevice || v.UnknownDevices != 0 {
		t.Errorf("with NVML down a pushed UUID is not 'unknown': %+v", p)
	}
}

// recordingJoiner is a Joiner over nv and ps with a trend engine at the defaults and a
// trace recorder writing to the returned buffer.
func recordingJoiner(t *testing.T, nv *fakeNVML, ps *fakePush, clk *clock.Fake) (*Joiner, *bytes.Buffer) {
	t.Helper()
	eng, err := trend.NewEngine(trend.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	out := &bytes.Buffer{}
	rec := NewTraceRecorder(bufio.NewWriter(out), 0)
	return New(nv, ps, fakeFacts{}, Options{Clock: clk, Trend: eng, Recorder: rec}, zap.NewNop()), out
}

func TestJoinFeedsTrendAndRecorder(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	clk := clock.NewFake(start)
	nv := &fakeNVML{snapshot(start)}
	ps := &fakePush{[]push.Sender{sender(1, 100, start, push.Device{UUID: gpuA, Pools: []push.Pool{{Name: "torch", Allocated: GiB, Reserved: 1536 * MiB}}})}}
	j, out := recordingJoiner(t, nv, ps, clk)
	v := j.Tick()
	p := find(t, v, 100, gpuA)
	if !p.HasTrend || p.Trend.Verdict != trend.WarmingUp {
		t.Errorf("first sample verdict = %q (has=%v), want warming_up", p.Trend.Verdict, p.HasTrend)
	}
	if !v.GPUs[0].HasTrend {
		t.Error("GPU trend not computed")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2+3 { // 2 GPUs, 3 (pid, uuid) entries
		t.Fatalf("trace has %d lines, want 5:\n%s", len(lines), out.String())
	}
	want := `{"t":1700000000,"pid":100,"start":1000,"uuid":"` + gpuA + `","used":2147483648,"allocated":1073741824,"reserved":1610612736}`
	if !strings.Contains(out.String(), want) {
		t.Errorf("trace lacks the joined process line %s:\n%s", want, out.String())
	}

	// Read back, the trace is exactly what the engine was fed: a replay sees what the
	// daemon saw. (A trace's times read back in UTC.)
	r := trace.NewReader(bytes.NewReader(out.Bytes()))
	for i := range v.GPUs {
		rec, err := r.Next()
		want := v.GPUs[i].Sample(v.Time.UTC())
		if err != nil || rec.GPU == nil || *rec.GPU != want {
			t.Errorf("trace GPU line %d = %+v, %v; want %+v", i+1, rec.GPU, err, want)
		}
	}
	for i := range v.Processes {
		rec, err := r.Next()
		want := v.Processes[i].Sample(v.Time.UTC())
		if err != nil || rec.Process == nil || *rec.Process != want {
			t.Errorf("trace process line %d = %+v, %v; want %+v", i+1, rec.Process, err, want)
		}
	}
	if got := p.Sample(v.Time); got != (trend.Sample{Key: trend.Key{PID: 100, Start: 1000, UUID: gpuA}, T: start,
		Used: 2 * GiB, Allocated: GiB, Reserved: 1536 * MiB, HasUsed: true, HasAllocated: true, HasReserved: true}) {
		t.Errorf("Sample of pid 100 = %+v", got)
	}
}

type failingRecorder struct{ calls int }

func (f *failingRecorder) Record(*View) error { f.calls++; return errors.New("disk full") }

func TestRecorderErrorStopsRecordingNotTheDaemon(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	core, logs := observer.New(zap.WarnLevel)
	rec := &failingRecorder{}
	j := New(&fakeNVML{snapshot(now)}, nil, nil, Options{Clock: clock.NewFake(now), Recorder: rec}, zap.New(core))
	j.Tick()
	v := j.Tick()
	if rec.calls != 1 || logs.Len() != 1 || len(v.Processes) != 3 {
		t.Errorf("recorder calls %d, warnings %d, processes %d; want 1, 1, 3", rec.calls, logs.Len(), len(v.Processes))
	}
}

func TestRunTicksOnTheClock(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	clk := clock.NewFake(start)
	nv := &fakeNVML{snapshot(start)}
	j := New(nv, nil, nil, Options{Clock: clk, Interval: time.Second}, zap.NewNop())
	ctx, cancel := contextWithCancel()
	done := make(chan struct{})
	go func() { j.Run(ctx); close(done) }()
	<-clk.Registered()
	clk.Advance(time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for !j.Latest().Time.Equal(start.Add(time.Second)) {
		if time.Now().After(deadline) {
			t.Fatal("Run did not join on the tick")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
}

// TestPushRepeatMarked: a tick whose push an earlier tick already had (the client pushes
// on its own clock, the daemon samples at every poll) marks the process's sample a
// repeat, for the trend engine's count of idle moments and in the recorded trace; a
// newer push is fresh again, and a process's first tick is fresh.
func TestPushRepeatMarked(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	clk := clock.NewFake(start)
	nv := &fakeNVML{snapshot(start)}
	dev := push.Device{UUID: gpuA, Pools: []push.Pool{{Name: "torch", Allocated: GiB, Reserved: 1536 * MiB}}}
	ps := &fakePush{[]push.Sender{sender(1, 100, start, dev)}}
	j, out := recordingJoiner(t, nv, ps, clk)
	tick := func(at time.Time) bool {
		t.Helper()
		clk.Advance(time.Second)
		nv.s = snapshot(clk.Now())
		ps.s = []push.Sender{sender(1, 100, at, dev)}
		p := find(t, j.Tick(), 100, gpuA)
		if p.Sample(clk.Now()).Repeat != p.PushRepeat {
			t.Fatalf("Sample().Repeat disagrees with PushRepeat %v", p.PushRepeat)
		}
		return p.PushRepeat
	}
	if p := find(t, j.Tick(), 100, gpuA); p.PushRepeat {
		t.Error("first tick marked a repeat")
	}
	if !tick(start) {
		t.Error("second tick with the same push not marked a repeat")
	}
	if tick(start.Add(time.Second)) {
		t.Error("a newer push marked a repeat")
	}
	if !strings.Contains(out.String(), `"repeat":true`) {
		t.Errorf("trace lacks the repeat mark:\n%s", out.String())
	}
	if n := strings.Count(out.String(), `"repeat":true`); n != 1 {
		t.Errorf("%d repeat marks in the trace, want 1:\n%s", n, out.String())
	}
}

// TestInFlightCarried: the requests in flight a client reports reach the trend sample and
// the recorded trace; of two connections the larger count wins (a request in flight on
// either lifts the allocated bytes); a process whose client does not report has none.
func TestInFlightCarried(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	clk := clock.NewFake(start)
	nv := &fakeNVML{snapshot(start)}
	dev := push.Device{UUID: gpuA, Pools: []push.Pool{{Name: "torch", Allocated: GiB, Reserved: 1536 * MiB}}}
	devB := push.Device{UUID: gpuA, Pools: []push.Pool{{Name: "cupy", Allocated: MiB, Reserved: 2 * MiB}}}
	reporting := func(conn uint64, n uint64, d push.Device) push.Sender {
		s := sender(conn, 100, start, d)
		s.Msg.RequestsInFlight = push.Optional{Value: n, Set: true}
		return s
	}
	ps := &fakePush{[]push.Sender{reporting(1, 0, dev), reporting(2, 3, devB), sender(3, 200, start, dev)}}
	j, out := recordingJoiner(t, nv, ps, clk)
	v := j.Tick()
	p100, p200 := find(t, v, 100, gpuA), find(t, v, 200, gpuA)
	s := p100.Sample(clk.Now())
	if !s.HasInFlight || s.InFlight != 3 {
		t.Errorf("pid 100: in flight %d (reported %v), want 3 from the busier connection", s.InFlight, s.HasInFlight)
	}
	if s := p200.Sample(clk.Now()); s.HasInFlight {
		t.Errorf("pid 200 reports nothing, yet its sample has %d in flight", s.InFlight)
	}
	if n := strings.Count(out.String(), `"in_flight":3`); n != 1 || strings.Count(out.String(), `"in_flight"`) != 1 {
		t.Errorf("the trace should carry in_flight once, on pid 100:\n%s", out.String())
	}
}
