package push

import (
	"errors"
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
	// Moving an existing connection to a new PID (a forked child) is refused too, and
	// leaves its data.
	if err := s.Update(3, clk.Now(), Cred{PID: 30}, m); err == nil {
		t.Error("PID change past the bound accepted")
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
