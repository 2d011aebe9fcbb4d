package push

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/vram-exporter/vram_exporter/clock"
)

func TestStoreTTL(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := NewStore(30*time.Second, 10, clk)
	m := typicalDecoded()
	must(t, s.Update(1, clk.Now(), Cred{PID: 10}, m))
	must(t, s.Update(2, clk.Now(), Cred{PID: 20}, m))
	clk.Advance(20 * time.Second)
	must(t, s.Update(2, clk.Now(), Cred{PID: 20}, m))
	clk.Advance(10 * time.Second) // conn 1 silent for exactly the TTL: still in
	if got := pids(s.Snapshot()); len(got) != 2 {
		t.Fatalf("at the TTL: %v", got)
	}
	clk.Advance(time.Nanosecond)
	for range 3 { // expiry is counted once, however often it is looked at
		if got := pids(s.Snapshot()); len(got) != 1 || got[0] != 20 {
			t.Fatalf("after the TTL: %v, want [20]", got)
		}
	}
	if st := s.Stats(); st.Expired != 1 || st.Senders != 2 || st.Processes != 2 {
		t.Errorf("stats %+v", st)
	}
	must(t, s.Update(1, clk.Now(), Cred{PID: 10}, m)) // speaks again: back in view
	if got := pids(s.Snapshot()); len(got) != 2 {
		t.Errorf("after sending again: %v", got)
	}
}

func TestStoreMaxProcesses(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	s := NewStore(time.Minute, 2, clk)
	m := typicalDecoded()
	must(t, s.Update(1, clk.Now(), Cred{PID: 10}, m))
	must(t, s.Update(2, clk.Now(), Cred{PID: 10}, m)) // same process, second connection
	must(t, s.Update(3, clk.Now(), Cred{PID: 20}, m))
	err := s.Update(4, clk.Now(), Cred{PID: 30}, m)
	var re *RejectError
	if !errors.As(err, &re) || re.Reason != ReasonTooManyProcesses {
		t.Fatalf("third process: %v", err)
	}
	// Moving a connection to a new PID while its parent keeps another connection takes
	// a slot without freeing one: refused, and its data stays.
	if err := s.Update(2, clk.Now(), Cred{PID: 30}, m); !errors.As(err, &re) || re.Reason != ReasonTooManyProcesses {
		t.Errorf("PID change past the bound: %v, want too_many_processes", err)
	}
	if got := pids(s.Snapshot()); len(got) != 3 || got[2] != 20 {
		t.Errorf("snapshot %v", got)
	}
	s.Remove(3)
	must(t, s.Update(4, clk.Now(), Cred{PID: 30}, m)) // a slot freed
	s.Remove(1)
	s.Remove(2)
	s.Remove(99) // unknown: no-op
	if st := s.Stats(); st.Processes != 1 || st.Senders != 1 {
		t.Errorf("stats %+v", st)
	}
}

// A forked child that takes over its parent's only connection frees the parent's slot
// as it takes its own, so it is accepted even when the table is full.
func TestStoreForkTakeoverAtTheProcessBound(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	s := NewStore(time.Minute, 2, clk)
	m := typicalDecoded()
	must(t, s.Update(1, clk.Now(), Cred{PID: 10}, m))
	must(t, s.Update(2, clk.Now(), Cred{PID: 20}, m))
	must(t, s.Update(2, clk.Now(), Cred{PID: 21}, m)) // PID 20's child, on PID 20's socket
	if got := pids(s.Snapshot()); len(got) != 2 || got[0] != 10 || got[1] != 21 {
		t.Errorf("snapshot %v, want [10 21]", got)
	}
	if st := s.Stats(); st.Processes != 2 || st.Series != 4 {
		t.Errorf("stats %+v, want 2 processes of two pools each", st)
	}
}

func TestStorePIDChangeOnConnection(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	s := NewStore(time.Minute, 10, clk)
	must(t, s.Update(1, clk.Now(), Cred{PID: 10}, typicalDecoded()))
	must(t, s.Update(1, clk.Now(), Cred{PID: 11}, typicalDecoded()))
	if got := pids(s.Snapshot()); len(got) != 1 || got[0] != 11 {
		t.Errorf("snapshot %v", got)
	}
	if st := s.Stats(); st.Processes != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestStoreSnapshotIsStable(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	s := NewStore(time.Minute, 10, clk)
	must(t, s.Update(1, clk.Now(), Cred{PID: 10}, typicalDecoded()))
	snap := s.Snapshot()
	m2 := typicalDecoded()
	m2.Runtime = "jax"
	must(t, s.Update(1, clk.Now(), Cred{PID: 10}, m2))
	s.Remove(1)
	if snap[0].Msg.Runtime != "torch" || snap[0].Messages != 1 {
		t.Errorf("held snapshot changed: %+v", snap[0])
	}
}

func TestStoreSortedByPIDThenConn(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	s := NewStore(time.Minute, 10, clk)
	for _, u := range []struct {
		conn uint64
		pid  uint32
	}{{5, 30}, {2, 10}, {9, 10}, {1, 20}} {
		must(t, s.Update(u.conn, clk.Now(), Cred{PID: u.pid}, typicalDecoded()))
	}
	var got []uint64
	for _, x := range s.Snapshot() {
		got = append(got, uint64(x.PID)*100+x.ConnID)
	}
	want := []uint64{1002, 1009, 2001, 3005}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func pids(ss []Sender) []uint32 {
	var out []uint32
	for _, s := range ss {
		out = append(out, s.PID)
	}
	return out
}

// shaped is a message with one device per UUID, each with the named pools.
func shaped(uuids []string, pools ...string) Message {
	m := Message{V: 1, Runtime: "torch"}
	for _, u := range uuids {
		d := Device{UUID: u}
		for _, p := range pools {
			d.Pools = append(d.Pools, Pool{Name: p, Allocated: 1, Reserved: 2})
		}
		m.Devices = append(m.Devices, d)
	}
	return m
}

func uuids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("GPU-%s-%d", prefix, i)
	}
	return out
}

func wantReject(t *testing.T, err error, reason string) {
	t.Helper()
	var re *RejectError
	if !errors.As(err, &re) || re.Reason != reason {
		t.Fatalf("got %v, want a %s reject", err, reason)
	}
}

func newBoundedStore(t *testing.T, o StoreOptions) (*Store, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Unix(0, 0))
	o.Clock = clk
	def := DefaultStoreOptions()
	for _, f := range []struct {
		v *int
		d int
	}{
		{&o.MaxProcesses, def.MaxProcesses}, {&o.MaxDevicesPerProcess, def.MaxDevicesPerProcess},
		{&o.MaxPoolsPerProcess, def.MaxPoolsPerProcess}, {&o.MaxSeries, def.MaxSeries},
	} {
		if *f.v == 0 {
			*f.v = f.d
		}
	}
	s, err := NewStoreWithOptions(o)
	if err != nil {
		t.Fatal(err)
	}
	return s, clk
}

// Devices count over all of a PID's connections: several connections of one process
// each inside the per-message limit cannot add up past the per-process one.
func TestStoreDevicesPerProcessOverConnections(t *testing.T) {
	s, clk := newBoundedStore(t, StoreOptions{MaxDevicesPerProcess: 4})
	must(t, s.Update(1, clk.Now(), Cred{PID: 10}, shaped(uuids("a", 3), "torch")))
	// The same devices again from a second connection are the same series: fine.
	must(t, s.Update(2, clk.Now(), Cred{PID: 10}, shaped(uuids("a", 3), "torch")))
	wantReject(t, s.Update(3, clk.Now(), Cred{PID: 10}, shaped(uuids("b", 2), "torch")), ReasonTooManyProcessDevices)
	// Another process has its own allowance.
	must(t, s.Update(4, clk.Now(), Cred{PID: 20}, shaped(uuids("b", 4), "torch")))
	// A refused message changes nothing: connection 3 has no data, the counts are back.
	if got := pids(s.Snapshot()); len(got) != 3 {
		t.Errorf("snapshot %v, want connections 1, 2 and 4", got)
	}
	if st := s.Stats(); st.Processes != 2 || st.Series != 7 {
		t.Errorf("stats %+v, want 2 processes and 3+4 series", st)
	}
	// A connection that shrinks makes room.
	must(t, s.Update(1, clk.Now(), Cred{PID: 10}, shaped(uuids("a", 1), "torch")))
	must(t, s.Update(2, clk.Now(), Cred{PID: 10}, shaped(uuids("a", 1), "torch")))
	must(t, s.Update(3, clk.Now(), Cred{PID: 10}, shaped(uuids("b", 3), "torch")))
}

func TestStorePoolsPerProcessOverConnections(t *testing.T) {
	s, clk := newBoundedStore(t, StoreOptions{MaxPoolsPerProcess: 10})
	must(t, s.Update(1, clk.Now(), Cred{PID: 10}, shaped(uuids("a", 2), "p0", "p1", "p2", "p3")))
	prev := s.Snapshot()[0].Msg
	wantReject(t, s.Update(2, clk.Now(), Cred{PID: 10}, shaped(uuids("a", 1), "q0", "q1", "q2")), ReasonTooManyProcessPools)
	// A growing message on the same connection is refused too, and its old data kept.
	wantReject(t, s.Update(1, clk.Now(), Cred{PID: 10}, shaped(uuids("a", 2), "p0", "p1", "p2", "p3", "p4", "p5")), ReasonTooManyProcessPools)
	if got := s.Snapshot(); len(got) != 1 || len(got[0].Msg.Devices[0].Pools) != len(prev.Devices[0].Pools) {
		t.Errorf("after refusals: %+v", got)
	}
	// A device without pools counts as one.
	must(t, s.Update(2, clk.Now(), Cred{PID: 10}, shaped(uuids("z", 2))))
	if st := s.Stats(); st.Series != 10 {
		t.Errorf("series %d, want 8 pools + 2 empty devices", st.Series)
	}
}

func TestStoreMaxSeriesOverAllSenders(t *testing.T) {
	s, clk := newBoundedStore(t, StoreOptions{MaxSeries: 20})
	for pid := uint32(1); pid <= 4; pid++ {
		must(t, s.Update(uint64(pid), clk.Now(), Cred{PID: pid}, shaped(uuids("a", 1), "p0", "p1", "p2", "p3", "p4")))
	}
	wantReject(t, s.Update(5, clk.Now(), Cred{PID: 5}, shaped(uuids("a", 1), "p0")), ReasonTooManySeries)
	// A sender already in keeps being updated, even at the bound.
	must(t, s.Update(1, clk.Now(), Cred{PID: 1}, shaped(uuids("b", 1), "p0", "p1", "p2", "p3", "p4")))
	s.Remove(2)
	must(t, s.Update(5, clk.Now(), Cred{PID: 5}, shaped(uuids("a", 1), "p0")))
	if st := s.Stats(); st.Series != 16 || st.Processes != 4 {
		t.Errorf("stats %+v", st)
	}
}

func TestStoreOptionsCheck(t *testing.T) {
	if err := DefaultStoreOptions().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	o := DefaultStoreOptions()
	o.MaxProcesses, o.MaxSeries = 0, -1
	err := o.Validate()
	want := "push: MaxProcesses: 0 is out of range; use at least 1, like 1024\npush: MaxSeries: -1 is out of range; use at least 1, like 4096"
	if err == nil || err.Error() != want {
		t.Errorf("Validate() = %v, want %s", err, want)
	}
	if _, err := NewStoreWithOptions(o); err == nil {
		t.Error("NewStoreWithOptions accepted bad options")
	}
}
