package clock

import (
	"testing"
	"time"
)

// recv waits for one value; the deadline is a safety net for the forwarding goroutine,
// not a timing assumption (the underlying Fake has already fired).
func recv(t *testing.T, c <-chan time.Time) time.Time {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("scaled channel did not deliver after the underlying clock fired")
		return time.Time{}
	}
}

func TestScaledNowRunsSpeedTimesFaster(t *testing.T) {
	base := NewFake(time.Unix(1_000_000, 0))
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := NewScaled(base, start, 60)
	if got := s.Now(); !got.Equal(start) {
		t.Fatalf("Now at creation = %v, want %v", got, start)
	}
	base.Advance(1500 * time.Millisecond)
	if got, want := s.Now(), start.Add(90*time.Second); !got.Equal(want) {
		t.Fatalf("after 1.5s underlying, Now = %v, want %v", got, want)
	}
	if s.Speed() != 60 {
		t.Fatalf("Speed = %v", s.Speed())
	}
}

func TestScaledAfterFiresAfterDOverSpeed(t *testing.T) {
	base := NewFake(time.Unix(0, 0))
	start := time.Unix(5000, 0)
	s := NewScaled(base, start, 600)
	base.Advance(time.Second) // scaled: start+10m
	c := s.After(time.Hour)   // due at underlying +6s, scaled start+70m
	if p := base.Pending(); len(p) != 1 || !p[0].Equal(time.Unix(7, 0)) {
		t.Fatalf("underlying timers %v, want one at t=7s (1s + 1h/600)", p)
	}
	base.Advance(5999 * time.Millisecond)
	select {
	case v := <-c:
		t.Fatalf("fired early at %v", v)
	default:
	}
	base.Advance(time.Millisecond)
	if got, want := recv(t, c), start.Add(70*time.Minute); !got.Equal(want) {
		t.Fatalf("After delivered %v, want %v", got, want)
	}
}

func TestScaledTickerDeliversScaledTimesAndStops(t *testing.T) {
	base := NewFake(time.Unix(0, 0))
	start := time.Unix(100, 0)
	s := NewScaled(base, start, 7) // a ratio that does not divide evenly
	tk := s.NewTicker(time.Second)
	p := base.Pending()
	if len(p) != 1 || p[0] != time.Unix(0, int64(time.Second/7)) {
		t.Fatalf("underlying ticker deadlines %v, want one at 1s/7", p)
	}
	for i := 1; i <= 3; i++ {
		base.Advance(time.Second / 7)
		got := recv(t, tk.C())
		want := start.Add(time.Duration(float64(time.Duration(i)*(time.Second/7)) * 7))
		if !got.Equal(want) {
			t.Fatalf("tick %d at %v, want %v", i, got, want)
		}
		if d := got.Sub(start.Add(time.Duration(i) * time.Second)); d < -time.Microsecond || d > time.Microsecond {
			t.Fatalf("tick %d is %v off %ds of scaled time", i, d, i)
		}
	}
	tk.Stop()
	tk.Stop() // idempotent
	if p := base.Pending(); len(p) != 0 {
		t.Fatalf("underlying ticker still pending after Stop: %v", p)
	}
}

func TestScaledWithRealClock(t *testing.T) {
	s := NewScaled(Real{}, time.Unix(0, 0), 3600)
	t0 := time.Now()
	got := recv(t, s.After(time.Hour)) // one real second
	if real := time.Since(t0); real < 900*time.Millisecond {
		t.Fatalf("1h at 3600× fired after %v real, want ≈1s", real)
	}
	if got.Before(time.Unix(3600, 0)) {
		t.Fatalf("delivered %v, before 1h of scaled time", got)
	}
}

func TestScaledRejectsNonPositiveSpeed(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewScaled(speed 0) did not panic")
		}
	}()
	NewScaled(Real{}, time.Now(), 0)
}
