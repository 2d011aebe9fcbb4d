package push

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/vram-exporter/vram_exporter/clock"
)

// pacer runs the paced read loops once every ReadPace (see ServerOptions.ReadPace), one
// after the other: at each pace it wakes the first loop waiting, and each loop, when it
// has drained its connection and waits again (or ends), hands on to the next. A
// goroutine woken by the one running goes onto the same processor, so a pace costs one
// thread wakeup, not one per connection: waking them all at once made the runtime start
// a thread for each on a many-core host.
type pacer struct {
	mu      sync.Mutex
	queue   []chan struct{} // loops waiting for the next pace
	batch   []chan struct{} // loops of the current pace not yet run
	closed  bool
	waiting atomic.Int64 // loops waiting (for tests)
	ticking atomic.Bool  // run's ticker exists (for tests: a fake clock advanced before it fires nothing)
}

func newPacer() *pacer { return &pacer{} }

// wait hands on to the next loop of the current pace, then returns true at the next
// pace, or false once the server has closed (no pace comes any more).
func (p *pacer) wait() bool {
	ch := make(chan struct{})
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	p.queue = append(p.queue, ch)
	next := p.popLocked()
	p.mu.Unlock()
	p.waiting.Add(1)
	if next != nil {
		close(next)
	}
	<-ch
	p.waiting.Add(-1)
	return true
}

// handOn is wait for a loop that ends: the next loop of the current pace runs.
func (p *pacer) handOn() {
	p.mu.Lock()
	next := p.popLocked()
	p.mu.Unlock()
	if next != nil {
		close(next)
	}
}

func (p *pacer) popLocked() chan struct{} {
	if len(p.batch) == 0 {
		return nil
	}
	next := p.batch[0]
	p.batch[0] = nil
	p.batch = p.batch[1:]
	return next
}

// run starts a pace every d until done is closed, then releases every loop.
func (p *pacer) run(clk clock.Clock, d time.Duration, done <-chan struct{}) {
	t := clk.NewTicker(d)
	defer t.Stop()
	p.ticking.Store(true)
	for {
		select {
		case <-done:
			p.mu.Lock()
			p.closed = true
			all := append(p.batch, p.queue...)
			p.batch, p.queue = nil, nil
			p.mu.Unlock()
			for _, ch := range all {
				close(ch)
			}
			return
		case <-t.C():
			p.mu.Lock()
			// Loops of the last pace that have not run yet (one is still draining a
			// busy connection) go first.
			p.batch = append(p.batch, p.queue...)
			p.queue = nil
			first := p.popLocked()
			p.mu.Unlock()
			if first != nil {
				close(first)
			}
		}
	}
}
