//go:build cgo

package join_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/clock"
	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/leak/trend"
	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/nvml/nvmltest"
	"github.com/vram-exporter/vram_exporter/procinfo"
	"github.com/vram-exporter/vram_exporter/push"
)

// idleNode is the daemon at idle on one GPU with n pushing processes, as the GPU cost
// run measures it (scripts/gpu-e2e.sh phase 4: scripts/gpu/pusher.py pushes once a
// second; the Python client's default is every 5 s): the poller over the fake NVML,
// the push store, the procfs cache over the real /proc (n real PIDs stand in for the
// GPU processes) and the join with the trend engine.
type idleNode struct {
	clk    *clock.Fake
	poller *nvml.Poller
	store  *push.Store
	joiner *join.Joiner
	facts  *procinfo.Cache
	pids   []uint32
	msgs   [][]byte
	creds  []push.Cred
}

func newIdleNode(b *testing.B, n int) *idleNode {
	b.Helper()
	pids := realPIDs(b, n)
	specs := nvmltest.H200s(1, n)
	for i := range specs[0].Procs {
		specs[0].Procs[i].PID = pids[i]
	}
	srv := nvmltest.NewServer(specs...)
	uuid := srv.GPUs()[0].UUID
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	node := &idleNode{clk: clk}
	node.poller = nvml.NewPoller(srv, nvml.Options{Clock: clk}, zap.NewNop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); node.poller.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	select { // Run's Init and first poll, then it parks on the fake ticker
	case <-clk.Registered():
	case <-time.After(10 * time.Second):
		b.Fatal("poller never started")
	}
	reader, err := procinfo.NewReader("/proc")
	if err != nil {
		b.Skip(err)
	}
	facts := procinfo.NewCache(reader, clk)
	b.Cleanup(func() { _ = facts.Close() })
	node.facts, node.pids = facts, pids
	node.store = push.NewStore(30*time.Second, 1024, clk)
	for i, pid := range pids {
		start, _ := reader.StartTicks(pid)
		node.creds = append(node.creds, push.Cred{PID: pid, UID: 1000, GID: 1000, StartTicks: start})
		node.msgs = append(node.msgs, []byte(fmt.Sprintf(`{"v": 1, "runtime": "torch", "runtime_version": "2.11.0+cu130",
 "labels": {"service": "gpu-e2e-cost"}, "devices": [{"uuid": %q, "pools": [
  {"name": "torch", "allocated": %d, "reserved": %d, "peak_allocated": 2214592512,
   "active": 70254592, "inactive_split": 2097152, "limit": 150000000000, "alloc_retries": 0, "ooms": 0}]}]}`,
			uuid, 68157440+i<<20, 931135488+i<<20)))
	}
	engine, err := trend.NewEngine(trend.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	node.joiner = join.New(node.poller, node.store, facts, join.Options{Clock: clk, Trend: engine}, zap.NewNop())
	// Warm up past the trend's and the caches' first minutes.
	for range 120 {
		node.second(b, true, true, true)
	}
	if v := node.joiner.Latest(); len(v.Processes) != n || !v.Processes[0].Pushed || !v.Processes[0].HasFacts {
		b.Fatalf("view not joined: %d processes", len(v.Processes))
	}
	return node
}

// second is one second of the idle daemon: the pushes of that second, a poll, a join.
func (node *idleNode) second(b *testing.B, ingest, poll, tick bool) {
	node.secondFacts(b, ingest, poll, tick, false)
}

// secondFacts is second, or with facts only the process fact lookups a join makes (one
// per PID: pidfd polls, a stat read every procinfo.StatRefresh).
func (node *idleNode) secondFacts(b *testing.B, ingest, poll, tick, facts bool) {
	if facts {
		node.clk.Advance(time.Second)
		for _, pid := range node.pids {
			if _, err := node.facts.Facts(pid); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	node.clk.Advance(time.Second)
	now := node.clk.Now()
	if ingest {
		for i, raw := range node.msgs {
			m, err := push.Decode(raw)
			if err != nil {
				b.Fatal(err)
			}
			if err := node.store.Update(uint64(i+1), now, node.creds[i], m); err != nil {
				b.Fatal(err)
			}
		}
	}
	if poll {
		node.poller.Poll()
	}
	if tick {
		node.joiner.Tick()
	}
}

// realPIDs returns n PIDs with a readable /proc entry: the benchmark's own process and
// others on the machine, so procfs reads cost what they cost on a node.
func realPIDs(b *testing.B, n int) []uint32 {
	b.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		b.Skip(err)
	}
	var out []uint32
	for _, e := range ents {
		pid, err := strconv.ParseUint(e.Name(), 10, 32)
		if err != nil {
			continue
		}
		if _, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err != nil {
			continue
		}
		out = append(out, uint32(pid))
		if len(out) == n {
			return out
		}
	}
	b.Skipf("only %d readable processes in /proc, want %d", len(out), n)
	return nil
}

// BenchmarkIdleSecond is one second of the daemon's idle work with 1 and 16 pushing
// processes (no scrapes; views are encoded only when scraped): ns/op × 60 is its CPU per
// minute, NVML's own time (the fake's is near zero), the runtime's collections and its
// wakeups (per push message: the netpoller, sysmon woken by the read's system call, the
// read goroutine) aside. The parts are timed on their own too; facts is the join's
// process fact lookups alone, part of join.
func BenchmarkIdleSecond(b *testing.B) {
	for _, n := range []int{1, 16} {
		for _, part := range []struct {
			name                      string
			ingest, poll, tick, facts bool
		}{
			{"all", true, true, true, false}, {"ingest", true, false, false, false}, {"poll", false, true, false, false},
			{"join", false, false, true, false}, {"facts", false, false, false, true},
		} {
			b.Run(fmt.Sprintf("procs=%d/%s", n, part.name), func(b *testing.B) {
				node := newIdleNode(b, n)
				b.ReportAllocs()
				for b.Loop() {
					node.secondFacts(b, part.ingest, part.poll, part.tick, part.facts)
				}
			})
		}
	}
}
