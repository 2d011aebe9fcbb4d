package nvml

import (
	"time"

	"github.com/vram-exporter/vram_exporter/clock"
)

// Defaults of Options; package config reads nvml.poll_interval's default from here.
const (
	// DefaultPollInterval matches the Python client's default push interval (5 s), so
	// a pushed figure is joined about once per push, and the leak detector's 30 s
	// buckets still hold six samples each (its evaluation traces are sampled every
	// 1–10 s, most at 5 s). On an H200 with 16 processes pushing every second the
	// daemon's idle CPU was 159 ms/min at a 1 s poll, 106 at 2 s and 75 at 5 s (41 with
	// the client's default 5 s pushes): NVML's list call for 16 processes costs
	// 0.6–0.9 ms of mostly kernel time, and every poll wakes the push readers, the join
	// and the trend engine. Prometheus scrapes every 15–60 s, so a faster poll mostly
	// buys values nobody reads; --nvml.poll-interval goes down to 100 ms.
	DefaultPollInterval   = 5 * time.Second
	DefaultInitBackoffMin = 5 * time.Second
	DefaultInitBackoffMax = 5 * time.Minute

	// What changes rarely, or matters only for context, is read on a slower cadence
	// than the memory figures and the compute process list (every poll: the leak
	// detector and the join need them). Between reads the last figures are kept.
	// On a real H200 each of these calls costs 0.2–0.3 ms while GetMemoryInfo_v2
	// costs 7 µs, so they were most of a poll.
	DefaultMIGModeInterval     = time.Minute      // MIG mode changes only with a GPU reset
	DefaultBAR1Interval        = 15 * time.Second // BAR1 use
	DefaultGraphicsMPSInterval = 5 * time.Second  // the graphics and MPS process lists
)

// Options tunes a Poller. Zero values take the defaults.
type Options struct {
	Interval       time.Duration // time between polls; default DefaultPollInterval
	InitBackoffMin time.Duration // first wait after a failed nvmlInit; default DefaultInitBackoffMin
	InitBackoffMax time.Duration // the wait doubles up to this; default DefaultInitBackoffMax
	// MIGModeInterval is how often GetMigMode is re-read; it is also read on the first
	// poll of an NVML session and whenever the set of GPUs changes. Default
	// DefaultMIGModeInterval.
	MIGModeInterval time.Duration
	// BAR1Interval is how often GetBAR1MemoryInfo is re-read; default DefaultBAR1Interval.
	BAR1Interval time.Duration
	// GraphicsMPSInterval is how often the graphics and MPS process lists are re-read;
	// default DefaultGraphicsMPSInterval. The compute list is read on every poll.
	GraphicsMPSInterval time.Duration
	Clock               clock.Clock // default clock.Real{}
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
	if o.MIGModeInterval <= 0 {
		o.MIGModeInterval = DefaultMIGModeInterval
	}
	if o.BAR1Interval <= 0 {
		o.BAR1Interval = DefaultBAR1Interval
	}
	if o.GraphicsMPSInterval <= 0 {
		o.GraphicsMPSInterval = DefaultGraphicsMPSInterval
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return o
}

// due reports whether something last read at last (zero: never) should be read again at
// now, every interval. Half a poll interval of slack keeps a ticker's jitter from
// pushing a read one whole poll late.
func (o Options) due(last, now time.Time, every time.Duration) bool {
	return last.IsZero() || now.Sub(last) >= every-o.Interval/2
}
