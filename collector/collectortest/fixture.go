// Package collectortest holds the fixture node that the collector's own tests and the
// dashboard/rule checks in deploy/ both export through the real collectors, so the two
// check the same families.
package collectortest

import (
	"github.com/vram-exporter/vram_exporter/api"
	"github.com/vram-exporter/vram_exporter/oom"
	"strings"
	"time"

	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/leak/trend"
	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/procinfo"
	"github.com/vram-exporter/vram_exporter/push"
)

const (
	mib = 1 << 20
	gib = 1 << 30
	// GPU is the fixture GPU's UUID.
	GPU = "GPU-aaaaaaaa-0000-0000-0000-000000000000"
)

// StaticView serves one view.
type StaticView struct{ V *join.View }

// Latest implements the collector's ViewSource.
func (s StaticView) Latest() *join.View { return s.V }

// StaticPush serves fixed push statistics.
type StaticPush struct{ S push.Stats }

// Stats implements the collector's PushStats.
func (s StaticPush) Stats() push.Stats { return s.S }

// Node is one GPU with NVML data and a forecast, a pushing torch process (every optional
// pool field, a nested KV cache pool, the given verdict), an NVML-only process, NVML
// error counters and a push sender.
func Node(now time.Time, verdict trend.Verdict) *join.View {
	set := func(v uint64) push.Optional { return push.Optional{Value: v, Set: true} }
	return &join.View{
		Time: now,
		NVML: nvml.Snapshot{
			Up: true, DriverVersion: "580.159.04", NVMLVersion: "13.580.159.04", PollDuration: 2 * time.Millisecond,
			Errors: map[nvml.ErrorKey]uint64{{Call: "GetBAR1MemoryInfo", Error: "not_supported"}: 3},
		},
		GPUs: []join.GPU{{
			GPU: nvml.GPU{Index: 0, UUID: GPU, Name: "NVIDIA H200", PCIBusID: "00000000:18:00.0", MemoryAPI: nvml.MemoryAPIv2,
				TotalBytes: 143771 * mib, UsedBytes: 20 * gib, FreeBytes: 143771*mib - 20*gib - 577*mib, DriverReservedBytes: 577 * mib,
				BAR1Valid: true, BAR1TotalBytes: 256 * gib, BAR1UsedBytes: 8 * mib, GPUInstanceID: -1, ComputeInstanceID: -1},
			HasTrend: true,
			Trend: trend.GPUResult{Growth: []trend.Growth{
				{Series: "used", Window: "short", BytesPerSecond: 1 * mib, Fit: 0.97, Valid: true},
				{Series: "used", Window: "long", BytesPerSecond: 1 * mib, Fit: 0.95, Valid: true},
			}, ExhaustionSeconds: 3600, ExhaustionValid: true},
		}},
		Processes: []join.Process{
			{
				PID: 4242, UUID: GPU, GPU: "0", HasNVML: true, UsedBytes: 2 * gib,
				HasFacts: true, Facts: procinfo.Facts{PID: 4242, Comm: "python3", Cmdline: "python3 serve.py", RSSBytes: 3 * gib,
					StartTime: now.Add(-time.Hour), ContainerID: "containerd://" + strings.Repeat("ab", 32), PodUID: "0f8b6a3e-1111-2222-3333-444455556666"},
				Pushed: true,
				Runtimes: []join.Runtime{{Name: "torch", Version: "2.11.0", Labels: map[string]string{"service": "ranker", "model": "bert"},
					Allocator: map[string]string{"expandable_segments": "False", "max_split_size_mb": "512"}}},
				ReclaimableBytes: 512 * mib,
				TRTEngines: []push.TRTEngine{{Engine: "trt.weights", Contexts: 4, ContextBytes: set(300 * mib), HeldBytes: set(1200 * mib),
					WeightsBytes: set(2 * gib), StreamableBytes: set(1 * gib), StreamingBudgetBytes: set(512 * mib)}},
				PhasePeaks: []push.PhasePeak{{Phase: "infer", PeakAllocated: 1200 * mib}, {Phase: "preprocess", PeakAllocated: 300 * mib}},
				OOM: &join.OOMStats{
					Events: map[api.OOMKind]uint64{api.OOMShortage: 0, api.OOMFragmentation: 2, api.OOMPeak: 0, api.OOMUnknown: 1},
					Last: &join.LastOOM{
						Event: push.OOMEvent{Seq: 3, Source: push.OOMSourceObserver, Requested: set(256 * mib), DeviceFree: set(128 * mib),
							Allocated: set(1 * gib), Reserved: set(1536 * mib), LargestFreeBlock: set(64 * mib)},
						Result: oom.Result{Kind: api.OOMFragmentation, Free: set(128 * mib), Cached: set(512 * mib), Demand: set(1280 * mib)},
						Floor:  oom.Floor{Bytes: 900 * mib, Known: true},
						Time:   now.Add(-time.Minute),
					},
				},
				Pools: []push.Pool{
					{Name: "torch", Allocated: 1 * gib, Reserved: 1536 * mib, PeakAllocated: set(1200 * mib), Active: set(1100 * mib),
						InactiveSplit: set(2 * mib), Limit: set(100 * gib), AllocRetries: set(1), OOMs: set(0)},
					{Name: "vllm.kv_cache", Parent: "torch", Allocated: 512 * mib, Reserved: 512 * mib},
				},
				AllocatedBytes: 1 * gib, ReservedBytes: 1536 * mib, LastPush: now.Add(-2 * time.Second),
				InFlight: 3, HasInFlight: true, // its client counts its requests
				HasUnattributed: true, UnattributedBytes: 512 * mib,
				HasTrend: true, Trend: trend.Result{Verdict: verdict, Growth: []trend.Growth{
					{Series: "allocated", Window: "short", BytesPerSecond: 204800, Fit: 0.99, Valid: true},
					{Series: "allocated", Window: "long", BytesPerSecond: 204800, Fit: 0.98, Valid: true},
					// Not enough history yet: must not be exported.
					{Series: "reserved", Window: "long", BytesPerSecond: 999, Fit: 0.5, Valid: false},
				}},
			},
			{PID: 5151, UUID: GPU, GPU: "0", HasNVML: true, UsedBytes: 1 * gib},
		},
		Senders: []push.Sender{{ConnID: 1, PID: 4242, LastSeen: now.Add(-2 * time.Second), Msg: push.Message{ClientDropped: 4}}},
	}
}

// PushStats is a push server's counters with a few rejects.
func PushStats() push.Stats {
	return push.Stats{Connections: 1, ConnectionsAccepted: 3, MessagesAccepted: 100, BytesReceived: 50000,
		Rejected: map[string]uint64{"invalid_json": 2}, Disconnects: map[string]uint64{}}
}
