package nvml

import (
	"time"

	"github.com/vram-exporter/vram_exporter/clock"
)

// Defaults of Options; package config reads nvml.poll_interval's default from here.
const (
	DefaultPollInterval   = time.Second
	DefaultInitBackoffMin = 5 * time.Second
	DefaultInitBackoffMax = 5 * time.Minute
)

// Options tunes a Poller. Zero values take the defaults.
type Options struct {
	Interval       time.Duration // time between polls; default DefaultPollInterval
	InitBackoffMin time.Duration // first wait after a failed nvmlInit; default DefaultInitBackoffMin
	InitBackoffMax time.Duration // the wait doubles up to this; default DefaultInitBackoffMax
	Clock          clock.Clock   // default clock.Real{}
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = DefaultPollInterval
	}
	if o.InitBackoffMin <= 0 {
		o.InitBackoffMin = DefaultInitBackoffMin
	}
	if o.InitBackoffMax <= 0 {
		o.InitBackoffMax = DefaultInitBackoffMax
	}
	if o.InitBackoffMax < o.InitBackoffMin {
		o.InitBackoffMax = o.InitBackoffMin
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return o
}
