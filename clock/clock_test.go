package clock

import (
	"testing"
	"time"
)

func TestFakeFiresTimersAndTickersInOrder(t *testing.T) {
	start := time.Unix(1000, 0)
	f := NewFake(start)
	after := f.After(3 * time.Second)
	tick := f.NewTicker(2 * time.Second)

	f.Advance(1 * time.Second)
	select {
	case <-after:
		t.Fatal("timer fired early")
	case <-tick.C():
		t.Fatal("ticker fired early")
	default:
	}

	f.Advance(1 * time.Second) // t=2: ticker
	if got := <-tick.C(); !got.Equal(start.Add(2 * time.Second)) {
		t.Fatalf("tick at %v, want t+2s", got)
	}
	f.Advance(2 * time.Second) // t=4: timer at 3, ticker at 4
	if got := <-after; !got.Equal(start.Add(3 * time.Second)) {
		t.Fatalf("timer at %v, want t+3s", got)
	}
	if got := <-tick.C(); !got.Equal(start.Add(4 * time.Second)) {
		t.Fatalf("tick at %v, want t+4s", got)
	}
	if !f.Now().Equal(start.Add(4 * time.Second)) {
		t.Fatalf("now = %v", f.Now())
	}
	tick.Stop()
	if p := f.Pending(); len(p) != 0 {
		t.Fatalf("pending after stop and fire: %v", p)
	}
}

func TestFakeTickerDropsWhenReaderIsSlow(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	tick := f.NewTicker(time.Second)
	f.Advance(10 * time.Second) // must not block although nobody reads
	<-tick.C()
	select {
	case <-tick.C():
		t.Fatal("buffer should hold only one tick")
	default:
	}
	<-f.Registered()
}
