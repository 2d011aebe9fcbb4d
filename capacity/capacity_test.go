package capacity

import (
	"reflect"
	"testing"

	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/leak/trend"
	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/procinfo"
)

const gib = 1 << 30

func nvmlProc(pid uint32, uuid string, used uint64, service, comm, cmdline string) join.Process {
	p := join.Process{PID: pid, UUID: uuid, GPU: "0", HasNVML: true, UsedBytes: used}
	if comm != "" || cmdline != "" {
		p.HasFacts, p.Facts = true, procinfo.Facts{PID: pid, Comm: comm, Cmdline: cmdline}
	}
	if service != "" {
		p.Pushed = true
		p.Runtimes = []join.Runtime{{Name: "torch", Labels: map[string]string{"service": service}}}
	}
	return p
}

func TestDuplicates(t *testing.T) {
	const a, b = "GPU-a", "GPU-b"
	tests := []struct {
		name  string
		procs []join.Process
		want  []DuplicateGroup
	}{
		{"none", nil, nil},
		{"single worker is not a duplicate", []join.Process{nvmlProc(1, a, 18*gib, "ranker", "python", "x")}, nil},
		{
			"three workers by service label, one outlier dropped",
			[]join.Process{
				nvmlProc(30, a, 18*gib, "ranker", "python", "a"),
				nvmlProc(10, a, 18*gib+100<<20, "ranker", "python", "b"),
				nvmlProc(20, a, 17*gib, "ranker", "python", "c"),
				nvmlProc(40, a, 2*gib, "ranker", "python", "d"),
			},
			[]DuplicateGroup{{UUID: a, GPU: "0", Service: "ranker", Basis: BasisServiceLabel,
				Workers:     []Worker{{10, 18*gib + 100<<20}, {20, 17 * gib}, {30, 18 * gib}},
				MedianBytes: 17 * gib, TotalBytes: 53*gib + 100<<20}},
		},
		{
			"same service on two GPUs is two candidates, each too small",
			[]join.Process{nvmlProc(1, a, gib, "s", "", ""), nvmlProc(2, b, gib, "s", "", "")},
			nil,
		},
		{
			"cmdline fallback without labels; different cmdlines do not group",
			[]join.Process{
				nvmlProc(5, b, 4*gib, "", "python3", "python3 serve.py --port 1"),
				nvmlProc(6, b, 4*gib, "", "python3", "python3 serve.py --port 1"),
				nvmlProc(7, b, 4*gib, "", "python3", "python3 other.py"),
			},
			[]DuplicateGroup{{UUID: b, GPU: "0", Service: "python3", Basis: BasisCmdline,
				Workers: []Worker{{5, 4 * gib}, {6, 4 * gib}}, MedianBytes: 4 * gib, TotalBytes: 8 * gib}},
		},
		{
			"dissimilar footprints are not duplicates",
			[]join.Process{nvmlProc(1, a, 10*gib, "s", "", ""), nvmlProc(2, a, 20*gib, "s", "", "")},
			nil,
		},
		{
			"no facts and no label: cannot group",
			[]join.Process{nvmlProc(1, a, gib, "", "", ""), nvmlProc(2, a, gib, "", "", "")},
			nil,
		},
		{
			"pushed-only processes use reserved",
			[]join.Process{
				{PID: 1, UUID: a, Pushed: true, ReservedBytes: 3 * gib, Runtimes: []join.Runtime{{Labels: map[string]string{"service": "s"}}}},
				{PID: 2, UUID: a, Pushed: true, ReservedBytes: 3 * gib, Runtimes: []join.Runtime{{Labels: map[string]string{"service": "s"}}}},
			},
			[]DuplicateGroup{{UUID: a, Service: "s", Basis: BasisServiceLabel,
				Workers: []Worker{{1, 3 * gib}, {2, 3 * gib}}, MedianBytes: 3 * gib, TotalBytes: 6 * gib}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Duplicates(&join.View{Processes: tc.procs})
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Duplicates:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if Duplicates(nil) != nil {
		t.Error("nil view must give nil")
	}
}

func TestDuplicatesOrderIsDeterministic(t *testing.T) {
	var procs []join.Process
	for i, svc := range []string{"z", "a", "m"} {
		for j := range 2 {
			procs = append(procs, nvmlProc(uint32(10*i+j+1), "GPU-"+svc, gib, svc, "", ""))
			procs = append(procs, nvmlProc(uint32(100*i+j+1), "GPU-a", gib, svc, "", ""))
		}
	}
	first := Duplicates(&join.View{Processes: procs})
	for range 20 {
		if got := Duplicates(&join.View{Processes: procs}); !reflect.DeepEqual(got, first) {
			t.Fatal("order changed between calls")
		}
	}
	var keys []string
	for _, g := range first {
		keys = append(keys, g.UUID+"/"+g.Service)
	}
	want := []string{"GPU-a/a", "GPU-a/m", "GPU-a/z", "GPU-m/m", "GPU-z/z"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("order %v, want %v", keys, want)
	}
}

func TestHeadroomPerGPU(t *testing.T) {
	gpu := func(idx int, uuid string, free uint64) join.GPU {
		return join.GPU{GPU: nvml.GPU{Index: idx, UUID: uuid, TotalBytes: 80 * gib, FreeBytes: free}}
	}
	tests := []struct {
		name   string
		gpus   []join.GPU
		procs  []join.Process
		margin uint64
		want   []Headroom
	}{
		{"no process, no headroom", []join.GPU{gpu(0, "GPU-a", 80*gib)}, nil, 2 * gib, nil},
		{
			"floor of (free-margin)/largest",
			[]join.GPU{gpu(0, "GPU-a", 40*gib), gpu(1, "GPU-b", 10*gib)},
			[]join.Process{nvmlProc(1, "GPU-a", 18*gib, "", "", ""), nvmlProc(2, "GPU-a", 5*gib, "", "", ""), nvmlProc(3, "GPU-b", 30*gib, "", "", "")},
			2 * gib,
			[]Headroom{
				{UUID: "GPU-a", GPU: "0", LargestWorkerBytes: 18 * gib, LargestPID: 1, FreeBytes: 40 * gib, MarginBytes: 2 * gib, Workers: 2, WorkersIfReclaimed: 2},
				{UUID: "GPU-b", GPU: "1", LargestWorkerBytes: 30 * gib, LargestPID: 3, FreeBytes: 10 * gib, MarginBytes: 2 * gib, Workers: 0},
			},
		},
		{
			"free below margin is zero, not negative",
			[]join.GPU{gpu(0, "GPU-a", gib)},
			[]join.Process{nvmlProc(1, "GPU-a", gib, "", "", "")},
			2 * gib,
			[]Headroom{{UUID: "GPU-a", GPU: "0", LargestWorkerBytes: gib, LargestPID: 1, FreeBytes: gib, MarginBytes: 2 * gib}},
		},
		{
			"zero-byte processes are ignored",
			[]join.GPU{gpu(0, "GPU-a", gib)},
			[]join.Process{nvmlProc(1, "GPU-a", 0, "", "", "")},
			0, nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := HeadroomPerGPU(&join.View{GPUs: tc.gpus, Processes: tc.procs}, tc.margin)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestKeyGrowth(t *testing.T) {
	g := func(series, window string, rate float64, valid bool) trend.Growth {
		return trend.Growth{Series: series, Window: window, BytesPerSecond: rate, Fit: 0.9, Valid: valid}
	}
	all := []trend.Growth{
		g(trend.SeriesAllocated, trend.WindowShort, 1, true), g(trend.SeriesAllocated, trend.WindowLong, 2, true),
		g(trend.SeriesReserved, trend.WindowShort, 3, false), g(trend.SeriesReserved, trend.WindowLong, 4, true),
		g(trend.SeriesUsed, trend.WindowShort, 5, true), g(trend.SeriesUsed, trend.WindowLong, 6, true),
		g(trend.SeriesUnattributed, trend.WindowShort, 7, true),
	}
	tests := []struct {
		v      trend.Verdict
		growth []trend.Growth
		want   float64
		ok     bool
	}{
		{trend.Leak, all, 1, true},
		{trend.Leak, all[4:6], 5, true},   // NVML-only: used
		{trend.CacheGrowth, all, 4, true}, // short invalid: long
		{trend.Leak, []trend.Growth{g(trend.SeriesAllocated, trend.WindowShort, 1, true),
			{Series: trend.SeriesAllocated, Window: trend.WindowLong, BytesPerSecond: 9, Fit: 0.99, Valid: true}}, 9, true}, // better fit wins
		{trend.UnattributedGrowth, all, 7, true},
		{trend.Steady, all, 5, true}, // steepest of allocated and used
		{trend.WarmingUp, nil, 0, false},
	}
	for _, tc := range tests {
		got, ok := KeyGrowth(trend.Result{Verdict: tc.v, Growth: tc.growth})
		if ok != tc.ok || got.BytesPerSecond != tc.want {
			t.Errorf("%s: got %v %v, want %v %v", tc.v, got.BytesPerSecond, ok, tc.want, tc.ok)
		}
	}
}
