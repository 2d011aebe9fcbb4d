// Package replay runs the leak detector over a recorded trace at full speed: the same
// trend.Engine the daemon uses, fed from a file instead of the sample loop, printing a
// line whenever a process's verdict changes. Users replay an incident with it
// (vram_exporter replay --input PATH --output table|json); the evaluation suite scores
// the detector through Events, so what is measured is what users run.
package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/vram-exporter/vram_exporter/leak/trace"
	"github.com/vram-exporter/vram_exporter/leak/trend"
)

// Output formats accepted by Run.
const (
	FormatTable = "table"
	FormatJSON  = "json"
)

// Formats lists the output formats, for flag help and validation.
func Formats() []string { return []string{FormatTable, FormatJSON} }

// Change is one verdict change of one process on one GPU.
type Change struct {
	T        time.Time
	PID      uint32
	Start    uint64
	UUID     string
	Verdict  trend.Verdict
	Previous trend.Verdict // "" for a process seen for the first time
	Reason   string
	Growth   []trend.Growth
}

// GPUChange is a change of one GPU's exhaustion forecast: it appeared, went away, or
// moved. Valid is false when the forecast went away (ExhaustionSeconds is then 0).
type GPUChange struct {
	T                 time.Time
	UUID              string
	ExhaustionSeconds float64
	Valid             bool
}

// forecastMoved reports whether a forecast of sec seconds at t differs enough from the
// last one reported (lastAt: the instant it predicted) to be worth a line: the
// predicted instant moved by more than a tenth of the time left. A steady leak predicts
// the same instant bucket after bucket and prints one line, not one per bucket.
func forecastMoved(lastAt, t time.Time, sec float64) bool {
	at := t.Add(time.Duration(sec * float64(time.Second)))
	return math.Abs(at.Sub(lastAt).Seconds()) > 0.1*sec
}

// Summary describes a replayed trace.
type Summary struct {
	Records        int // well-formed lines
	ProcessRecords int
	GPURecords     int
	Processes      int // distinct (pid, start, uuid)
	Changes        int
	Malformed      int
	MalformedLines []trace.LineError // the first ones, with line numbers
	First, Last    time.Time
}

// sweepIdle is how long a process may be silent in a trace before the engine forgets
// it. Ten minutes covers a stalled sampler without keeping the dead forever.
const sweepIdle = 10 * time.Minute

type key struct {
	pid   uint32
	start uint64
	uuid  string
}

// Events replays in through a fresh engine and calls fn for every verdict change, in
// trace order. Malformed lines are skipped and counted in the summary.
func Events(in io.Reader, cfg trend.Config, fn func(Change)) (Summary, error) {
	return Watch(in, cfg, fn, nil)
}

// Watch is Events that also calls onGPU (when not nil) whenever a GPU's exhaustion
// forecast appears, goes away, or moves (see forecastMoved), in trace order.
func Watch(in io.Reader, cfg trend.Config, fn func(Change), onGPU func(GPUChange)) (Summary, error) {
	var sum Summary
	type forecast struct {
		valid bool
		at    time.Time // the predicted instant of the last line
	}
	forecasts := map[string]forecast{}
	eng, err := trend.NewEngine(cfg)
	if err != nil {
		return sum, err
	}
	r := trace.NewReader(in)
	last := map[key]trend.Verdict{}
	seen := map[key]bool{}
	type pidUUID struct {
		pid  uint32
		uuid string
	}
	lastStart := map[pidUUID]uint64{}
	var lastSweep time.Time
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			sum.Malformed, sum.MalformedLines = r.Malformed()
			return sum, err
		}
		sum.Records++
		var t time.Time
		switch {
		case rec.Process != nil:
			p := *rec.Process
			pk := p.Key
			t = p.T
			sum.ProcessRecords++
			// A start of 0 is "unknown" (procfs unreadable as the process exits), not a
			// new process: it continues the last known start of that (pid, uuid).
			start := pk.Start
			if start == 0 {
				start = lastStart[pidUUID{pk.PID, pk.UUID}]
			} else {
				lastStart[pidUUID{pk.PID, pk.UUID}] = start
			}
			k := key{pk.PID, start, pk.UUID}
			if !seen[k] {
				seen[k] = true
				sum.Processes++
			}
			res := eng.Observe(p)
			prev, known := last[k]
			if !known || prev != res.Verdict {
				last[k] = res.Verdict
				sum.Changes++
				at := res.Since
				if at.IsZero() || !known {
					at = p.T
				}
				fn(Change{T: at, PID: pk.PID, Start: start, UUID: pk.UUID, Verdict: res.Verdict,
					Previous: prev, Reason: res.Reason, Growth: res.Growth})
			}
		case rec.GPU != nil:
			g := rec.GPU
			t = g.T
			sum.GPURecords++
			res := eng.ObserveGPU(*g)
			if onGPU != nil {
				last := forecasts[g.UUID]
				switch {
				case res.ExhaustionValid && (!last.valid || forecastMoved(last.at, g.T, res.ExhaustionSeconds)):
					forecasts[g.UUID] = forecast{valid: true, at: g.T.Add(time.Duration(res.ExhaustionSeconds * float64(time.Second)))}
					onGPU(GPUChange{T: g.T, UUID: g.UUID, ExhaustionSeconds: res.ExhaustionSeconds, Valid: true})
				case !res.ExhaustionValid && last.valid:
					forecasts[g.UUID] = forecast{}
					onGPU(GPUChange{T: g.T, UUID: g.UUID})
				}
			}
		}
		if sum.First.IsZero() || t.Before(sum.First) {
			sum.First = t
		}
		if t.After(sum.Last) {
			sum.Last = t
		}
		if t.Sub(lastSweep) >= time.Minute {
			lastSweep = t
			eng.Sweep(t, sweepIdle)
			for k := range last {
				if _, ok := eng.Result(trend.Key{PID: k.pid, Start: k.start, UUID: k.uuid}); !ok {
					delete(last, k)
				}
			}
		}
	}
	sum.Malformed, sum.MalformedLines = r.Malformed()
	return sum, nil
}

// Run replays in and prints every verdict change to out, as an aligned table for people
// (FormatTable) or as JSON lines (FormatJSON).
func Run(in io.Reader, out io.Writer, cfg trend.Config, format string) (Summary, error) {
	var print func(Change) error
	var printGPU func(GPUChange) error
	var first time.Time
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(out)
		print = func(c Change) error { return enc.Encode(jsonLine(c)) }
		printGPU = func(g GPUChange) error { return enc.Encode(gpuJSONLine(g)) }
	case FormatTable:
		if _, err := fmt.Fprintln(out, tableHeader()); err != nil {
			return Summary{}, fmt.Errorf("writing replay output: %w", err)
		}
		print = func(c Change) error {
			if first.IsZero() {
				first = c.T
			}
			_, err := fmt.Fprintln(out, tableRow(c, first))
			return err
		}
		printGPU = func(g GPUChange) error {
			if first.IsZero() {
				first = g.T
			}
			_, err := fmt.Fprintln(out, gpuTableRow(g, first))
			return err
		}
	default:
		return Summary{}, fmt.Errorf("unknown output format %q: use one of %s", format, strings.Join(Formats(), ", "))
	}
	var werr error
	sum, err := Watch(in, cfg, func(c Change) {
		if werr == nil {
			werr = print(c)
		}
	}, func(g GPUChange) {
		if werr == nil {
			werr = printGPU(g)
		}
	})
	if err != nil {
		return sum, fmt.Errorf("replaying trace: %w", err)
	}
	if werr != nil {
		return sum, fmt.Errorf("writing replay output: %w", werr)
	}
	if sum.Records == 0 {
		if sum.Malformed > 0 {
			return sum, fmt.Errorf("%w: all %d non-empty lines are malformed; is it a JSON-lines trace written by --trace.record?", ErrNoRecords, sum.Malformed)
		}
		return sum, fmt.Errorf("%w: it is empty", ErrNoRecords)
	}
	return sum, nil
}

// ErrNoRecords is matched (errors.Is) by Run's error when not one line of the input
// was a sample: an empty file, or something other than a trace. A replay that saw
// nothing must not look like one that found nothing wrong.
var ErrNoRecords = errors.New("no sample could be read from the trace")

// Skipped describes the malformed lines for people: how many, and the first few (at
// most first) with their line numbers and reasons; "" when there were none.
func (s Summary) Skipped(first int) string {
	if s.Malformed == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "skipped %d malformed line", s.Malformed)
	if s.Malformed != 1 {
		b.WriteString("s")
	}
	for i, e := range s.MalformedLines {
		if i == first {
			b.WriteString("; …")
			break
		}
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// JSONLine is one line of the JSON output. Slopes are bytes per second over the short
// window, present only once the window holds enough floors.
type JSONLine struct {
	T        float64  `json:"t"`
	Time     string   `json:"time"`
	PID      uint32   `json:"pid"`
	Start    uint64   `json:"start,omitempty"`
	UUID     string   `json:"uuid"`
	Verdict  string   `json:"verdict"`
	Previous string   `json:"previous,omitempty"`
	Reason   string   `json:"reason"`
	Alloc    *float64 `json:"allocated_bytes_per_second,omitempty"`
	Reserved *float64 `json:"reserved_bytes_per_second,omitempty"`
	Used     *float64 `json:"used_bytes_per_second,omitempty"`
	Unattr   *float64 `json:"unattributed_bytes_per_second,omitempty"`
}

// GPUJSONLine is a GPU line of the JSON output: the GPU's exhaustion forecast appeared,
// moved, or (ExhaustionSeconds null) went away. It has no pid, like a trace's GPU line.
type GPUJSONLine struct {
	T                 float64  `json:"t"`
	Time              string   `json:"time"`
	UUID              string   `json:"uuid"`
	ExhaustionSeconds *float64 `json:"exhaustion_seconds"`
}

func gpuJSONLine(g GPUChange) GPUJSONLine {
	l := GPUJSONLine{T: float64(g.T.UnixMicro()) / 1e6, Time: g.T.UTC().Format(time.RFC3339), UUID: g.UUID}
	if g.Valid {
		v := math.Round(g.ExhaustionSeconds*10) / 10
		l.ExhaustionSeconds = &v
	}
	return l
}

func jsonLine(c Change) JSONLine {
	l := JSONLine{
		T:    float64(c.T.UnixMicro()) / 1e6,
		Time: c.T.UTC().Format(time.RFC3339), PID: c.PID, Start: c.Start, UUID: c.UUID,
		Verdict: string(c.Verdict), Previous: string(c.Previous), Reason: c.Reason,
	}
	for _, g := range c.Growth {
		if g.Window != trend.WindowShort || !g.Valid {
			continue
		}
		v := math.Round(g.BytesPerSecond*1000) / 1000
		switch g.Series {
		case trend.SeriesAllocated:
			l.Alloc = &v
		case trend.SeriesReserved:
			l.Reserved = &v
		case trend.SeriesUsed:
			l.Used = &v
		case trend.SeriesUnattributed:
			l.Unattr = &v
		}
	}
	return l
}

const rowFormat = "%-20s %9s %8s %-12s %-19s %9s %9s %9s %9s  %s"

func tableHeader() string {
	return fmt.Sprintf(rowFormat, "TIME", "OFFSET", "PID", "GPU", "VERDICT",
		"ALLOC", "RESERVED", "USED", "UNATTR", "REASON (slopes: MiB/min, short window)")
}

func tableRow(c Change, first time.Time) string {
	slopes := map[string]string{}
	for _, g := range c.Growth {
		if g.Window == trend.WindowShort && g.Valid {
			slopes[g.Series] = strconv.FormatFloat(g.BytesPerSecond/trend.MiBPerMinute, 'f', 2, 64)
		}
	}
	get := func(s string) string {
		if v, ok := slopes[s]; ok {
			return v
		}
		return "-"
	}
	uuid := c.UUID
	if len(uuid) > 12 {
		uuid = uuid[:12]
	}
	return fmt.Sprintf(rowFormat, c.T.UTC().Format(time.RFC3339), offset(c.T.Sub(first)),
		strconv.FormatUint(uint64(c.PID), 10), uuid, c.Verdict,
		get(trend.SeriesAllocated), get(trend.SeriesReserved), get(trend.SeriesUsed), get(trend.SeriesUnattributed),
		c.Reason)
}

func gpuTableRow(g GPUChange, first time.Time) string {
	uuid := g.UUID
	if len(uuid) > 12 {
		uuid = uuid[:12]
	}
	what, reason := "no forecast", "GPU exhaustion forecast went away: nothing on it grows"
	if g.Valid {
		d := time.Duration(g.ExhaustionSeconds * float64(time.Second)).Round(time.Second)
		what, reason = "exhaustion", fmt.Sprintf("GPU memory runs out in %s at the rate it grows", d)
	}
	return fmt.Sprintf(rowFormat, g.T.UTC().Format(time.RFC3339), offset(g.T.Sub(first)), "gpu", uuid, what,
		"-", "-", "-", "-", reason)
}

func offset(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	return fmt.Sprintf("+%d:%02d:%02d", h, m, s)
}
