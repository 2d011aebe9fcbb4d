package nvml

import (
	"time"

	"github.com/vram-exporter/vram_exporter/clock"
)

// Options tunes a Poller. Zero values take the defaults.
type Options struct {
	Interval       time.Duration // time between polls; default 1s
	InitBackoffMin time.Duration // first wait after a failed nvmlInit; default 5s
	InitBackoffMax time.Duration // the wait doubles up to this; default 5m
	Clock          clock.Clock   // default clock.Real{}
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.InitBackoffMin <= 0 {
		o.InitBackoffMin = 5 * time.Second
	}
	if o.InitBackoffMax <= 0 {
		o.InitBackoffMax = 5 * time.Minute
	}
	if o.InitBackoffMax < o.InitBackoffMin {
		o.InitBackoffMax = o.InitBackoffMin
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return o
}
