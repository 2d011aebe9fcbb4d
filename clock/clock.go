// Package clock is the one seam between the daemon and wall time. Every loop that waits
// (NVML polling, init backoff, push TTL, trend buckets) takes a Clock, so tests drive
// time by hand with Fake instead of sleeping.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock is the subset of the time package the daemon needs.
type Clock interface {
	Now() time.Time
	// After delivers the time once d has passed (like time.After).
	After(d time.Duration) <-chan time.Time
	// NewTicker delivers the time every d (like time.NewTicker); Stop releases it.
	NewTicker(d time.Duration) Ticker
}

// Ticker is the part of *time.Ticker the daemon uses.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Real is the wall clock.
type Real struct{}

func (Real) Now() time.Time                         { return time.Now() }
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (Real) NewTicker(d time.Duration) Ticker       { return realTicker{time.NewTicker(d)} }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time { return r.t.C }
func (r realTicker) Stop()               { r.t.Stop() }

// Fake is a manual clock for tests. Advance moves time forward and fires every timer and
// ticker that falls due, in time order. Channels are buffered by one, like the real
// ones, so a slow reader misses ticks instead of blocking Advance.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*waiter
	// Waiters is signalled (non-blocking) each time a timer or ticker is registered, so
	// a test can wait until the code under test is parked before it advances time.
	registered chan struct{}
}

type waiter struct {
	at     time.Time
	period time.Duration // 0 for a one-shot timer
	ch     chan time.Time
	done   bool
}

// NewFake returns a Fake clock set to start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, registered: make(chan struct{}, 1024)}
}

func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *Fake) After(d time.Duration) <-chan time.Time {
	return f.add(d, 0).ch
}

func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive ticker interval")
	}
	return &fakeTicker{f: f, w: f.add(d, d)}
}

func (f *Fake) add(d, period time.Duration) *waiter {
	f.mu.Lock()
	w := &waiter{at: f.now.Add(d), period: period, ch: make(chan time.Time, 1)}
	f.waiters = append(f.waiters, w)
	f.mu.Unlock()
	select {
	case f.registered <- struct{}{}:
	default:
	}
	return w
}

// Registered is signalled once for every timer or ticker created; tests block on it to
// know the code under test is waiting on the clock.
func (f *Fake) Registered() <-chan struct{} { return f.registered }

// Advance moves the clock forward by d, firing due timers and tickers in order.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	end := f.now.Add(d)
	for {
		var next *waiter
		for _, w := range f.waiters {
			if !w.done && !w.at.After(end) && (next == nil || w.at.Before(next.at)) {
				next = w
			}
		}
		if next == nil {
			break
		}
		f.now = next.at
		select {
		case next.ch <- next.at:
		default:
		}
		if next.period > 0 {
			next.at = next.at.Add(next.period)
		} else {
			next.done = true
		}
	}
	f.now = end
	f.compact()
	f.mu.Unlock()
}

// Pending reports the deadlines of live timers and tickers, sorted (for assertions).
func (f *Fake) Pending() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Time
	for _, w := range f.waiters {
		if !w.done {
			out = append(out, w.at)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

func (f *Fake) compact() {
	live := f.waiters[:0]
	for _, w := range f.waiters {
		if !w.done {
			live = append(live, w)
		}
	}
	f.waiters = live
}

type fakeTicker struct {
	f *Fake
	w *waiter
}

func (t *fakeTicker) C() <-chan time.Time { return t.w.ch }
func (t *fakeTicker) Stop() {
	t.f.mu.Lock()
	t.w.done = true
	t.f.mu.Unlock()
}
