package push

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/vram-exporter/vram_exporter/clock"
)

// pacer wakes every paced read loop at once, every ReadPace: one broadcast per pace
// instead of one wakeup per message (see ServerOptions.ReadPace).
type pacer struct {
	mu      sync.Mutex
	tick    chan struct{} // closed at the next pace, then replaced
	waiting atomic.Int64  // read loops waiting for the next pace (for tests)
}

func newPacer() *pacer { return &pacer{tick: make(chan struct{})} }

// wait returns at the next pace, or at once when the server has closed.
func (p *pacer) wait() {
	p.mu.Lock()
	tick := p.tick
	p.mu.Unlock()
	p.waiting.Add(1)
	<-tick
	p.waiting.Add(-1)
}

// run broadcasts every d until done is closed, and then once more, so that no loop
// waits on a pace that never comes.
func (p *pacer) run(clk clock.Clock, d time.Duration, done <-chan struct{}) {
	t := clk.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-done:
			p.mu.Lock()
			close(p.tick)
			p.tick = closedChan
			p.mu.Unlock()
			return
		case <-t.C():
			p.mu.Lock()
			close(p.tick)
			p.tick = make(chan struct{})
			p.mu.Unlock()
		}
	}
}

// closedChan is what next returns once the server has closed: it never blocks.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
