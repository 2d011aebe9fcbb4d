package eval

import (
	"fmt"
	"time"

	"github.com/vram-exporter/vram_exporter/leak/trend"
)

// TrendOverride is a label's per-trace override of the detector settings, spelled like
// the daemon's `trend:` configuration block (durations as Go duration strings, "10s",
// "2m"). Fields left out keep the value of the configuration the suite is scored with.
//
//	"trend": {"bucket": "10s", "short_window": "2m", "long_window": "4m", "warm_up": "1m",
//	          "min_rate_bytes_per_second": 8738, "min_fit": 0.85, "min_duration": "0s"}
//
// max_warm_up, fast_rate_bytes_per_second and slow_rate_bytes_per_second are accepted
// too (trend.Config's MaxWarmUp, FastRate, SlowRate).
type TrendOverride struct {
	Bucket                string   `json:"bucket,omitempty"`
	ShortWindow           string   `json:"short_window,omitempty"`
	LongWindow            string   `json:"long_window,omitempty"`
	WarmUp                string   `json:"warm_up,omitempty"`
	MaxWarmUp             string   `json:"max_warm_up,omitempty"`
	MinRateBytesPerSecond *float64 `json:"min_rate_bytes_per_second,omitempty"`
	FastRateBytesPerSec   *float64 `json:"fast_rate_bytes_per_second,omitempty"`
	SlowRateBytesPerSec   *float64 `json:"slow_rate_bytes_per_second,omitempty"`
	MinFit                *float64 `json:"min_fit,omitempty"`
	MinDuration           string   `json:"min_duration,omitempty"`
}

// ShortTrace is the override of scripts/gpu/short-trace.yml: the settings, scaled down,
// that the minutes-long real-GPU traces are judged with.
func ShortTrace() *TrendOverride {
	rate, fit := 8738.0, 0.85
	return &TrendOverride{Bucket: "10s", ShortWindow: "2m", LongWindow: "4m", WarmUp: "1m",
		MinRateBytesPerSecond: &rate, MinFit: &fit, MinDuration: "0s"}
}

// Apply returns base with o's fields in place, validated.
func (o *TrendOverride) Apply(base trend.Config) (trend.Config, error) {
	cfg := base
	if o == nil {
		return cfg, nil
	}
	for _, d := range []struct {
		name string
		s    string
		dst  *time.Duration
	}{
		{"bucket", o.Bucket, &cfg.Bucket},
		{"short_window", o.ShortWindow, &cfg.ShortWindow},
		{"long_window", o.LongWindow, &cfg.LongWindow},
		{"warm_up", o.WarmUp, &cfg.WarmUp},
		{"max_warm_up", o.MaxWarmUp, &cfg.MaxWarmUp},
		{"min_duration", o.MinDuration, &cfg.MinDuration},
	} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil {
			return cfg, fmt.Errorf("trend.%s: %w", d.name, err)
		}
		*d.dst = v
	}
	if o.MinRateBytesPerSecond != nil {
		cfg.MinRate = *o.MinRateBytesPerSecond
	}
	if o.FastRateBytesPerSec != nil {
		cfg.FastRate = *o.FastRateBytesPerSec
	}
	if o.SlowRateBytesPerSec != nil {
		cfg.SlowRate = *o.SlowRateBytesPerSec
	}
	if o.MinFit != nil {
		cfg.MinFit = *o.MinFit
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}
