package eval

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vram-exporter/vram_exporter/leak/trend"
)

// TestReport prints the evaluation (the table in docs/leak-detection.md) and asserts
// the targets on it.
func TestReport(t *testing.T) {
	rep, err := Evaluate("testdata", trend.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.Write(&buf); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + buf.String())

	for _, tr := range rep.Traces {
		l := tr.Label
		if tr.Skipped != "" {
			continue
		}
		if !l.Leak && tr.Ours.FalseAlarm {
			t.Errorf("%s: false positive at %s on a trace without a leak", l.Name, fmtDur(tr.Ours.FalseAlarmAt))
		}
		if l.Leak && tr.Ours.FalseAlarm {
			t.Errorf("%s: alert at %s, before the leak's onset", l.Name, fmtDur(tr.Ours.FalseAlarmAt))
		}
		// Each committed trace is one seed of its class in the sweep (TestSweep): held to
		// the slowest delay measured over 100 seeds of it.
		if b, ok := sweepBounds["suite/"+l.Name]; l.Leak && ok && (!tr.Ours.Detected || tr.Ours.Delay > b.max) {
			t.Errorf("%s: a %g MiB/min leak flagged %s, measured at most %s over 100 seeds", l.Name, l.RateMiBPerMin, outcomeCell(l, tr.Ours), fmtDur(b.max))
		}
	}
	if rep.Ours.Recall < 1 {
		t.Errorf("recall %.2f: every leak of the committed suite must be flagged", rep.Ours.Recall)
	}
	// On the leaks the baseline catches at all (it needs 20 MiB/min and a 10-minute
	// `for`), ours is faster.
	if rep.BothDetectedN > 0 && rep.BothDetectedOurs >= rep.BothDetectedBaseline {
		t.Errorf("on the %d leaks both detect: ours %s, baseline %s", rep.BothDetectedN, fmtDur(rep.BothDetectedOurs), fmtDur(rep.BothDetectedBaseline))
	}

	// The recorded H200 traces: both leaks flagged, the healthy process quiet.
	if len(rep.Real) == 0 {
		t.Error("no recorded trace in the report; labels.json lists them under real/")
	}
	for _, tr := range rep.Real {
		l := tr.Label
		switch {
		case tr.Skipped != "":
			t.Errorf("%s: skipped: %s", l.Name, tr.Skipped)
		case tr.Ours.FalseAlarm:
			t.Errorf("%s (pid %d): false alarm at %s", l.Name, l.PID, fmtDur(tr.Ours.FalseAlarmAt))
		case l.Leak && (!tr.Ours.Detected || tr.Ours.FirstVerdicts != l.Expect):
			t.Errorf("%s (pid %d): want %s, got %s (%s)", l.Name, l.PID, l.Expect, outcomeCell(l, tr.Ours), tr.Ours.FirstVerdicts)
		case l.StopSeconds > 0 && (tr.Ours.SteadyAfter < 0 || tr.Ours.SteadyAfter > tr.Config.ShortWindow):
			// A real leak that stops (h100_r17_fast_leak, 400 MiB/min for 180 s): steady
			// again within a short window of its stop, and for good.
			t.Errorf("%s (pid %d): steady %s after its stop, want within %s", l.Name, l.PID, fmtDur(tr.Ours.SteadyAfter), fmtDur(tr.Config.ShortWindow))
		}
	}
}

// TestTrendOverride checks a label's per-trace settings: durations parsed, fields left
// out inherited, bad values refused.
func TestTrendOverride(t *testing.T) {
	base := trend.DefaultConfig()
	var nilO *TrendOverride
	if got, err := nilO.Apply(base); err != nil || got != base {
		t.Errorf("nil override: %+v, %v", got, err)
	}
	fit := 0.9
	o := &TrendOverride{Bucket: "10s", ShortWindow: "2m", LongWindow: "4m", WarmUp: "1m", MinFit: &fit}
	got, err := o.Apply(base)
	if err != nil {
		t.Fatal(err)
	}
	want := base
	want.Bucket, want.ShortWindow, want.LongWindow, want.WarmUp, want.MinFit = 10*time.Second, 2*time.Minute, 4*time.Minute, time.Minute, 0.9
	if got != want {
		t.Errorf("override = %+v, want %+v", got, want)
	}
	for _, bad := range []*TrendOverride{{Bucket: "ten seconds"}, {ShortWindow: "1m"}, {LongWindow: "1m"}} {
		if _, err := bad.Apply(base); err == nil {
			t.Errorf("%+v accepted", *bad)
		}
	}
}

// TestSuiteIsReproducible regenerates every synthetic trace and compares it with the
// committed file, so testdata cannot drift from the generator that documents it.
func TestSuiteIsReproducible(t *testing.T) {
	labels, err := ReadLabels("testdata")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Label{}
	for _, l := range labels.Traces {
		byName[l.Name] = l
	}
	for _, s := range Suite() {
		t.Run(s.Name, func(t *testing.T) {
			if got, want := byName[s.Name], s.Label(); got != want {
				t.Errorf("label = %+v, generator says %+v; run go run ./cmd/vram_eval -generate", got, want)
			}
			var want bytes.Buffer
			if err := Generate(s, &want); err != nil {
				t.Fatal(err)
			}
			rc, err := open(filepath.Join("testdata", s.Label().File))
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			got, err := io.ReadAll(rc)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Errorf("committed trace differs from the generator; run go run ./cmd/vram_eval -generate")
			}
		})
	}
}

// TestRealTraces checks that a labelled file under real/ is scored, and that a label
// whose file is absent is reported as skipped rather than failing the suite.
func TestRealTraces(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	var leak bytes.Buffer
	spec := healthy("x", 99)
	spec.Duration, spec.Leak, spec.Rate, spec.Onset = 40*time.Minute, LinearLeak, 30, 0
	if err := Generate(spec, &leak); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "real", "kept_outputs.jsonl"), leak.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	labels := `{"traces": [
	  {"name": "idle", "file": "idle.jsonl"},
	  {"name": "real/kept_outputs", "file": "real/kept_outputs.jsonl", "leak": true, "rate_mib_per_min": 30, "expect": "leak", "pid": 4242},
	  {"name": "real/kept_outputs_short", "file": "real/kept_outputs.jsonl", "leak": true, "pid": 4242,
	   "trend": {"bucket": "10s", "short_window": "2m", "long_window": "4m", "warm_up": "1m"}},
	  {"name": "real/other_pid", "file": "real/kept_outputs.jsonl", "pid": 7},
	  {"name": "real/not_recorded_yet", "file": "real/absent.jsonl"}
	]}`
	var idle bytes.Buffer
	idleSpec := healthy("idle", 98)
	idleSpec.Duration = 40 * time.Minute
	if err := Generate(idleSpec, &idle); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "idle.jsonl"), idle.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, LabelsFile), []byte(labels), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Evaluate(dir, trend.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	// Recorded traces are reported apart: the headline scores hold the synthetic one only.
	if len(rep.Traces) != 1 || rep.Ours.Leaks+rep.Ours.NonLeaks != 1 {
		t.Fatalf("%d synthetic traces in the report (scores over %d), want 1", len(rep.Traces), rep.Ours.Leaks+rep.Ours.NonLeaks)
	}
	if len(rep.Real) != 4 {
		t.Fatalf("%d recorded traces in the report, want 4", len(rep.Real))
	}
	var delay, shortDelay time.Duration
	for _, tr := range rep.Real {
		switch tr.Label.Name {
		case "real/kept_outputs":
			if !tr.Ours.Detected || tr.Ours.FirstVerdicts != "leak" || tr.Config != trend.DefaultConfig() {
				t.Errorf("real leak trace: %+v with %+v", tr.Ours, tr.Config)
			}
			delay = tr.Ours.Delay
		case "real/kept_outputs_short":
			if !tr.Ours.Detected || tr.Config.ShortWindow != 2*time.Minute || tr.Scale != 0.2 {
				t.Errorf("real leak trace with short settings: %+v with %+v (scale %g)", tr.Ours, tr.Config, tr.Scale)
			}
			shortDelay = tr.Ours.Delay
		case "real/other_pid":
			if tr.Ours.Detected || tr.Ours.FalseAlarm || tr.Final != "" {
				t.Errorf("a pid absent from the trace was judged: %+v, final %q", tr.Ours, tr.Final)
			}
		case "real/not_recorded_yet":
			if tr.Skipped == "" {
				t.Error("a label without its file was not reported as skipped")
			}
		}
	}
	if !(shortDelay < delay) {
		t.Errorf("per-trace settings not applied: delay %s with the short settings, %s with the defaults", shortDelay, delay)
	}
	var out bytes.Buffer
	if err := rep.Write(&out); err != nil || !strings.Contains(out.String(), "real/kept_outputs_short") {
		t.Errorf("report lacks the recorded traces (%v):\n%s", err, out.String())
	}

	// WriteSuite keeps real labels when it rewrites the synthetic ones.
	if err := WriteSuite(dir); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, LabelsFile))
	if !strings.Contains(string(b), "real/kept_outputs") || !strings.Contains(string(b), `"short_window": "2m"`) {
		t.Errorf("WriteSuite dropped the label of a real trace, or its settings:\n%s", b)
	}
	// The committed traces are gzip with a zero header, so regenerating is byte-stable.
	f, _ := os.Open(filepath.Join(dir, "idle.jsonl.gz"))
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil || !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("gzip header carries a name or a time: %v %q %v", zr.ModTime, zr.Name, err)
	}
}

// TestRealLoadSignal: on the H200 traces of rounds 8 and 9, what the client's counts of
// requests in flight (request()) add, replayed with them and with them taken out (as a
// client that does not count its requests would have sent the same trace):
//   - round 8's 20 MiB/min leak under traffic that leaves no idle moment for minutes is
//     flagged on the samples the client said were at rest, and missed without them;
//   - round 9's 400 MiB/min leak on the roomy GPU pages within 45 s of its onset on
//     three 10-s buckets that kept their moments at rest (39 s measured), and without the
//     counts only after the longer run clear of load (1m19s).
func TestRealLoadSignal(t *testing.T) {
	labels, err := ReadLabels("testdata")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Label{}
	for _, x := range labels.Traces {
		byName[x.Name] = x
	}
	for _, c := range []struct {
		name          string
		with, without func(Outcome) bool
		// final: the verdict at the trace's end with the counts, where the leak runs on
		// to it (the slow rule's test of floors that stopped once let this one go 20 s
		// after it paged, on too few rises since the warm-up to know their pace).
		final trend.Verdict
	}{
		{"h200_r8_load_climb_leak", func(o Outcome) bool { return o.Detected }, func(o Outcome) bool { return !o.Detected }, trend.Leak},
		{"h200_r9_fast_leak_counted", func(o Outcome) bool { return o.Detected && o.Delay <= 45*time.Second },
			func(o Outcome) bool { return o.Detected && o.Delay > 45*time.Second }, trend.Leak},
	} {
		l, ok := byName[c.name]
		if !ok {
			t.Fatalf("labels.json has no %s", c.name)
		}
		rc, err := open(filepath.Join("testdata", l.File))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := l.Trend.Apply(trend.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		with, err := loadData(raw, l, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if with.ours.FalseAlarm || !c.with(with.ours) || with.final != c.final {
			t.Errorf("%s with the requests in flight: %s, %q at the end, want %q", c.name, outcomeCell(l, with.ours), with.final, c.final)
		}
		stripped := inFlightField.ReplaceAll(raw, nil)
		if bytes.Equal(stripped, raw) {
			t.Fatalf("%s: the trace carries no in_flight", c.name)
		}
		without, err := loadData(stripped, l, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !c.without(without.ours) {
			t.Errorf("%s without the requests in flight: %s: the trace no longer shows what the signal adds", c.name, outcomeCell(l, without.ours))
		}
	}
}
