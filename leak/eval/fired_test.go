package eval

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vram-exporter/vram_exporter/leak/trend"
)

// TestFirings: a rule fires once its verdict is held for its `for:`, not before; a new
// reason under the same verdict does not restart the count, another verdict does; a
// verdict still held at the trace's end fires if it lasted; firings before the onset
// are false.
func TestFirings(t *testing.T) {
	m := time.Minute
	a, b := seriesKey{1, "GPU-a"}, seriesKey{2, "GPU-a"}
	cases := []struct {
		name      string
		leak      bool
		onset     time.Duration
		end       time.Duration
		changes   func(p *firings)
		wantFalse time.Duration // -1: none false
		wantDelay time.Duration // -1: none
	}{
		{"held 4m59s", false, 0, 60 * m, func(p *firings) {
			p.change(a, trend.Leak, 10*m)
			p.change(a, trend.Steady, 15*m-time.Second)
		}, -1, -1},
		{"held 5m", false, 0, 60 * m, func(p *firings) {
			p.change(a, trend.Leak, 10*m)
			p.change(a, trend.Steady, 15*m)
		}, 15 * m, -1},
		{"same verdict, new reason", true, 0, 60 * m, func(p *firings) {
			p.change(a, trend.Leak, 10*m)
			p.change(a, trend.Leak, 12*m)
			p.change(a, trend.Steady, 16*m)
		}, -1, 15 * m},
		{"leak then unattributed restarts", true, 0, 60 * m, func(p *firings) {
			p.change(a, trend.Leak, 10*m)
			p.change(a, trend.UnattributedGrowth, 13*m)
			p.change(a, trend.Steady, 42*m)
		}, -1, -1},
		{"unattributed held 30m", true, 0, 60 * m, func(p *firings) {
			p.change(a, trend.UnattributedGrowth, 10*m)
		}, -1, 40 * m},
		{"open at the end", true, 30 * m, 40 * m, func(p *firings) {
			p.change(a, trend.Steady, 0)
			p.change(a, trend.Leak, 34*m)
		}, -1, 9 * m},
		{"too short at the end", true, 30 * m, 40 * m, func(p *firings) {
			p.change(a, trend.Leak, 36*m)
		}, -1, -1},
		{"early and later, two series", true, 30 * m, 60 * m, func(p *firings) {
			p.change(b, trend.Leak, 20*m)
			p.change(b, trend.Steady, 26*m)
			p.change(a, trend.Leak, 31*m)
		}, 25 * m, 6 * m},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newFirings(trend.DefaultConfig())
			c.changes(p)
			var o Outcome
			p.score(&o, c.end, c.leak, c.onset)
			gotFalse := time.Duration(-1)
			if o.FiredFalse {
				gotFalse = o.FiredFalseAt
			}
			if gotFalse != c.wantFalse || o.FiredDelay != c.wantDelay {
				t.Errorf("false firing at %v, delay %v; want %v, %v", gotFalse, o.FiredDelay, c.wantFalse, c.wantDelay)
			}
		})
	}
}

// TestFiringsScale: at a short trace's settings the `for:` shrinks with the short window.
func TestFiringsScale(t *testing.T) {
	cfg := trend.DefaultConfig()
	cfg.ShortWindow = 2 * time.Minute // a fifth
	p := newFirings(cfg)
	k := seriesKey{1, "GPU-a"}
	p.change(k, trend.Leak, 0)
	p.change(k, trend.Steady, time.Minute)
	var o Outcome
	p.score(&o, time.Hour, true, 0)
	if o.FiredDelay != time.Minute {
		t.Fatalf("firing delay %v at a fifth of the short window; want 1m (5m/5)", o.FiredDelay)
	}
}

// TestAlertForMatchesRules holds AlertFor to the shipped alert rules' `for:` on the
// verdicts they fire on, so the evaluation's firings are the rules'.
func TestAlertForMatchesRules(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prometheus", "vram_exporter.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				For   string `yaml:"for"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	want := map[string]trend.Verdict{"VRAMProcessLeak": trend.Leak, "VRAMUnattributedGrowth": trend.UnattributedGrowth}
	seen := 0
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			v, ok := want[r.Alert]
			if !ok {
				continue
			}
			seen++
			d, err := time.ParseDuration(r.For)
			if err != nil {
				t.Fatalf("%s: for %q: %v", r.Alert, r.For, err)
			}
			if AlertFor[v] != d {
				t.Errorf("%s has for: %s, AlertFor[%s] is %s", r.Alert, r.For, v, AlertFor[v])
			}
		}
	}
	if seen != len(want) {
		t.Fatalf("found %d of the %d alerts in the rules file", seen, len(want))
	}
}
