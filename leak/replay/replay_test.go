package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vram-exporter/vram_exporter/leak/trace"
	"github.com/vram-exporter/vram_exporter/leak/trend"
)

// leakTrace is 40 minutes of a process whose allocated floor is flat for 15 minutes and
// then grows 20 MiB/min, plus its GPU, and one malformed line.
func leakTrace(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	w := trace.NewWriter(&buf, 0)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for el := time.Duration(0); el <= 40*time.Minute; el += 5 * time.Second {
		a := 65<<20 + 20*trend.MiBPerMinute*max(el-15*time.Minute, 0).Seconds()
		if err := w.WriteProcess(trend.Sample{T: t0.Add(el), Key: trend.Key{PID: 7, Start: 99, UUID: "GPU-0123456789abcdef"},
			Allocated: a, Reserved: a + 512<<20, Used: a + 1200<<20, HasAllocated: true, HasReserved: true, HasUsed: true}); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteGPU(trend.GPUSample{T: t0.Add(el), UUID: "GPU-0123456789abcdef", Used: a + 2<<30, Total: 140 << 30}); err != nil {
			t.Fatal(err)
		}
		if el == time.Minute {
			buf.WriteString("{broken\n")
		}
	}
	return buf.String()
}

func TestRunJSON(t *testing.T) {
	var out bytes.Buffer
	sum, err := Run(strings.NewReader(leakTrace(t)), &out, trend.DefaultConfig(), FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Malformed != 1 || sum.MalformedLines[0].Line != 27 || sum.Processes != 1 || sum.GPURecords == 0 {
		t.Errorf("summary = %+v", sum)
	}
	var verdicts []string
	var forecasts []float64
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("output line %q: %v", sc.Text(), err)
		}
		if _, ok := l["pid"]; !ok {
			// A GPU line: its forecast appeared, moved or went away.
			for _, k := range []string{"t", "time", "uuid", "exhaustion_seconds"} {
				if _, ok := l[k]; !ok {
					t.Errorf("GPU line %s lacks %q", sc.Text(), k)
				}
			}
			if v, ok := l["exhaustion_seconds"].(float64); ok {
				forecasts = append(forecasts, v)
			}
			continue
		}
		for _, k := range []string{"t", "pid", "uuid", "verdict", "reason"} {
			if _, ok := l[k]; !ok {
				t.Errorf("output line %s lacks %q", sc.Text(), k)
			}
		}
		verdicts = append(verdicts, l["verdict"].(string))
		if l["verdict"] == "leak" {
			if s, _ := l["allocated_bytes_per_second"].(float64); s < 19*trend.MiBPerMinute || s > 21*trend.MiBPerMinute {
				t.Errorf("leak line slope %v, want about 20 MiB/min", l["allocated_bytes_per_second"])
			}
		}
	}
	if strings.Join(verdicts, ",") != "warming_up,steady,leak" {
		t.Errorf("verdict changes = %v, want warming_up, steady, then leak", verdicts)
	}
	// The leak grows 20 MiB/min into 140 GiB less what is held (the allocated floor, the
	// largest request, memory outside the allocator, the GPU's other 848 MiB): ≈ 4.9
	// days, on one line, because a steady leak keeps predicting the same instant.
	if len(forecasts) != 1 || forecasts[0] < 4.8*86400 || forecasts[0] > 5*86400 {
		t.Errorf("GPU forecasts %v s, want one of ≈ 4.9 days", forecasts)
	}
}

// TestWatchForecastComesAndGoes: a leak that stops has a forecast while it grows, and
// none a short window after it stopped: the GPU line with a null exhaustion_seconds.
func TestWatchForecastComesAndGoes(t *testing.T) {
	var buf bytes.Buffer
	w := trace.NewWriter(&buf, 0)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	onset, stop := 15*time.Minute, 40*time.Minute
	for el := time.Duration(0); el <= 80*time.Minute; el += 5 * time.Second {
		grown := min(max(el-onset, 0), stop-onset)
		a := 65<<20 + 20*trend.MiBPerMinute*grown.Seconds()
		if err := w.WriteProcess(trend.Sample{Key: trend.Key{PID: 7, Start: 99, UUID: "GPU-a"}, T: t0.Add(el),
			Allocated: a, Reserved: a + 512<<20, Used: a + 1200<<20, HasAllocated: true, HasReserved: true, HasUsed: true}); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteGPU(trend.GPUSample{T: t0.Add(el), UUID: "GPU-a", Used: a + 2<<30, Total: 140 << 30}); err != nil {
			t.Fatal(err)
		}
	}
	data := buf.String()
	var gpu []GPUChange
	if _, err := Watch(strings.NewReader(data), trend.DefaultConfig(), func(Change) {}, func(g GPUChange) { gpu = append(gpu, g) }); err != nil {
		t.Fatal(err)
	}
	// The JSON output says "gone" as a GPU line with a null exhaustion_seconds.
	var out bytes.Buffer
	if _, err := Run(strings.NewReader(data), &out, trend.DefaultConfig(), FormatJSON); err != nil {
		t.Fatal(err)
	}
	var lastGPU string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !strings.Contains(l, `"pid"`) {
			lastGPU = l
		}
	}
	if !strings.Contains(lastGPU, `"uuid":"GPU-a","exhaustion_seconds":null`) {
		t.Errorf("last GPU line %s, want one with a null exhaustion_seconds", lastGPU)
	}
	if len(gpu) < 2 || !gpu[0].Valid || gpu[len(gpu)-1].Valid {
		t.Fatalf("GPU changes %+v, want a forecast that later goes away", gpu)
	}
	gone := gpu[len(gpu)-1].T.Sub(t0.Add(stop))
	if gone > trend.DefaultConfig().ShortWindow {
		t.Errorf("forecast went away %s after the leak stopped, want within the short window (%s)", gone, trend.DefaultConfig().ShortWindow)
	}
}

func TestRunTable(t *testing.T) {
	var out bytes.Buffer
	if _, err := Run(strings.NewReader(leakTrace(t)), &out, trend.DefaultConfig(), FormatTable); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "TIME") {
		t.Fatalf("table:\n%s", out.String())
	}
	var leak, gpu string
	for _, l := range lines[1:] {
		switch {
		case strings.Contains(l, " leak "):
			leak = l
		case strings.Contains(l, " gpu "):
			gpu = l
		}
	}
	for _, want := range []string{"+0:2", "GPU-01234567", "leak", "allocated floor rising"} {
		if !strings.Contains(leak, want) {
			t.Errorf("leak row %q lacks %q", leak, want)
		}
	}
	if !strings.Contains(gpu, "exhaustion") || !strings.Contains(gpu, "GPU memory runs out in") {
		t.Errorf("GPU row %q lacks the forecast", gpu)
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name   string
		format string
		cfg    func(*trend.Config)
		want   string
	}{
		{name: "unknown format", format: "yaml", want: `unknown output format "yaml": use one of table, json`},
		{name: "invalid config", format: FormatJSON, cfg: func(c *trend.Config) { c.MinFit = 2 }, want: "trend: MinFit: 2 is out of range; use 0 to 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := trend.DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			_, err := Run(strings.NewReader(""), &bytes.Buffer{}, cfg, tc.format)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}

// A record without a start (procfs unreadable while the process exits) continues the
// process; seen on a real-GPU trace, where it printed a second warming_up.
func TestUnknownStartIsNotANewProcess(t *testing.T) {
	in := strings.Join([]string{
		`{"t":1000,"pid":7,"start":50,"uuid":"GPU-a","used":100}`,
		`{"t":1001,"pid":7,"start":50,"uuid":"GPU-a","used":100}`,
		`{"t":1002,"pid":7,"uuid":"GPU-a","used":100}`,
	}, "\n")
	var changes []Change
	if _, err := Events(strings.NewReader(in), trend.DefaultConfig(), func(c Change) { changes = append(changes, c) }); err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].Start != 50 {
		t.Fatalf("changes %+v, want one warming_up for start 50", changes)
	}
}

// Nothing readable is an error, not an empty replay that exits 0: an empty input, or one
// that is not a trace (a binary file), whose lines are all malformed.
func TestRunWithoutRecordsFails(t *testing.T) {
	binary := string([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, '\n', 0xff, 0xfe, 0, 1, '\n'}) + strings.Repeat("\x00", 100<<10)
	for name, in := range map[string]string{"empty": "", "blank lines": "\n \n", "binary": binary} {
		t.Run(name, func(t *testing.T) {
			sum, err := Run(strings.NewReader(in), &bytes.Buffer{}, trend.DefaultConfig(), FormatJSON)
			if !errors.Is(err, ErrNoRecords) {
				t.Fatalf("Run = %v, want ErrNoRecords", err)
			}
			if name == "binary" && (sum.Malformed != 3 || !strings.Contains(err.Error(), "all 3 non-empty lines are malformed")) {
				t.Errorf("binary input: %d malformed, error %v", sum.Malformed, err)
			}
		})
	}
}

// Skipped names how many lines were skipped and the first few, with line numbers.
func TestSummarySkipped(t *testing.T) {
	good := `{"t": 1, "pid": 1, "uuid": "GPU-a", "used": 5}`
	in := good + "\nnot json\n" + good + "\n{\"t\": 1}\n" + strings.Repeat("a", 70<<10) + "\n{}\n"
	sum, err := Run(strings.NewReader(in), &bytes.Buffer{}, trend.DefaultConfig(), FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	got := sum.Skipped(2)
	for _, want := range []string{"skipped 4 malformed lines: ", "line 2: not a JSON object", "; line 4: missing \"uuid\"", "; …"} {
		if !strings.Contains(got, want) {
			t.Errorf("Skipped(2) = %q, lacks %q", got, want)
		}
	}
	if strings.Contains(got, "line 5") {
		t.Errorf("Skipped(2) lists a third line: %q", got)
	}
	if s := (Summary{}).Skipped(5); s != "" {
		t.Errorf("nothing skipped: %q", s)
	}
}
