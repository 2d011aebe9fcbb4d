package eval

import (
	"bytes"
	"fmt"
	"time"

	"github.com/vram-exporter/vram_exporter/leak/trend"
)

// SeedOffsets are the other seeds the suite is regenerated with to see how far its
// committed seeds carry: trace seed s becomes s + 1000·k for each k here. Twenty of them,
// as measured in docs/leak-detection.md ("How far the suite's seeds carry").
func SeedOffsets() []uint64 {
	out := make([]uint64, 20)
	for i := range out {
		out[i] = uint64(i+1) * 1000
	}
	return out
}

// SeedOutcome is our engine's outcome on one synthetic trace regenerated with another seed.
type SeedOutcome struct {
	Name    string
	Seed    uint64
	Label   Label
	Outcome Outcome
}

// EvaluateSeeds regenerates the synthetic traces of the suite that keep accepts (all
// when keep is nil), in memory, with each seed offset, and replays them through our
// engine with cfg. Only our engine is scored: the baseline's sweep is what the
// committed suite is for.
func EvaluateSeeds(offsets []uint64, cfg trend.Config, keep func(Spec) bool) ([]SeedOutcome, error) {
	var out []SeedOutcome
	for _, off := range offsets {
		for _, s := range Suite() {
			if keep != nil && !keep(s) {
				continue
			}
			s.Seed += off
			var buf bytes.Buffer
			if err := Generate(s, &buf); err != nil {
				return nil, err
			}
			l := s.Label()
			ld, err := loadData(buf.Bytes(), l, cfg)
			if err != nil {
				return nil, fmt.Errorf("trace %s, seed %d: %w", s.Name, s.Seed, err)
			}
			out = append(out, SeedOutcome{Name: s.Name, Seed: s.Seed, Label: l, Outcome: ld.ours})
		}
	}
	return out, nil
}

// SeedSummary counts false alarms and slow detections over EvaluateSeeds' outcomes.
type SeedSummary struct {
	Traces      int
	FalseAlarms int
	ByTrace     map[string]int // false alarms per trace name
	// Slow counts leaks ≥ 1 MiB/min missed or flagged later than 15 minutes after onset.
	Slow        int
	SlowByTrace map[string]int
	MedianDelay time.Duration // over every detected leak
}

// Summarize sums seed outcomes.
func Summarize(outs []SeedOutcome) SeedSummary {
	sum := SeedSummary{ByTrace: map[string]int{}, SlowByTrace: map[string]int{}}
	var delays []time.Duration
	for _, o := range outs {
		sum.Traces++
		if o.Outcome.FalseAlarm {
			sum.FalseAlarms++
			sum.ByTrace[o.Name]++
		}
		if o.Outcome.Detected {
			delays = append(delays, o.Outcome.Delay)
		}
		if o.Label.Leak && o.Label.RateMiBPerMin >= 1 && (!o.Outcome.Detected || o.Outcome.Delay > 15*time.Minute) {
			sum.Slow++
			sum.SlowByTrace[o.Name]++
		}
	}
	sum.MedianDelay = median(delays)
	return sum
}
