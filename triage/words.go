package triage

import (
	"fmt"
	"github.com/vram-exporter/vram_exporter/api"
	"math"
	"strings"
	"time"
)

var units = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}

// bytesText is a size in IEC units: "512 MiB", "9.5 GiB", "18 GiB".
func bytesText(b float64) string {
	neg := b < 0
	if neg {
		b = -b
	}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	var s string
	switch {
	case i == 0:
		s = fmt.Sprintf("%.0f %s", b, units[i])
	case b < 10 && math.Round(b*10)/10 != math.Round(b):
		s = fmt.Sprintf("%.1f %s", b, units[i])
	default:
		s = fmt.Sprintf("%.0f %s", b, units[i])
	}
	if neg {
		s = "-" + s
	}
	return s
}

// rateText is a growth rate per minute: "12 MiB/min".
func rateText(bytesPerSecond float64) string {
	return bytesText(bytesPerSecond*60) + "/min"
}

// shortDuration is a compact duration: "2h10m", "40m", "45s", "3d4h".
func shortDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		h := int(d.Hours())
		m := int((d - time.Duration(h)*time.Hour).Minutes())
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m)
	}
	days := int(d.Hours()) / 24
	h := int(d.Hours()) - 24*days
	if h == 0 {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%dh", days, h)
}

// durationWords is a duration for a sentence: "40 minutes", "2 hours 10 minutes".
func durationWords(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	plural := func(n int, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return fmt.Sprintf("%d %ss", n, unit)
	}
	switch {
	case d < time.Minute:
		return plural(int(d.Seconds()), "second")
	case d < time.Hour:
		return plural(int(d.Minutes()), "minute")
	case d < 48*time.Hour:
		h := int(d.Hours())
		m := int((d - time.Duration(h)*time.Hour).Minutes())
		if m == 0 {
			return plural(h, "hour")
		}
		return plural(h, "hour") + " " + plural(m, "minute")
	}
	return plural(int(d.Hours())/24, "day")
}

var numberWords = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}

func countWords(n int) string {
	if n >= 0 && n < len(numberWords) {
		return numberWords[n]
	}
	return fmt.Sprint(n)
}

func fitWords(fit float64) string {
	switch {
	case fit >= 0.9:
		return fmt.Sprintf("with a good fit (R² %.2f)", fit)
	case fit >= 0.8:
		return fmt.Sprintf("with a fair fit (R² %.2f)", fit)
	}
	return fmt.Sprintf("with a weak fit (R² %.2f)", fit)
}

// shortContainer is the first 12 characters of a container ID, without the runtime.
func shortContainer(id string) string {
	if _, rest, ok := strings.Cut(id, "://"); ok {
		id = rest
	}
	if len(id) > 12 {
		id = id[:12]
	}
	return id
}

// risk orders verdicts, most urgent first.
func risk(verdict string) int {
	switch api.Verdict(verdict) {
	case api.VerdictLeak:
		return 0
	case api.VerdictUnattributedGrowth:
		return 1
	case api.VerdictCacheGrowth:
		return 2
	case api.VerdictWarmingUp:
		return 3
	case api.VerdictSteady:
		return 4
	}
	return 5
}
