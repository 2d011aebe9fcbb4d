//go:build cgo

package nvml_test

import (
	"slices"
	"testing"

	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/nvml/nvmltest"
)

// TestCadences checks that each NVML call is made at its cadence (defaults: memory and
// the compute list every 1 s poll, graphics and MPS lists every 5 s, BAR1 every 15 s,
// MIG mode every 60 s and when the GPU set changes) and that what was read is kept in
// between.
func TestCadences(t *testing.T) {
	specs := nvmltest.H200s(2, 0)
	specs[0].Procs = []nvmltest.ProcSpec{
		{PID: 10, Used: 100 * MiB},
		{PID: 11, Used: 200 * MiB, Lists: nvmltest.Graphics},
		{PID: 12, Used: 300 * MiB, Lists: nvmltest.MPS},
		{PID: 13, Used: 400 * MiB, Lists: nvmltest.Compute | nvmltest.Graphics},
	}
	srv := nvmltest.NewServer(specs...)
	uuid := srv.GPUs()[0].UUID
	h := newHarness(t, srv)
	h.up()
	if nvml.DefaultGraphicsMPSInterval.Seconds() != 5 || nvml.DefaultBAR1Interval.Seconds() != 15 ||
		nvml.DefaultMIGModeInterval.Seconds() != 60 {
		t.Fatal("defaults changed: update this test's schedule")
	}
	counts := func() map[string]int {
		c := srv.CallCounts()
		srv.ResetCalls()
		return c
	}
	want1 := map[string]int{ // per GPU, on the first poll
		"GetMemoryInfo_v2": 1, "GetComputeRunningProcesses": 1, "GetGraphicsRunningProcesses": 1,
		"GetMPSComputeRunningProcesses": 1, "GetBAR1MemoryInfo": 1, "GetMigMode": 1,
	}
	got := counts()
	for call, n := range want1 {
		if got[call] != 2*n {
			t.Errorf("first poll: %s called %d times, want %d", call, got[call], 2*n)
		}
	}

	// Between reads, the served figures change; snapshots keep the last ones read.
	srv.Update(func(g []nvmltest.GPUSpec) []nvmltest.GPUSpec {
		g[0].BAR1Used = 64 * MiB
		g[0].Procs[0].Used = 150 * MiB                                                                   // compute: seen at once
		g[0].Procs[1].Used = 250 * MiB                                                                   // graphics only: seen at 5 s
		g[0].Procs[3].Used = 450 * MiB                                                                   // compute+graphics: compute's figure at once
		g[0].Procs = append(g[0].Procs, nvmltest.ProcSpec{PID: 14, Used: MiB, Lists: nvmltest.Graphics}) // new at 5 s
		return g
	})
	procs := func(s nvml.Snapshot) map[uint32]nvml.Process {
		m := map[uint32]nvml.Process{}
		for _, p := range procsOf(s, uuid) {
			m[p.PID] = p
		}
		return m
	}
	for sec := 1; sec <= 61; sec++ {
		s := h.tick()
		c := counts()
		wantCalls := map[string]int{"GetMemoryInfo_v2": 2, "GetComputeRunningProcesses": 2}
		if sec%5 == 0 {
			wantCalls["GetGraphicsRunningProcesses"] = 2
			wantCalls["GetMPSComputeRunningProcesses"] = 2
		}
		if sec%15 == 0 {
			wantCalls["GetBAR1MemoryInfo"] = 2
		}
		if sec%60 == 0 {
			wantCalls["GetMigMode"] = 2
		}
		for call := range want1 {
			if c[call] != wantCalls[call] {
				t.Errorf("poll at %ds: %s called %d times, want %d", sec, call, c[call], wantCalls[call])
			}
		}
		g, _ := findGPU(s, uuid)
		wantBAR1 := uint64(8 * MiB)
		if sec >= 15 {
			wantBAR1 = 64 * MiB
		}
		if !g.BAR1Valid || g.BAR1UsedBytes != wantBAR1 {
			t.Errorf("poll at %ds: BAR1 valid=%v used=%d MiB, want %d MiB", sec, g.BAR1Valid, g.BAR1UsedBytes/MiB, wantBAR1/MiB)
		}
		if g.MIGEnabled {
			t.Errorf("poll at %ds: MIG enabled", sec)
		}
		ps := procs(s)
		if p := ps[10]; p.UsedBytes != 150*MiB {
			t.Errorf("poll at %ds: compute PID 10 = %+v, want this poll's 150 MiB", sec, p)
		}
		if p := ps[13]; p.UsedBytes != 450*MiB || !slices.Equal(p.Kinds, []string{"compute", "graphics"}) {
			t.Errorf("poll at %ds: PID 13 = %+v, want compute's 450 MiB and both kinds", sec, p)
		}
		if p := ps[12]; p.UsedBytes != 300*MiB || !slices.Equal(p.Kinds, []string{"mps"}) {
			t.Errorf("poll at %ds: MPS PID 12 = %+v, kept between reads", sec, p)
		}
		p11, p14 := ps[11], ps[14]
		_, has14 := ps[14]
		if sec < 5 {
			if p11.UsedBytes != 200*MiB || has14 {
				t.Errorf("poll at %ds: graphics list not kept: 11=%+v 14 present=%v", sec, p11, has14)
			}
		} else if p11.UsedBytes != 250*MiB || p14.UsedBytes != MiB {
			t.Errorf("poll at %ds: graphics list not re-read: 11=%+v 14=%+v", sec, p11, p14)
		}
	}

	// A GPU appearing rebuilds the device set: every GPU's MIG mode is read again.
	srv.Update(func(g []nvmltest.GPUSpec) []nvmltest.GPUSpec { return append(g, nvmltest.H200s(1, 0)...) })
	counts()
	if s := h.tick(); len(s.GPUs) != 3 {
		t.Fatalf("got %d GPUs, want 3", len(s.GPUs))
	}
	if c := counts(); c["GetMigMode"] != 3 || c["GetBAR1MemoryInfo"] != 3 {
		t.Errorf("after a GPU appeared: GetMigMode %d, BAR1 %d calls, want 3 each", c["GetMigMode"], c["GetBAR1MemoryInfo"])
	}
}

// A steady poll reads each process list with one driver call, however many processes it
// holds (go-nvml's wrappers make two for more than one, and allocate both buffers).
func TestPollOneListCallPerPoll(t *testing.T) {
	srv := nvmltest.NewServer(nvmltest.H200s(1, 40)...)
	h := newHarness(t, srv)
	if s := h.up(); len(s.Processes) != 40 {
		t.Fatalf("first poll: %d processes, want 40", len(s.Processes))
	}
	if c := srv.Calls("GetComputeRunningProcesses"); c != 2 {
		t.Fatalf("first poll: %d compute list calls, want 2 (sizing the buffer)", c)
	}
	for sec := 1; sec <= 3; sec++ {
		srv.ResetCalls()
		s := h.tick()
		if c := srv.Calls("GetComputeRunningProcesses"); c != 1 || len(s.Processes) != 40 {
			t.Fatalf("poll %d: %d compute list calls, %d processes; want 1 and 40", sec, c, len(s.Processes))
		}
	}
}
