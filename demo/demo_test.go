//go:build cgo

package demo

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/clock"
	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/leak/trend"
	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/procinfo"
	"github.com/vram-exporter/vram_exporter/push"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func h200s(n int, seed int64) Config {
	return Config{GPUs: n, GPUMemoryBytes: H200Bytes, Seed: seed}
}

// op is one call a Node made on its Store.
type op struct {
	Remove      bool
	ConnID      uint64
	ConnectedAt time.Time
	Cred        push.Cred
	Msg         push.Message
}

type recStore struct{ ops []op }

func (r *recStore) Update(id uint64, at time.Time, c push.Cred, m push.Message) error {
	r.ops = append(r.ops, op{ConnID: id, ConnectedAt: at, Cred: c, Msg: m})
	return nil
}
func (r *recStore) Remove(id uint64) { r.ops = append(r.ops, op{Remove: true, ConnID: id}) }

// TestDeterministicForASeed drives two nodes with the same seed from one fake clock
// through the daemon's own loop (Run) and compares everything they served.
func TestDeterministicForASeed(t *testing.T) {
	clk := clock.NewFake(epoch)
	a, _ := New(h200s(4, 7), clk.Now())
	b, _ := New(h200s(4, 7), clk.Now())
	var sa, sb recStore
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { a.Run(ctx, clk, &sa); done <- struct{}{} }()
	go func() { b.Run(ctx, clk, &sb); done <- struct{}{} }()
	<-clk.Registered()
	<-clk.Registered()
	// Step the nodes in lockstep: Run has no other way to tell us it handled a tick,
	// so each step waits until both NVML views show the new second.
	for s := 1; s <= 30*60; s++ {
		clk.Advance(time.Second)
		waitStepped(t, a, int64(s))
		waitStepped(t, b, int64(s))
		ga, gb := a.NVML().GPUs(), b.NVML().GPUs()
		if !reflect.DeepEqual(ga, gb) {
			t.Fatalf("second %d: NVML specs differ:\n%+v\n%+v", s, ga, gb)
		}
	}
	cancel()
	<-done
	<-done
	if len(sa.ops) == 0 {
		t.Fatal("no pushes in 30 simulated minutes")
	}
	if !reflect.DeepEqual(sa.ops, sb.ops) {
		t.Fatalf("store calls differ: %d vs %d calls", len(sa.ops), len(sb.ops))
	}

	// Another seed is another node (rates, noise, UUIDs), same cast.
	c, _ := New(h200s(4, 8), epoch)
	var sc recStore
	c.AdvanceTo(epoch.Add(30*time.Minute), &sc)
	if reflect.DeepEqual(c.NVML().GPUs(), a.NVML().GPUs()) {
		t.Error("seed 8 serves the same NVML specs as seed 7")
	}
}

func waitStepped(t *testing.T, n *Node, s int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n.mu.Lock()
		got := n.sec
		n.mu.Unlock()
		if got >= s {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node did not step to second %d (at %d)", s, got)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// TestCatchUpEqualsStepping: advancing in one jump ends in the same state as advancing
// second by second (a slow machine or a suspended laptop changes nothing).
func TestCatchUpEqualsStepping(t *testing.T) {
	a, _ := New(h200s(4, 3), epoch)
	b, _ := New(h200s(4, 3), epoch)
	sa, sb := push.NewStore(time.Hour, 0, clock.NewFake(epoch)), push.NewStore(time.Hour, 0, clock.NewFake(epoch))
	for s := 1; s <= 7200; s++ {
		a.AdvanceTo(epoch.Add(time.Duration(s)*time.Second), sa)
	}
	b.AdvanceTo(epoch.Add(7200*time.Second), sb)
	if !reflect.DeepEqual(a.NVML().GPUs(), b.NVML().GPUs()) {
		t.Fatal("NVML after one jump differs from NVML after stepping")
	}
	strip := func(ss []push.Sender) []push.Sender {
		for i := range ss {
			ss[i].Messages, ss[i].LastSeen = 0, time.Time{}
		}
		return ss
	}
	if x, y := strip(sa.Snapshot()), strip(sb.Snapshot()); !reflect.DeepEqual(x, y) {
		t.Fatalf("pushed state differs:\n%+v\n%+v", x, y)
	}
}

// pipeline is the daemon's data path on a fake clock: the node's NVML through the real
// poller, its pushes through the real store, joined with its facts by the real joiner
// and judged by the real trend engine with the default settings.
type pipeline struct {
	t      *testing.T
	clk    *clock.Fake
	node   *Node
	store  *push.Store
	poller *nvml.Poller
	joiner *join.Joiner
	cancel context.CancelFunc
}

func newPipeline(t *testing.T, cfg Config) *pipeline {
	t.Helper()
	clk := clock.NewFake(epoch)
	node, err := New(cfg, epoch)
	if err != nil {
		t.Fatal(err)
	}
	// The poller runs on a clock of its own that never moves: Run only initialises
	// NVML here, and the test polls once per simulated second.
	poller := nvml.NewPoller(node.NVML(), nvml.Options{Interval: time.Second, Clock: clock.NewFake(epoch)}, zap.NewNop())
	ctx, cancel := context.WithCancel(context.Background())
	go poller.Run(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for !poller.Latest().Up {
		if time.Now().After(deadline) {
			t.Fatal("poller did not initialise the demo NVML")
		}
		time.Sleep(time.Millisecond)
	}
	engine, err := trend.NewEngine(trend.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	store := push.NewStore(push.DefaultTTL, 0, clk)
	j := join.New(poller, store, node, join.Options{Interval: time.Second, Clock: clk, Trend: engine, Demo: true}, zap.NewNop())
	p := &pipeline{t: t, clk: clk, node: node, store: store, poller: poller, joiner: j, cancel: cancel}
	t.Cleanup(cancel)
	return p
}

// step advances one simulated second and returns the joined view.
func (p *pipeline) step() *join.View {
	p.clk.Advance(time.Second)
	p.node.AdvanceTo(p.clk.Now(), p.store)
	p.poller.Poll()
	return p.joiner.Tick()
}

func (p *pipeline) scenarios() map[uint32]Scenario {
	out := map[uint32]Scenario{}
	for _, pr := range p.node.Processes() {
		out[pr.PID] = pr.Scenario
	}
	return out
}

// TestScenariosThroughTheRealJoin runs the first 75 simulated minutes through the real
// poller, store, join and trend engine and checks each scenario shows what it is for.
func TestScenariosThroughTheRealJoin(t *testing.T) {
	p := newPipeline(t, h200s(4, 1))
	const ctxBytes = 520 * MiB

	firstVerdict := map[Scenario]map[trend.Verdict]int{} // scenario → verdict → first second
	leakVerdicts := map[Scenario]int{}
	pidsSeen := map[Scenario]map[uint32]bool{}
	exhaustionAt := map[int]int{} // GPU index → first second with a forecast
	exhaustionN := map[int]int{}  // GPU index → seconds with a forecast
	for s := 1; s <= 75*60; s++ {
		v := p.step()
		scen := p.scenarios()
		for _, pr := range v.Processes {
			sc, ok := scen[pr.PID]
			if !ok {
				continue // exited this second
			}
			if pidsSeen[sc] == nil {
				pidsSeen[sc] = map[uint32]bool{}
			}
			pidsSeen[sc][pr.PID] = true
			if pr.Pushed && pr.HasNVML && pr.UsedBytes < pr.ReservedBytes+ctxBytes && sc != Exhaustion {
				t.Fatalf("second %d: %s PID %d NVML used %d < reserved %d + CUDA context", s, sc, pr.PID, pr.UsedBytes, pr.ReservedBytes)
			}
			if !pr.HasFacts || pr.Facts.Comm == "" || pr.Facts.StartTicks == 0 {
				t.Fatalf("second %d: PID %d has no facts: %+v", s, pr.PID, pr.Facts)
			}
			if sc != NoPush && (pr.Facts.ContainerID == "" || !strings.HasPrefix(pr.Facts.ContainerID, "containerd://") || pr.Facts.PodUID == "") {
				t.Fatalf("PID %d: container facts %q %q", pr.PID, pr.Facts.ContainerID, pr.Facts.PodUID)
			}
			if !pr.HasTrend {
				continue
			}
			vd := pr.Trend.Verdict
			if firstVerdict[sc] == nil {
				firstVerdict[sc] = map[trend.Verdict]int{}
			}
			if _, ok := firstVerdict[sc][vd]; !ok {
				firstVerdict[sc][vd] = s
			}
			if vd == trend.Leak {
				leakVerdicts[sc]++
			}
		}
		for _, g := range v.GPUs {
			if g.Trend.ExhaustionValid {
				exhaustionN[g.Index]++
				if _, ok := exhaustionAt[g.Index]; !ok {
					exhaustionAt[g.Index] = s
				}
			}
		}
	}
	t.Logf("first verdicts (simulated second): %v", firstVerdict)
	t.Logf("first exhaustion forecast per GPU (simulated second): %v", exhaustionAt)
	t.Logf("seconds with an exhaustion forecast per GPU: %v", exhaustionN)
	t.Logf("PIDs per scenario: %v", pidsSeen)

	within := func(sc Scenario, vd trend.Verdict, by int) {
		t.Helper()
		at, ok := firstVerdict[sc][vd]
		if !ok || at > by {
			t.Errorf("%s: verdict %s first at second %d (seen %v), want by %d", sc, vd, at, ok, by)
		}
	}
	// The warm-up ends on evidence (trend, docs/leak-detection.md): a process whose floors
	// went flat gets its verdict a short window (10 min) after its last warm-up step; a
	// leak from the first request, once it has risen smoothly and at a steady pace for a
	// short window past the 10-minute warm-up.
	within(Leaking, trend.Leak, 22*60)
	within(Exhaustion, trend.Leak, 22*60)
	within(UnattributedGrowth, trend.UnattributedGrowth, 22*60)
	within(Healthy, trend.Steady, 15*60)
	within(Duplicated, trend.Steady, 15*60)
	within(NoPush, trend.Steady, 15*60)
	for _, sc := range []Scenario{Healthy, Duplicated, NoPush, Restarting, UnattributedGrowth} {
		if n := leakVerdicts[sc]; n > 0 {
			t.Errorf("%s got the leak verdict in %d samples", sc, n)
		}
	}
	// The exhaustion GPU is forecast within the first hour; it is GPU 2.
	if at, ok := exhaustionAt[2]; !ok || at > 60*60 {
		t.Errorf("GPU 2 exhaustion forecast first at %d (%v), want within the first hour", at, ok)
	}
	// Restarts: the recycled worker at 20 and 40 minutes, the exhausted one after its OOM.
	if n := len(pidsSeen[Restarting]); n != 4 {
		t.Errorf("restarting worker had %d PIDs in 75 minutes, want 4 (recycled every 20 min): %v", n, pidsSeen[Restarting])
	}
	if n := len(pidsSeen[Exhaustion]); n != 2 {
		t.Errorf("exhausting process had %d PIDs in 75 minutes, want 2 (one OOM restart): %v", n, pidsSeen[Exhaustion])
	}
	if n := len(pidsSeen[Duplicated]); n != 3 {
		t.Errorf("duplicated workers: %d PIDs, want 3", n)
	}
	// Exited processes are gone from the store at once (connection removed, not expired).
	live := map[uint32]bool{}
	for _, pr := range p.node.Processes() {
		live[pr.PID] = true
	}
	for _, snd := range p.store.Snapshot() {
		if !live[snd.PID] {
			t.Errorf("store still holds exited PID %d", snd.PID)
		}
	}
	if st := p.store.Stats(); st.Expired != 0 {
		t.Errorf("%d senders expired; the demo removes its connections", st.Expired)
	}
}

// TestEveryMessageIsValidOnTheWire encodes the demo's messages as a client would and
// decodes them with the daemon's strict decoder.
func TestEveryMessageIsValidOnTheWire(t *testing.T) {
	var st recStore
	m2, _ := New(h200s(4, 1), epoch)
	for s := 1; s <= 70*60; s++ {
		m2.AdvanceTo(epoch.Add(time.Duration(s)*time.Second), &st)
	}
	count, ooms := 0, uint64(0)
	for _, o := range st.ops {
		if o.Remove {
			continue
		}
		count++
		b, err := json.Marshal(wire(o.Msg))
		if err != nil {
			t.Fatal(err)
		}
		got, err := push.Decode(b)
		if err != nil {
			t.Fatalf("demo message rejected: %v\n%s", err, b)
		}
		if !reflect.DeepEqual(got, o.Msg) {
			t.Fatalf("round trip changed the message:\n%+v\n%+v", got, o.Msg)
		}
		ooms = max(ooms, o.Msg.Devices[0].Pools[0].OOMs.Value)
	}
	if count < 1000 {
		t.Errorf("only %d messages in 70 minutes", count)
	}
	if ooms == 0 {
		t.Error("no pushed OOM in 70 minutes; the exhaustion scenario should OOM about an hour in")
	}
}

// wire writes a Message in the v1 protocol's JSON (docs/protocol.md).
func wire(m push.Message) map[string]any {
	opt := func(out map[string]any, k string, o push.Optional) {
		if o.Set {
			out[k] = o.Value
		}
	}
	var devs []any
	for _, d := range m.Devices {
		var pools []any
		for _, p := range d.Pools {
			pl := map[string]any{"name": p.Name, "allocated": p.Allocated, "reserved": p.Reserved}
			if p.Parent != "" {
				pl["parent"] = p.Parent
			}
			opt(pl, "peak_allocated", p.PeakAllocated)
			opt(pl, "active", p.Active)
			opt(pl, "inactive_split", p.InactiveSplit)
			opt(pl, "limit", p.Limit)
			opt(pl, "alloc_retries", p.AllocRetries)
			opt(pl, "ooms", p.OOMs)
			pools = append(pools, pl)
		}
		dev := map[string]any{"uuid": d.UUID, "pools": pools}
		opt(dev, "oom_seq", d.OOMSeq)
		var evs []any
		for _, e := range d.OOMEvents {
			ev := map[string]any{"seq": e.Seq, "source": e.Source}
			opt(ev, "requested", e.Requested)
			opt(ev, "device_free", e.DeviceFree)
			opt(ev, "device_limit", e.DeviceLimit)
			opt(ev, "allocated", e.Allocated)
			opt(ev, "reserved", e.Reserved)
			opt(ev, "inactive_split", e.InactiveSplit)
			opt(ev, "largest_free_block", e.LargestFreeBlock)
			evs = append(evs, ev)
		}
		if evs != nil {
			dev["oom_events"] = evs
		}
		var phs []any
		for _, ph := range d.PhasePeaks {
			phs = append(phs, map[string]any{"phase": ph.Phase, "peak_allocated": ph.PeakAllocated})
		}
		if phs != nil {
			dev["phase_peaks"] = phs
		}
		var engs []any
		for _, e := range d.TRTEngines {
			en := map[string]any{"engine": e.Engine, "contexts": e.Contexts}
			opt(en, "context_bytes", e.ContextBytes)
			opt(en, "held_bytes", e.HeldBytes)
			opt(en, "weights_bytes", e.WeightsBytes)
			opt(en, "streamable_bytes", e.StreamableBytes)
			opt(en, "streaming_budget_bytes", e.StreamingBudgetBytes)
			engs = append(engs, en)
		}
		if engs != nil {
			dev["trt_engines"] = engs
		}
		devs = append(devs, dev)
	}
	out := map[string]any{
		"v": m.V, "runtime": m.Runtime, "runtime_version": m.RuntimeVersion,
		"labels": m.Labels, "client_dropped": m.ClientDropped, "devices": devs,
	}
	if m.Allocator != nil {
		out["allocator"] = m.Allocator
	}
	if m.RequestsInFlight.Set {
		out["requests_in_flight"] = m.RequestsInFlight.Value
	}
	return out
}

func TestFactsForUnknownPIDIsNotFound(t *testing.T) {
	n, _ := New(h200s(1, 1), epoch)
	n.AdvanceTo(epoch.Add(time.Minute), &recStore{})
	if _, err := n.Facts(1); err != procinfo.ErrNotFound {
		t.Fatalf("Facts(1) = %v, want ErrNotFound", err)
	}
	f, err := n.Facts(2101)
	if err != nil || f.Comm != "vllm" || f.StartTime.IsZero() {
		t.Fatalf("Facts(2101) = %+v, %v", f, err)
	}
}

func TestConfigSizesTheNode(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{GPUs: 0, GPUMemoryBytes: H200Bytes}, "demo: GPUs: 0 is out of range; use 1 to 64"},
		{Config{GPUs: 65, GPUMemoryBytes: H200Bytes}, "demo: GPUs: 65 is out of range; use 1 to 64"},
		{Config{GPUs: 1, GPUMemoryBytes: 1 << 20}, "demo: GPUMemoryBytes: 1048576 is below the minimum of 1073741824 (1 GiB); use a real GPU's size, like 150754820096 (an H200)"},
	} {
		if _, err := New(tc.cfg, epoch); err == nil || err.Error() != tc.want {
			t.Errorf("New(%+v) = %v, want %s", tc.cfg, err, tc.want)
		}
	}
	if _, err := New(DefaultConfig(), epoch); err != nil {
		t.Errorf("New(DefaultConfig()) = %v", err)
	}
	if _, err := New(Config{GPUs: MaxGPUs, GPUMemoryBytes: MinGPUMemoryBytes}, epoch); err != nil {
		t.Errorf("New at the bounds = %v", err)
	}
	// A small GPU and more GPUs than scenarios: everything fits, extra GPUs get replicas.
	n, err := New(Config{GPUs: 6, GPUMemoryBytes: 24 * GiB, Seed: 1}, epoch)
	if err != nil {
		t.Fatal(err)
	}
	n.AdvanceTo(epoch.Add(10*time.Minute), &recStore{})
	gpus := n.NVML().GPUs()
	if len(gpus) != 6 {
		t.Fatalf("%d GPUs", len(gpus))
	}
	for i, g := range gpus {
		if g.Total != 24*GiB || g.Used+g.DriverReserved > g.Total || len(g.Procs) == 0 {
			t.Errorf("GPU %d: total %d used %d reserved %d procs %d", i, g.Total, g.Used, g.DriverReserved, len(g.Procs))
		}
	}
}
