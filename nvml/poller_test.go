//go:build cgo

package nvml_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/vram-exporter/vram_exporter/clock"
	"github.com/vram-exporter/vram_exporter/nvml"
	"github.com/vram-exporter/vram_exporter/nvml/nvmltest"
)

const MiB = nvmltest.MiB

var epoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// harness runs a Poller on a fake clock against a fake NVML.
type harness struct {
	t      testing.TB
	srv    *nvmltest.Server
	clk    *clock.Fake
	p      *nvml.Poller
	logs   *observer.ObservedLogs
	cancel context.CancelFunc
	done   chan struct{}
}

func newHarness(t testing.TB, srv *nvmltest.Server) *harness {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	clk := clock.NewFake(epoch)
	h := &harness{
		t: t, srv: srv, clk: clk, logs: logs,
		p: nvml.NewPoller(srv, nvml.Options{
			Interval: time.Second, InitBackoffMin: 5 * time.Second, InitBackoffMax: 40 * time.Second, Clock: clk,
		}, zap.New(core)),
		done: make(chan struct{}),
	}
	t.Cleanup(h.stop)
	return h
}

func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		defer close(h.done)
		h.p.Run(ctx)
	}()
}

// waitParked blocks until Run has registered its next timer or ticker.
func (h *harness) waitParked() {
	h.t.Helper()
	select {
	case <-h.clk.Registered():
	case <-h.done:
		h.t.Fatal("Run returned early")
	case <-time.After(10 * time.Second): // a hang guard, not a timing assumption
		h.t.Fatal("Run never waited on the clock")
	}
}

// tick advances one poll interval and waits for the poll to finish. The ticker keeps
// its registration, so completion is observed through Latest's time.
func (h *harness) tick() nvml.Snapshot {
	h.t.Helper()
	h.clk.Advance(time.Second)
	want := h.clk.Now()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if s := h.p.Latest(); !s.Time.Before(want) {
			return s
		}
		time.Sleep(time.Millisecond) // polling for completion, not for timing
	}
	h.t.Fatal("poll after tick never published")
	return nvml.Snapshot{}
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	select {
	case <-h.done:
	case <-time.After(10 * time.Second):
		h.t.Fatal("Run did not return after cancel")
	}
	h.cancel = nil
}

// up starts Run and waits for the first poll.
func (h *harness) up() nvml.Snapshot {
	h.t.Helper()
	h.start()
	h.waitParked()
	s := h.p.Latest()
	if !s.Up {
		h.t.Fatalf("not up after first poll: %+v", s)
	}
	return s
}

func findGPU(s nvml.Snapshot, uuid string) (nvml.GPU, bool) {
	for _, g := range s.GPUs {
		if g.UUID == uuid {
			return g, true
		}
	}
	return nvml.GPU{}, false
}

func procsOf(s nvml.Snapshot, uuid string) []nvml.Process {
	var out []nvml.Process
	for _, p := range s.Processes {
		if p.UUID == uuid {
			out = append(out, p)
		}
	}
	return out
}

func TestPollNormal(t *testing.T) {
	for _, n := range []int{2, 8} {
		t.Run(strings.Repeat("gpu", 1)+string(rune('0'+n)), func(t *testing.T) {
			specs := nvmltest.H200s(n, 10)
			// PID 42 is in all three lists with different sizes: one process, the max.
			specs[1].Procs = append(specs[1].Procs,
				nvmltest.ProcSpec{PID: 42, Used: 100 * MiB, Lists: nvmltest.Compute},
				nvmltest.ProcSpec{PID: 42, Used: 300 * MiB, Lists: nvmltest.Graphics},
				nvmltest.ProcSpec{PID: 42, Used: 200 * MiB, Lists: nvmltest.MPS},
			)
			srv := nvmltest.NewServer(specs...)
			h := newHarness(t, srv)
			s := h.up()

			served := srv.GPUs()
			if len(s.GPUs) != n {
				t.Fatalf("got %d GPUs, want %d", len(s.GPUs), n)
			}
			if s.DriverVersion != "570.124.06" || s.NVMLVersion != "12.570.124.06" {
				t.Errorf("versions = %q %q", s.DriverVersion, s.NVMLVersion)
			}
			if !s.Time.Equal(epoch) {
				t.Errorf("Time = %v, want the clock's %v", s.Time, epoch)
			}
			if len(s.Errors) != 0 {
				t.Errorf("unexpected errors: %v", s.Errors)
			}
			for i, g := range s.GPUs {
				want := served[i]
				if g.Index != i || g.UUID != want.UUID || g.Name != "NVIDIA H200" || g.PCIBusID != want.PCIBusID {
					t.Errorf("GPU %d identity = %+v", i, g)
				}
				if g.MemoryAPI != nvml.MemoryAPIv2 || g.TotalBytes != 143771*MiB || g.UsedBytes != want.Used ||
					g.DriverReservedBytes != 577*MiB || g.FreeBytes != want.Total-want.Used-want.DriverReserved {
					t.Errorf("GPU %d memory = %+v", i, g)
				}
				if !g.BAR1Valid || g.BAR1TotalBytes != 256<<30 || g.BAR1UsedBytes != 8*MiB {
					t.Errorf("GPU %d BAR1 = %+v", i, g)
				}
				if g.MIGEnabled || g.ParentUUID != "" || g.GPUInstanceID != -1 || g.ComputeInstanceID != -1 {
					t.Errorf("GPU %d MIG fields = %+v", i, g)
				}
			}
			if !slices.IsSortedFunc(s.Processes, func(a, b nvml.Process) int {
				if c := strings.Compare(a.UUID, b.UUID); c != 0 {
					return c
				}
				return int(a.PID) - int(b.PID)
			}) {
				t.Error("processes not sorted by UUID then PID")
			}
			if got, want := len(s.Processes), n*10+1; got != want {
				t.Errorf("got %d processes, want %d (duplicates merged)", got, want)
			}
			var merged, both, mps int
			for _, p := range s.Processes {
				switch {
				case p.PID == 42:
					merged++
					if p.UUID != served[1].UUID || p.UsedBytes != 300*MiB ||
						!slices.Equal(p.Kinds, []string{"compute", "graphics", "mps"}) {
						t.Errorf("PID 42 = %+v", p)
					}
				case slices.Equal(p.Kinds, []string{"compute", "graphics"}):
					both++
				case slices.Equal(p.Kinds, []string{"mps"}):
					mps++
				}
			}
			if merged != 1 || both == 0 || mps == 0 {
				t.Errorf("merged=%d compute+graphics=%d mps=%d", merged, both, mps)
			}

			// Readers race with polls; -race checks Latest is lock-free and safe.
			stop := make(chan struct{})
			readerDone := make(chan struct{})
			go func() {
				defer close(readerDone)
				for {
					select {
					case <-stop:
						return
					default:
						_ = h.p.Latest().GPUs
					}
				}
			}()
			for range 3 {
				if s := h.tick(); !s.Up || len(s.GPUs) != n {
					t.Errorf("tick: %+v", s)
				}
			}
			close(stop)
			<-readerDone
		})
	}
}

func TestMIG(t *testing.T) {
	specs := nvmltest.H200s(2, 2)
	specs[0].MIG = []nvmltest.MIGSpec{
		{GPUInstanceID: 1, ComputeInstanceID: 0, Total: 16 * 1024 * MiB, Used: 3 * 1024 * MiB,
			Procs: []nvmltest.ProcSpec{{PID: 7001, Used: 2 * 1024 * MiB}, {PID: 7002, Used: 512 * MiB, Lists: nvmltest.Graphics | nvmltest.Compute}}},
		{GPUInstanceID: 2, ComputeInstanceID: 0, Total: 16 * 1024 * MiB, Used: 1024 * MiB,
			Procs: []nvmltest.ProcSpec{{PID: 7003, Used: 700 * MiB}}},
	}
	srv := nvmltest.NewServer(specs...)
	h := newHarness(t, srv)
	s := h.up()
	served := srv.GPUs()

	if len(s.GPUs) != 4 {
		t.Fatalf("got %d GPU entries, want 2 physical + 2 MIG: %+v", len(s.GPUs), s.GPUs)
	}
	parent, _ := findGPU(s, served[0].UUID)
	if !parent.MIGEnabled || parent.MemoryAPI != nvml.MemoryAPIv2 {
		t.Errorf("parent = %+v", parent)
	}
	if other, _ := findGPU(s, served[1].UUID); other.MIGEnabled {
		t.Errorf("GPU 1 is not in MIG mode: %+v", other)
	}
	for j, m := range served[0].MIG {
		g, ok := findGPU(s, m.UUID)
		if !ok {
			t.Fatalf("MIG device %s missing", m.UUID)
		}
		if g.Index != 0 || g.ParentUUID != served[0].UUID || g.GPUInstanceID != m.GPUInstanceID ||
			g.ComputeInstanceID != m.ComputeInstanceID || g.PCIBusID != served[0].PCIBusID {
			t.Errorf("MIG %d identity = %+v", j, g)
		}
		if g.MemoryAPI != nvml.MemoryAPIv1 || g.TotalBytes != m.Total || g.UsedBytes != m.Used ||
			g.FreeBytes != m.Total-m.Used || g.BAR1Valid {
			t.Errorf("MIG %d memory = %+v", j, g)
		}
	}
	// Order: index, then UUID ("GPU-…" before "MIG-…").
	if s.GPUs[0].UUID != served[0].UUID || s.GPUs[3].UUID != served[1].UUID {
		t.Errorf("GPU order: %v", []string{s.GPUs[0].UUID, s.GPUs[1].UUID, s.GPUs[2].UUID, s.GPUs[3].UUID})
	}
	if got := procsOf(s, served[0].UUID); len(got) != 0 {
		t.Errorf("MIG parent carries processes: %+v", got)
	}
	mig0 := procsOf(s, served[0].MIG[0].UUID)
	if len(mig0) != 2 || mig0[0].PID != 7001 || mig0[1].PID != 7002 || !slices.Equal(mig0[1].Kinds, []string{"compute", "graphics"}) {
		t.Errorf("MIG 0 processes = %+v", mig0)
	}
	if mig1 := procsOf(s, served[0].MIG[1].UUID); len(mig1) != 1 || mig1[0].PID != 7003 || mig1[0].UsedBytes != 700*MiB {
		t.Errorf("MIG 1 processes = %+v", mig1)
	}
	if len(procsOf(s, served[1].UUID)) != 2 {
		t.Errorf("GPU 1 processes = %+v", procsOf(s, served[1].UUID))
	}
	// Five empty slots answered NOT_FOUND: that is normal, not an error.
	if len(s.Errors) != 0 {
		t.Errorf("unexpected errors: %v", s.Errors)
	}
}

func TestMissingSymbols(t *testing.T) {
	srv := nvmltest.NewServer(nvmltest.H200s(2, 7)...)
	// An older driver: no memory v2, no MPS list, no MIG. Calling any of them would
	// panic in the fake (abort the process with the real library).
	srv.RemoveSymbols("nvmlDeviceGetMemoryInfo_v2",
		"nvmlDeviceGetMPSComputeRunningProcesses", "nvmlDeviceGetMPSComputeRunningProcesses_v2",
		"nvmlDeviceGetMPSComputeRunningProcesses_v3", "nvmlDeviceGetMigMode")
	h := newHarness(t, srv)
	s := h.up()
	s = h.tick()
	served := srv.GPUs()
	for i, g := range s.GPUs {
		if g.MemoryAPI != nvml.MemoryAPIv1 || g.DriverReservedBytes != 0 ||
			g.UsedBytes != served[i].Used+served[i].DriverReserved {
			t.Errorf("GPU %d = %+v, want v1 figures", i, g)
		}
	}
	for _, p := range s.Processes {
		if slices.Contains(p.Kinds, "mps") {
			t.Errorf("MPS process without the MPS symbol: %+v", p)
		}
	}
	if len(s.Processes) != 2*6 { // 7 per GPU, the 7th (j=6) is MPS-only
		t.Errorf("got %d processes, want 12", len(s.Processes))
	}
	for _, call := range []string{"GetMemoryInfo_v2", "GetMPSComputeRunningProcesses", "GetMigMode"} {
		if n := srv.Calls(call); n != 0 {
			t.Errorf("%s called %d times", call, n)
		}
	}
	// Looked up once per Init, not per poll.
	if n := srv.Calls("LookupSymbol"); n > 10 {
		t.Errorf("LookupSymbol called %d times after 2 polls", n)
	}
}

func TestMemoryV2NotSupportedFallsBack(t *testing.T) {
	srv := nvmltest.NewServer(nvmltest.H200s(2, 1)...)
	uuid := srv.GPUs()[0].UUID
	srv.Fail("GetMemoryInfo_v2", uuid, gonvml.ERROR_NOT_SUPPORTED)
	h := newHarness(t, srv)
	h.up()
	h.tick()
	s := h.tick()
	if g, _ := findGPU(s, uuid); g.MemoryAPI != nvml.MemoryAPIv1 {
		t.Errorf("GPU 0 = %+v, want v1", g)
	}
	if g := s.GPUs[1]; g.MemoryAPI != nvml.MemoryAPIv2 {
		t.Errorf("GPU 1 = %+v, want v2", g)
	}
	// NOT_SUPPORTED is a property of the GPU: counted once, not per poll.
	if n := s.Errors[nvml.ErrorKey{Call: "GetMemoryInfo_v2", Error: "not_supported"}]; n != 1 {
		t.Errorf("not_supported counted %d times, want 1: %v", n, s.Errors)
	}
}

func TestPerCallErrors(t *testing.T) {
	tests := []struct {
		name      string
		call      string
		ret       gonvml.Return
		key       nvml.ErrorKey
		gpuGone   bool // GPU 1 left out with its processes
		check     func(t *testing.T, s nvml.Snapshot, uuid string)
		perPoll   bool // counted on every poll (not a remembered NOT_SUPPORTED)
		gpusCount int
	}{
		{name: "memory v2 gpu lost", call: "GetMemoryInfo_v2", ret: gonvml.ERROR_GPU_IS_LOST,
			key: nvml.ErrorKey{Call: "GetMemoryInfo_v2", Error: "gpu_is_lost"}, gpuGone: true, perPoll: true},
		{name: "uuid unreadable", call: "GetUUID", ret: gonvml.ERROR_UNKNOWN,
			key: nvml.ErrorKey{Call: "GetUUID", Error: "unknown"}, gpuGone: true, perPoll: true},
		{name: "unmapped return code", call: "GetMemoryInfo_v2", ret: gonvml.Return(777),
			key: nvml.ErrorKey{Call: "GetMemoryInfo_v2", Error: "other"}, gpuGone: true, perPoll: true},
		{name: "bar1 no permission", call: "GetBAR1MemoryInfo", ret: gonvml.ERROR_NO_PERMISSION,
			key: nvml.ErrorKey{Call: "GetBAR1MemoryInfo", Error: "no_permission"}, perPoll: true,
			check: func(t *testing.T, s nvml.Snapshot, uuid string) {
				if g, ok := findGPU(s, uuid); !ok || g.BAR1Valid || g.UsedBytes == 0 {
					t.Errorf("GPU = %+v, want memory but no BAR1", g)
				}
			}},
		{name: "graphics list fails", call: "GetGraphicsRunningProcesses", ret: gonvml.ERROR_NO_PERMISSION,
			key: nvml.ErrorKey{Call: "GetGraphicsRunningProcesses", Error: "no_permission"}, perPoll: true,
			check: func(t *testing.T, s nvml.Snapshot, uuid string) {
				ps := procsOf(s, uuid)
				if len(ps) != 10 {
					t.Errorf("got %d processes, want all 10 from the compute and MPS lists", len(ps))
				}
				for _, p := range ps {
					if slices.Contains(p.Kinds, "graphics") {
						t.Errorf("graphics kind from a failed list: %+v", p)
					}
				}
			}},
		{name: "compute list not supported", call: "GetComputeRunningProcesses", ret: gonvml.ERROR_NOT_SUPPORTED,
			key: nvml.ErrorKey{Call: "GetComputeRunningProcesses", Error: "not_supported"},
			check: func(t *testing.T, s nvml.Snapshot, uuid string) {
				// Left: the compute+graphics duplicates (via graphics) and MPS clients.
				if ps := procsOf(s, uuid); len(ps) != 3 {
					t.Errorf("got %d processes, want 3", len(ps))
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := nvmltest.NewServer(nvmltest.H200s(3, 10)...)
			served := srv.GPUs()
			srv.Fail(tc.call, served[1].UUID, tc.ret)
			h := newHarness(t, srv)
			h.up()
			s := h.tick()

			want := uint64(1)
			if tc.perPoll {
				want = 2
			}
			if got := s.Errors[tc.key]; got != want {
				t.Errorf("Errors[%v] = %d, want %d (all: %v)", tc.key, got, want, s.Errors)
			}
			for _, i := range []int{0, 2} {
				if g, ok := findGPU(s, served[i].UUID); !ok || g.UsedBytes == 0 || len(procsOf(s, served[i].UUID)) != 10 {
					t.Errorf("healthy GPU %d missing or incomplete: %+v", i, g)
				}
			}
			_, present := findGPU(s, served[1].UUID)
			if tc.gpuGone {
				if present || len(procsOf(s, served[1].UUID)) != 0 {
					t.Errorf("GPU 1 should be left out with its processes")
				}
			} else if !present {
				t.Errorf("GPU 1 should still be exported")
			}
			if tc.check != nil {
				tc.check(t, s, served[1].UUID)
			}
			// Errors is a copy: changing it must not change the poller's counters.
			s.Errors[tc.key] = 1000
			if tc.perPoll {
				want++
			}
			if got := h.tick().Errors[tc.key]; got != want {
				t.Errorf("after a third poll Errors[%v] = %d, want %d: snapshot aliases the counters?", tc.key, got, want)
			}
		})
	}
}

func TestUsedMemoryNotAvailable(t *testing.T) {
	specs := nvmltest.H200s(1, 0)
	specs[0].Procs = []nvmltest.ProcSpec{
		{PID: 10, Used: nvmltest.NotAvailable},
		{PID: 11, Used: nvmltest.NotAvailable, Lists: nvmltest.Compute},
		{PID: 11, Used: 64 * MiB, Lists: nvmltest.Graphics},
	}
	srv := nvmltest.NewServer(specs...)
	h := newHarness(t, srv)
	s := h.up()
	if len(s.Processes) != 2 {
		t.Fatalf("processes = %+v", s.Processes)
	}
	if p := s.Processes[0]; p.PID != 10 || p.UsedBytes != 0 {
		t.Errorf("PID 10 = %+v, want 0 bytes", p)
	}
	if p := s.Processes[1]; p.PID != 11 || p.UsedBytes != 64*MiB {
		t.Errorf("PID 11 = %+v, want the known 64 MiB", p)
	}
	key := nvml.ErrorKey{Call: "GetComputeRunningProcesses", Error: nvml.ErrValueNotAvailable}
	if n := s.Errors[key]; n != 2 {
		t.Errorf("Errors[%v] = %d, want 2", key, n)
	}
}

func TestNVMLAbsent(t *testing.T) {
	srv := nvmltest.NewServer(nvmltest.H200s(2, 3)...)
	srv.Fail("Init", "", gonvml.ERROR_LIBRARY_NOT_FOUND)
	h := newHarness(t, srv)
	h.start()

	// 5s min, 40s max: the waits double and cap.
	schedule := []time.Duration{5, 10, 20, 40, 40, 40}
	for i, d := range schedule {
		h.waitParked()
		want := h.clk.Now().Add(d * time.Second)
		if got := h.clk.Pending(); len(got) != 1 || !got[0].Equal(want) {
			t.Fatalf("retry %d: pending %v, want one deadline at %v", i, got, want)
		}
		s := h.p.Latest()
		if s.Up || len(s.GPUs) != 0 {
			t.Fatalf("retry %d: snapshot up: %+v", i, s)
		}
		if n := s.Errors[nvml.ErrorKey{Call: "Init", Error: "library_not_found"}]; n != uint64(i+1) {
			t.Errorf("retry %d: Init failures counted %d", i, n)
		}
		h.clk.Advance(d * time.Second)
	}
	h.waitParked() // the 7th failure is parked too

	if calls := srv.CallCounts(); len(calls) != 1 || calls["Init"] != len(schedule)+1 {
		t.Errorf("calls after failed Init = %v, want only Init", calls)
	}
	warns := h.logs.FilterLevelExact(zapcore.WarnLevel).All()
	if len(warns) != 1 {
		t.Fatalf("got %d warn lines, want 1: %v", len(warns), warns)
	}
	const want = "NVML is not available: libnvidia-ml.so.1 not found; GPU metrics are off (vram_nvml_up 0) " +
		"and pushed allocator stats are still served. Install the NVIDIA driver, or in a container run with the " +
		"NVIDIA container toolkit (--gpus all / runtimeClassName: nvidia). Retrying in the background."
	if warns[0].Message != want {
		t.Errorf("warn line:\n got %q\nwant %q", warns[0].Message, want)
	}
	if n := h.logs.FilterLevelExact(zapcore.DebugLevel).Len(); n != len(schedule) {
		t.Errorf("got %d debug lines for the repeats, want %d", n, len(schedule))
	}

	// The driver appears: the next retry brings NVML up.
	srv.ClearFailures()
	h.clk.Advance(40 * time.Second)
	h.waitParked()
	if s := h.p.Latest(); !s.Up || len(s.GPUs) != 2 {
		t.Fatalf("not up after the driver appeared: %+v", s)
	}
	infos := h.logs.FilterMessage("NVML is up").All()
	if len(infos) != 1 || infos[0].Level != zapcore.InfoLevel {
		t.Fatalf("info lines = %v", infos)
	}
	if f := infos[0].ContextMap(); f["driver_version"] != "570.124.06" || f["gpus"] != int64(2) {
		t.Errorf("info fields = %v", f)
	}
	h.stop()
	if n := srv.Calls("Shutdown"); n != 1 {
		t.Errorf("Shutdown called %d times, want 1", n)
	}
}

func TestDriverGoneReinitialises(t *testing.T) {
	srv := nvmltest.NewServer(nvmltest.H200s(2, 3)...)
	h := newHarness(t, srv)
	h.up()

	srv.Fail("DeviceGetCount", "", gonvml.ERROR_DRIVER_NOT_LOADED)
	h.clk.Advance(time.Second) // the tick finds the driver gone
	h.waitParked()             // Run shut down and waits to re-init
	if s := h.p.Latest(); s.Up {
		t.Fatalf("still up after the driver went: %+v", s)
	}
	if n := srv.Calls("Shutdown"); n != 1 {
		t.Errorf("Shutdown called %d times, want 1", n)
	}
	if srv.Initialized() {
		t.Error("fake NVML still initialised")
	}
	if got, want := h.clk.Pending(), h.clk.Now().Add(5*time.Second); len(got) != 1 || !got[0].Equal(want) {
		t.Errorf("pending %v, want a re-init at %v", got, want)
	}
	if warns := h.logs.FilterLevelExact(zapcore.WarnLevel).All(); len(warns) != 1 ||
		!strings.Contains(warns[0].Message, "NVML stopped answering") {
		t.Errorf("warn lines = %v", warns)
	}

	srv.ClearFailures()
	h.clk.Advance(5 * time.Second)
	h.waitParked()
	if s := h.p.Latest(); !s.Up || len(s.GPUs) != 2 {
		t.Fatalf("not up again: %+v", s)
	}
	if n := srv.Calls("Init"); n != 2 {
		t.Errorf("Init called %d times, want 2", n)
	}
	if n := h.p.Latest().Errors[nvml.ErrorKey{Call: "DeviceGetCount", Error: "driver_not_loaded"}]; n != 1 {
		t.Errorf("DeviceGetCount failure counted %d times", n)
	}
	h.stop()
	if n := srv.Calls("Shutdown"); n != 2 {
		t.Errorf("Shutdown called %d times, want 2 (one per Init)", n)
	}
}

func TestRunExitsOnCancel(t *testing.T) {
	t.Run("while up", func(t *testing.T) {
		srv := nvmltest.NewServer(nvmltest.H200s(1, 1)...)
		h := newHarness(t, srv)
		h.up()
		h.stop()
		if n := srv.Calls("Shutdown"); n != 1 {
			t.Errorf("Shutdown called %d times, want 1", n)
		}
	})
	t.Run("while backing off", func(t *testing.T) {
		srv := nvmltest.NewServer()
		srv.Fail("Init", "", gonvml.ERROR_DRIVER_NOT_LOADED)
		h := newHarness(t, srv)
		h.start()
		h.waitParked()
		h.stop()
		if n := srv.Calls("Shutdown"); n != 0 {
			t.Errorf("Shutdown called %d times without a successful Init", n)
		}
	})
}

func TestBeforeInit(t *testing.T) {
	srv := nvmltest.NewServer(nvmltest.H200s(1, 1)...)
	p := nvml.NewPoller(srv, nvml.Options{Clock: clock.NewFake(epoch)}, zap.NewNop())
	if s := p.Latest(); s.Up || s.Errors == nil {
		t.Errorf("Latest before Run = %+v", s)
	}
	if s := p.Poll(); s.Up {
		t.Errorf("Poll before Init = %+v", s)
	}
	if calls := srv.CallCounts(); len(calls) != 0 {
		t.Errorf("NVML called before Run: %v", calls)
	}
}

func TestReturnName(t *testing.T) {
	for ret, want := range map[gonvml.Return]string{
		gonvml.ERROR_GPU_IS_LOST:        "gpu_is_lost",
		gonvml.ERROR_NOT_SUPPORTED:      "not_supported",
		gonvml.ERROR_NO_PERMISSION:      "no_permission",
		gonvml.ERROR_FUNCTION_NOT_FOUND: "function_not_found",
		gonvml.Return(12345):            "other",
	} {
		if got := nvml.ReturnName(ret); got != want {
			t.Errorf("ReturnName(%d) = %q, want %q", ret, got, want)
		}
	}
}

// Real UUIDs are random, so NVML index order and UUID order differ; processes must still
// come out sorted by UUID then PID, and GPUs by index.
func TestOrderWhenUUIDsAreNotInIndexOrder(t *testing.T) {
	specs := nvmltest.H200s(4, 5)
	for i := range specs {
		specs[i].UUID = []string{"GPU-d", "GPU-b", "GPU-c", "GPU-a"}[i]
		slices.Reverse(specs[i].Procs)
	}
	h := newHarness(t, nvmltest.NewServer(specs...))
	s := h.up()
	for i, g := range s.GPUs {
		if g.Index != i {
			t.Errorf("GPUs[%d].Index = %d", i, g.Index)
		}
	}
	var got []string
	for i, p := range s.Processes {
		if i > 0 {
			prev := s.Processes[i-1]
			if prev.UUID > p.UUID || (prev.UUID == p.UUID && prev.PID >= p.PID) {
				t.Fatalf("processes out of order at %d: %+v then %+v", i, prev, p)
			}
		}
		if i == 0 || s.Processes[i-1].UUID != p.UUID {
			got = append(got, p.UUID)
		}
	}
	if want := []string{"GPU-a", "GPU-b", "GPU-c", "GPU-d"}; !slices.Equal(got, want) {
		t.Errorf("UUID order = %v, want %v", got, want)
	}
}
