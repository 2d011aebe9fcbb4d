package clock

import (
	"sync"
	"time"
)

// Scaled is a Clock whose time runs speed times faster than an underlying clock (the
// wall clock in demo mode): Now is start + elapsed×speed, where elapsed is the time the
// underlying clock has moved since NewScaled, and After/NewTicker(d) fire after d/speed
// of underlying time, delivering scaled times. Demo mode uses it so that an hour of
// simulated node (warm-up, leak verdicts, exhaustion forecasts) passes in a minute,
// through the same timers every loop of the daemon already takes.
type Scaled struct {
	base      Clock
	speed     float64
	start     time.Time // scaled time at baseStart
	baseStart time.Time
}

// NewScaled returns a clock that reads start now and then runs speed× as fast as base
// (clock.Real{} for the wall clock; a Fake in tests). speed must be positive.
func NewScaled(base Clock, start time.Time, speed float64) *Scaled {
	if !(speed > 0) {
		panic("clock: non-positive speed")
	}
	return &Scaled{base: base, speed: speed, start: start, baseStart: base.Now()}
}

// Speed returns the factor scaled time runs faster than the underlying clock.
func (s *Scaled) Speed() float64 { return s.speed }

// Now returns start + elapsed×speed.
func (s *Scaled) Now() time.Time { return s.scale(s.base.Now()) }

func (s *Scaled) scale(t time.Time) time.Time {
	return s.start.Add(time.Duration(float64(t.Sub(s.baseStart)) * s.speed))
}

// real converts a scaled duration to an underlying one, at least 1ns so that a ticker
// never gets a zero period.
func (s *Scaled) real(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return max(time.Duration(float64(d)/s.speed), 1)
}

// After delivers the scaled time once d of scaled time has passed. A goroutine waits for
// the underlying timer; it lives at most d/speed.
func (s *Scaled) After(d time.Duration) <-chan time.Time {
	out := make(chan time.Time, 1)
	in := s.base.After(s.real(d))
	go func() { out <- s.scale(<-in) }()
	return out
}

// NewTicker delivers the scaled time every d of scaled time. Like time.Ticker, a slow
// reader misses ticks (the channel holds one) instead of blocking the clock.
func (s *Scaled) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive ticker interval")
	}
	t := &scaledTicker{base: s.base.NewTicker(s.real(d)), c: make(chan time.Time, 1), done: make(chan struct{})}
	go func() {
		for {
			select {
			case <-t.done:
				return
			case bt := <-t.base.C():
				select {
				case t.c <- s.scale(bt):
				default:
				}
			}
		}
	}()
	return t
}

type scaledTicker struct {
	base Ticker
	c    chan time.Time
	done chan struct{}
	once sync.Once
}

func (t *scaledTicker) C() <-chan time.Time { return t.c }

func (t *scaledTicker) Stop() {
	t.once.Do(func() {
		t.base.Stop()
		close(t.done)
	})
}
