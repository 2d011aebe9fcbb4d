// Package apitest holds hand-built joined views for tests of the JSON API and the
// triage command: one per situation an on-call engineer meets (a leak, an allocator
// cache, growth outside the allocator, duplicated workers, NVML down, demo mode), with
// fixed times so that golden outputs are byte-stable.
package apitest

import (
	"time"

	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/leak/trend"
	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/procinfo"
	"github.com/vram-exporter/vram_exporter/push"
)

// Time is the join time of every fixture view.
var Time = time.Date(2026, 3, 1, 3, 4, 5, 0, time.UTC)

const (
	MiB = 1 << 20
	GiB = 1 << 30
)

// UUIDs of the fixture GPUs.
const (
	UUID0 = "GPU-0a0a0a0a-1111-2222-3333-444444444444"
	UUID1 = "GPU-1b1b1b1b-1111-2222-3333-444444444444"
)

// Static is a ViewSource that always returns V.
type Static struct{ V *join.View }

// Latest returns the fixed view.
func (s Static) Latest() *join.View { return s.V }

// Names lists the fixtures in a stable order.
func Names() []string { return []string{"node", "nvml_down", "demo", "empty"} }

// View returns the named fixture (a fresh copy each call), nil for an unknown name.
func View(name string) *join.View {
	switch name {
	case "node":
		return node()
	case "nvml_down":
		return nvmlDown()
	case "demo":
		return demo()
	case "empty":
		return empty()
	}
	return nil
}

func mpm(x float64) float64 { return x * trend.MiBPerMinute }

// g builds short and long slopes of one series.
func g(series string, short, shortFit, long, longFit float64) []trend.Growth {
	return []trend.Growth{
		{Series: series, Window: trend.WindowShort, BytesPerSecond: mpm(short), Fit: shortFit, Valid: true},
		{Series: series, Window: trend.WindowLong, BytesPerSecond: mpm(long), Fit: longFit, Valid: true},
	}
}

func flat(series ...string) []trend.Growth {
	var out []trend.Growth
	for _, s := range series {
		out = append(out, g(s, 0.01, 0.02, 0.01, 0.05)...)
	}
	return out
}

func cat(gs ...[]trend.Growth) []trend.Growth {
	var out []trend.Growth
	for _, g := range gs {
		out = append(out, g...)
	}
	return out
}

func gpu(idx int, uuid string, total, used uint64) join.GPU {
	return join.GPU{GPU: nvml.GPU{
		Index: idx, UUID: uuid, Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:1" + string(rune('8'+idx)) + ":00.0",
		MemoryAPI: nvml.MemoryAPIv2, TotalBytes: total, UsedBytes: used, FreeBytes: total - used,
		DriverReservedBytes: 512 * MiB, GPUInstanceID: -1, ComputeInstanceID: -1,
	}, HasTrend: true}
}

type proc struct {
	pid            uint32
	uuid, gpu      string
	used           uint64 // 0: NVML does not see it
	comm, cmdline  string
	container      string
	labels         map[string]string
	alloc, reserve uint64 // reserve 0: pushes nothing
	verdict        trend.Verdict
	since          time.Duration // before Time
	reason         string
	growth         []trend.Growth
}

func (p proc) build() join.Process {
	out := join.Process{PID: p.pid, UUID: p.uuid, GPU: p.gpu}
	if p.used > 0 {
		out.HasNVML, out.UsedBytes, out.Kinds = true, p.used, []string{"compute"}
	}
	if p.comm != "" {
		out.HasFacts = true
		out.Facts = procinfo.Facts{PID: p.pid, Comm: p.comm, Cmdline: p.cmdline, StartTicks: uint64(p.pid) * 100,
			StartTime: Time.Add(-5 * time.Hour), RSSBytes: 3 * GiB, ContainerID: p.container}
		if p.container != "" {
			out.Facts.PodUID = "6f1c2a9e-0000-4000-8000-00000000" + string(rune('0'+p.pid%10)) + "abc"
		}
	}
	if p.reserve > 0 {
		out.Pushed = true
		out.Runtimes = []join.Runtime{{Name: "torch", Version: "2.11.0", Labels: p.labels}}
		out.Pools = []push.Pool{{Name: "torch", Allocated: p.alloc, Reserved: p.reserve,
			PeakAllocated: push.Optional{Value: p.alloc + 512*MiB, Set: true}, AllocRetries: push.Optional{Set: true}}}
		out.AllocatedBytes, out.ReservedBytes = p.alloc, p.reserve
		out.LastPush = Time.Add(-700 * time.Millisecond)
		if out.HasNVML {
			out.HasUnattributed, out.UnattributedBytes = true, int64(p.used)-int64(p.reserve)
		}
	}
	if p.verdict != "" {
		out.HasTrend = true
		out.Trend = trend.Result{Verdict: p.verdict, Since: Time.Add(-p.since), Reason: p.reason, Growth: p.growth}
	}
	return out
}

func cid(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = "0123456789abcdef"[(int(c)+i*7)%16]
	}
	return "containerd://" + string(b)
}

func labels(service, model string) map[string]string {
	return map[string]string{"service": service, "model": model}
}

func procs(ps ...proc) []join.Process {
	out := make([]join.Process, len(ps))
	for i, p := range ps {
		out[i] = p.build()
	}
	return out
}

// node: two GPUs. GPU 0 is filling up with a leak, an allocator cache, growth outside
// the allocator and a process that pushes nothing; GPU 1 runs three workers of one
// service that each load the same 18 GiB model, and a fourth still warming up.
func node() *join.View {
	g0 := gpu(0, UUID0, 80*GiB, 50*GiB)
	g0.Trend = trend.GPUResult{Growth: g(trend.SeriesUsed, 85, 0.96, 40, 0.9)}
	g0.Trend.ExhaustionSeconds = float64(30*GiB) / mpm(85)
	g0.Trend.ExhaustionValid = true
	g1 := gpu(1, UUID1, 80*GiB, 57*GiB)
	g1.Trend = trend.GPUResult{Growth: g(trend.SeriesUsed, 0.01, 0.01, 0.02, 0.1)}
	py := "python3 -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-8B"
	return &join.View{
		Time: Time,
		NVML: nvml.Snapshot{Time: Time, Up: true, DriverVersion: "570.133.20", NVMLVersion: "12.570.133.20"},
		GPUs: []join.GPU{g0, g1},
		Processes: procs(
			proc{pid: 4101, uuid: UUID0, gpu: "0", used: 21 * GiB, comm: "python3", cmdline: py, container: cid('a'),
				labels: labels("chat", "llama-3.1-8b"), alloc: 14 * GiB, reserve: 20 * GiB, verdict: trend.Leak, since: 40 * time.Minute,
				reason: "allocated floor rising 12 MiB/min (fit 0.97) for 40m0s",
				growth: cat(g(trend.SeriesAllocated, 12, 0.97, 11, 0.95), g(trend.SeriesReserved, 12, 0.9, 11, 0.9), g(trend.SeriesUsed, 12, 0.9, 11, 0.9), flat(trend.SeriesUnattributed))},
			proc{pid: 4102, uuid: UUID0, gpu: "0", used: 9 * GiB, comm: "python3", cmdline: "python3 embed.py", container: cid('b'),
				labels: labels("embed", "bge-large"), alloc: 3 * GiB, reserve: 8*GiB + 512*MiB, verdict: trend.CacheGrowth, since: 55 * time.Minute,
				reason: "reserved rising 30 MiB/min (fit 0.91) for 55m0s while allocated is flat: the allocator cache is growing, normal if it plateaus",
				growth: cat(flat(trend.SeriesAllocated), g(trend.SeriesReserved, 0.05, 0.1, 30, 0.91), g(trend.SeriesUsed, 0.05, 0.1, 30, 0.91), flat(trend.SeriesUnattributed))},
			proc{pid: 4103, uuid: UUID0, gpu: "0", used: 13 * GiB, comm: "torchrun", cmdline: "torchrun --nproc-per-node 1 rerank.py", container: cid('c'),
				labels: labels("rerank", ""), alloc: 8 * GiB, reserve: 9 * GiB, verdict: trend.UnattributedGrowth, since: 15 * time.Minute,
				reason: "memory outside the allocator (used − reserved) rising 25 MiB/min (fit 0.93) for 15m0s while allocated is flat",
				growth: cat(flat(trend.SeriesAllocated, trend.SeriesReserved), g(trend.SeriesUsed, 25, 0.93, 20, 0.9), g(trend.SeriesUnattributed, 25, 0.93, 20, 0.9))},
			proc{pid: 4104, uuid: UUID0, gpu: "0", used: 6 * GiB, comm: "tritonserver", cmdline: "tritonserver --model-repository=/models",
				verdict: trend.Leak, since: 25 * time.Minute,
				reason: "used floor rising 3 MiB/min (fit 0.9) for 25m0s; the process pushes no allocator stats, so this is NVML's view",
				growth: g(trend.SeriesUsed, 3, 0.9, 2.5, 0.88)},
			proc{pid: 5101, uuid: UUID1, gpu: "1", used: 18 * GiB, comm: "python3", cmdline: "python3 ranker.py --worker 0", container: cid('d'),
				labels: labels("ranker", "ranker-xl"), alloc: 16 * GiB, reserve: 17 * GiB, verdict: trend.Steady, since: 3 * time.Hour,
				reason: "no floor rising faster than 0.5 MiB/min with fit ≥ 0.85 for 0s", growth: flat(trend.SeriesAllocated, trend.SeriesReserved, trend.SeriesUsed, trend.SeriesUnattributed)},
			proc{pid: 5102, uuid: UUID1, gpu: "1", used: 18*GiB + 100*MiB, comm: "python3", cmdline: "python3 ranker.py --worker 1", container: cid('e'),
				labels: labels("ranker", "ranker-xl"), alloc: 16 * GiB, reserve: 17 * GiB, verdict: trend.Steady, since: 3 * time.Hour,
				reason: "no floor rising faster than 0.5 MiB/min with fit ≥ 0.85 for 0s", growth: flat(trend.SeriesAllocated, trend.SeriesReserved, trend.SeriesUsed, trend.SeriesUnattributed)},
			proc{pid: 5103, uuid: UUID1, gpu: "1", used: 18*GiB - 60*MiB, comm: "python3", cmdline: "python3 ranker.py --worker 2", container: cid('f'),
				labels: labels("ranker", "ranker-xl"), alloc: 16 * GiB, reserve: 17 * GiB, verdict: trend.Steady, since: 3 * time.Hour,
				reason: "no floor rising faster than 0.5 MiB/min with fit ≥ 0.85 for 0s", growth: flat(trend.SeriesAllocated, trend.SeriesReserved, trend.SeriesUsed, trend.SeriesUnattributed)},
			proc{pid: 5104, uuid: UUID1, gpu: "1", used: 2 * GiB, comm: "python3", cmdline: "python3 ranker.py --worker 3", container: cid('0'),
				labels: labels("ranker", "ranker-xl"), alloc: 1 * GiB, reserve: 1*GiB + 512*MiB, verdict: trend.WarmingUp, since: 4 * time.Minute,
				reason: "first seen 4m0s ago; verdicts start after the 10m0s warm-up"},
		),
		Senders: make([]push.Sender, 7),
	}
}

// nvmlDown: the driver cannot be read; only pushed allocator stats remain.
func nvmlDown() *join.View {
	return &join.View{
		Time: Time,
		NVML: nvml.Snapshot{Time: Time},
		Processes: procs(
			proc{pid: 7001, uuid: UUID0, comm: "python3", cmdline: "python3 serve.py", labels: labels("chat", "qwen-7b"),
				alloc: 10 * GiB, reserve: 12 * GiB, verdict: trend.Leak, since: 2*time.Hour + 10*time.Minute,
				reason: "allocated floor rising 4 MiB/min (fit 0.92) for 2h10m0s",
				growth: cat(g(trend.SeriesAllocated, 4, 0.92, 4.2, 0.97), g(trend.SeriesReserved, 4, 0.9, 4, 0.95))},
			proc{pid: 7002, uuid: UUID0, comm: "python3", cmdline: "python3 serve.py", labels: labels("chat", "qwen-7b"),
				alloc: 10 * GiB, reserve: 11 * GiB, verdict: trend.Steady, since: 3 * time.Hour,
				reason: "no floor rising faster than 0.5 MiB/min with fit ≥ 0.85 for 0s", growth: flat(trend.SeriesAllocated, trend.SeriesReserved)},
		),
		Senders: make([]push.Sender, 2),
	}
}

// demo: demo mode, one GPU, everything young.
func demo() *join.View {
	g0 := gpu(0, UUID0, 24*GiB, 7*GiB)
	g0.Name = "NVIDIA L4 (simulated)"
	return &join.View{
		Time: Time, Demo: true,
		NVML: nvml.Snapshot{Time: Time, Up: true, DriverVersion: "demo", NVMLVersion: "demo"},
		GPUs: []join.GPU{g0},
		Processes: procs(
			proc{pid: 101, uuid: UUID0, gpu: "0", used: 7 * GiB, comm: "demo-worker", cmdline: "demo-worker 0",
				labels: labels("demo", "tiny"), alloc: 5 * GiB, reserve: 6 * GiB, verdict: trend.WarmingUp, since: 90 * time.Second,
				reason: "first seen 1m30s ago; verdicts start after the 10m0s warm-up"},
		),
		Senders: make([]push.Sender, 1),
	}
}

// empty: NVML up, one idle GPU, no processes, no trend yet.
func empty() *join.View {
	g0 := gpu(0, UUID0, 80*GiB, 0)
	g0.HasTrend = false
	return &join.View{Time: Time, NVML: nvml.Snapshot{Time: Time, Up: true, DriverVersion: "570.133.20", NVMLVersion: "12.570.133.20"},
		GPUs: []join.GPU{g0}}
}
