package trend_test

import (
	"os"
	"testing"
	"time"

	"github.com/vram-exporter/vram_exporter/leak/eval"
	"github.com/vram-exporter/vram_exporter/leak/trend"
)

// TestFastWindowSensitivity sweeps the fast window's length (as a fraction of the short
// window) and rate factor over the evaluation suite, so the chosen values are seen to
// sit inside a range that raises no false alarm rather than on its edge. Slow (≈ 20 s
// per point): run with VRAM_SWEEP=1 go test -run Sensitivity -v ./trend.
func TestFastWindowSensitivity(t *testing.T) {
	if os.Getenv("VRAM_SWEEP") == "" {
		t.Skip("set VRAM_SWEEP=1 to sweep the fast window over the evaluation suite")
	}
	for _, f := range []float64{0.3, 0.4, 0.5, 0.6} {
		for _, k := range []float64{1, 2, 4, 8} {
			restore := trend.SetFastWindow(f, k)
			rep, err := eval.Evaluate("../eval/testdata", trend.DefaultConfig())
			restore()
			if err != nil {
				t.Fatal(err)
			}
			var worst time.Duration
			for _, tr := range rep.Traces {
				if l := tr.Label; l.Leak && l.RateMiBPerMin >= 1 && (!tr.Ours.Detected || tr.Ours.Delay > worst) {
					worst = tr.Ours.Delay
					if !tr.Ours.Detected {
						worst = -1
						break
					}
				}
			}
			ratio := float64(rep.Baseline.MedianDelay) / float64(rep.Ours.MedianDelay)
			t.Logf("fraction %.1f, rate factor %g: false alarms %d, recall %d/%d, median delay %s (%.2f× the baseline's), slowest ≥ 1 MiB/min leak %s",
				f, k, rep.Ours.FalseAlarms, rep.Ours.TP, rep.Ours.Leaks, rep.Ours.MedianDelay, ratio, worst)
			if rep.Ours.FalseAlarms > 0 {
				t.Errorf("fraction %.1f, rate factor %g: %d false alarms", f, k, rep.Ours.FalseAlarms)
			}
		}
	}
}
