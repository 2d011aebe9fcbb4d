package triage

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/vram-exporter/vram_exporter/api"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// ANSI SGR sequences; used only when the caller asks for colour (a terminal).
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiMag    = "\x1b[35m"
	ansiCyan   = "\x1b[36m"
)

func verdictColor(v string) string {
	switch api.Verdict(v) {
	case api.VerdictLeak:
		return ansiBold + ansiRed
	case api.VerdictUnattributedGrowth:
		return ansiMag
	case api.VerdictCacheGrowth:
		return ansiYellow
	case api.VerdictWarmingUp:
		return ansiCyan
	case api.VerdictSteady:
		return ansiGreen
	}
	return ""
}

type painter bool

func (c painter) paint(style, s string) string {
	if !c || style == "" || s == "" {
		return s
	}
	return style + s + ansiReset
}

// WriteJSON writes the report as one indented JSON document.
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report for people; color adds ANSI colours (only for a
// terminal).
func WriteTable(out io.Writer, r Report, color bool) error {
	r = escaped(r)
	w := bufio.NewWriter(out)
	c := painter(color)

	head := fmt.Sprintf("vram_exporter triage · node %s · %s", orDash(r.Node), r.Time.UTC().Format(time.RFC3339))
	if r.DriverVersion != "" {
		head += " · driver " + r.DriverVersion
	}
	if r.Version != "" {
		head += " · exporter " + r.Version
	}
	fmt.Fprintln(w, c.paint(ansiBold, head))
	for _, warn := range r.Warnings {
		fmt.Fprintln(w, c.paint(ansiBold+ansiYellow, "WARNING: "+warn))
	}

	fmt.Fprintln(w)
	if len(r.GPUs) == 0 {
		if r.NVMLUp {
			fmt.Fprintln(w, "No GPUs: NVML is up but lists no device.")
		} else {
			fmt.Fprintln(w, "No GPU figures while NVML is down.")
		}
	} else {
		t := table{header: []string{"GPU", "NAME", "TOTAL", "USED", "FREE", "FORECAST", "HEADROOM"}, right: map[int]bool{2: true, 3: true, 4: true}}
		for _, g := range r.GPUs {
			style := ""
			if g.ExhaustionSeconds != nil {
				style = ansiBold + ansiRed
			}
			t.add([]string{fmt.Sprint(g.Index), g.Name, bytesText(float64(g.TotalBytes)), bytesText(float64(g.UsedBytes)),
				bytesText(float64(g.FreeBytes)), g.Forecast, g.Headroom}, map[int]string{5: style})
		}
		t.write(w, c)
		for _, g := range r.GPUs {
			if g.Diagnosis != "" {
				fmt.Fprintln(w, "  "+g.Diagnosis)
			}
		}
	}
	if len(r.Duplicates) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, c.paint(ansiBold, "Duplicated workers:"))
		for _, d := range r.Duplicates {
			pids := make([]string, len(d.PIDs))
			for i, p := range d.PIDs {
				pids[i] = fmt.Sprint(p)
			}
			fmt.Fprintf(w, "  pids %s: %s\n", strings.Join(pids, ", "), d.Diagnosis)
		}
	}

	fmt.Fprintln(w)
	if len(r.Processes) == 0 {
		fmt.Fprintln(w, "No processes use a GPU.")
	} else {
		t := table{
			header: []string{"PID", "GPU", "COMM", "CONTAINER", "SERVICE/MODEL", "USED", "ALLOC", "RESERVED", "CACHED", "UNATTR", "GROWTH", "VERDICT"},
			right:  map[int]bool{5: true, 6: true, 7: true, 8: true, 9: true, 10: true},
			notes:  true,
		}
		for _, p := range r.Processes {
			gpu := p.GPU
			if gpu == "" {
				gpu = "?"
			}
			t.add([]string{fmt.Sprint(p.PID), gpu, orDash(p.Comm), orDash(p.Container), serviceModel(p.Service, p.Model),
				optBytes(p.UsedBytes), optBytes(p.AllocatedBytes), optBytes(p.ReservedBytes), optBytes(p.CachedBytes),
				optSigned(p.UnattributedBytes), growthCell(p), orDash(p.Verdict)},
				map[int]string{11: verdictColor(p.Verdict)})
			t.note(p.Diagnosis)
		}
		t.write(w, c)
	}
	return w.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func serviceModel(service, model string) string {
	switch {
	case service == "" && model == "":
		return "-"
	case model == "":
		return service
	case service == "":
		return "-/" + model
	}
	return service + "/" + model
}

func optBytes(b *uint64) string {
	if b == nil {
		return "-"
	}
	return bytesText(float64(*b))
}

func optSigned(b *int64) string {
	if b == nil {
		return "-"
	}
	return bytesText(float64(*b))
}

// growthCell shows the slope behind a growth verdict; for others, "flat" when nothing
// rises faster than half a MiB a minute.
func growthCell(p Process) string {
	if p.GrowthBytesPerSecond == nil {
		return "-"
	}
	r := *p.GrowthBytesPerSecond
	if risk(p.Verdict) > risk(string(api.VerdictCacheGrowth)) && r < 0.5*api.MiBPerMinute {
		return "flat"
	}
	s := rateText(r)
	if r > 0 {
		s = "+" + s
	}
	return s
}

// table pads plain text first and colours after, so ANSI codes never skew columns.
type table struct {
	header []string
	right  map[int]bool
	rows   [][]string
	styles []map[int]string
	notes  bool
	texts  []string
}

func (t *table) add(cells []string, styles map[int]string) {
	t.rows = append(t.rows, cells)
	t.styles = append(t.styles, styles)
	t.texts = append(t.texts, "")
}

func (t *table) note(s string) { t.texts[len(t.texts)-1] = s }

func (t *table) write(w io.Writer, c painter) {
	widths := make([]int, len(t.header))
	for i, h := range t.header {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, r := range t.rows {
		for i, cell := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	line := func(cells []string, styles map[int]string, all string) string {
		var b strings.Builder
		for i, cell := range cells {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			last := i == len(cells)-1
			var s string
			switch {
			case t.right[i]:
				s = pad + cell
			case last:
				s = cell
			default:
				s = cell + pad
			}
			style := all
			if styles != nil && styles[i] != "" {
				style = styles[i]
			}
			b.WriteString(c.paint(style, s))
			if !last {
				b.WriteString("  ")
			}
		}
		return b.String()
	}
	fmt.Fprintln(w, line(t.header, nil, ansiBold))
	for i, r := range t.rows {
		fmt.Fprintln(w, line(r, t.styles[i], ""))
		if t.notes && t.texts[i] != "" {
			fmt.Fprintln(w, c.paint(ansiDim, "  └ ")+t.texts[i])
		}
	}
}
