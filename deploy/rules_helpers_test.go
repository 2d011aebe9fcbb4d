package deploy

import (
	"bytes"
	"encoding/json"
	"github.com/vram-exporter/vram_exporter/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

const (
	rulesPath      = "prometheus/vram_exporter.rules.yml"
	dashboardsDir  = "../dashboards"
	runbookPath    = "../docs/runbook.md"
	runbookURLBase = "https://github.com/vram-exporter/vram_exporter/blob/main/docs/runbook.md#"
)

// ruleFile is the Prometheus rule file format (the fields this project uses and the
// ones Prometheus 2.x and 3.x both accept), decoded strictly: an unknown key is an error.
type ruleFile struct {
	Groups []ruleGroup `yaml:"groups"`
}

type ruleGroup struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval,omitempty"`
	Rules    []rule `yaml:"rules"`
}

type rule struct {
	Record      string            `yaml:"record,omitempty"`
	Alert       string            `yaml:"alert,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

func decodeStrictYAML(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func loadRules(t testing.TB) ruleFile {
	t.Helper()
	var rf ruleFile
	decodeStrictYAML(t, rulesPath, &rf)
	if len(rf.Groups) == 0 {
		t.Fatalf("%s has no groups", rulesPath)
	}
	return rf
}

var promqlParser = parser.NewParser(parser.Options{})

func parseExpr(expr string) (parser.Expr, error) { return promqlParser.ParseExpr(expr) }

// selectorUse is one metric selector in an expression: the metric and the label names
// its matchers use.
type selectorUse struct {
	metric string
	labels []string
}

func selectors(e parser.Expr) []selectorUse {
	var out []selectorUse
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		s := selectorUse{metric: vs.Name}
		// {__name__=~"a|b"} (a dashboard variable over several metrics) selects each
		// of a and b; any other regular expression stays one name the checks reject.
		names := []string{vs.Name}
		for _, m := range vs.LabelMatchers {
			if m.Name == "__name__" {
				s.metric = m.Value
				names = []string{m.Value}
				if m.Type == labels.MatchRegexp && regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:|]*$`).MatchString(m.Value) {
					names = strings.Split(m.Value, "|")
				}
				continue
			}
			s.labels = append(s.labels, m.Name)
		}
		for _, n := range names {
			s.metric = n
			out = append(out, s)
		}
		return nil
	})
	return out
}

// dashboard is the part of a Grafana dashboard JSON the checks read.
type dashboard struct {
	file        string
	raw         map[string]any
	UID         string `json:"uid"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Templating  struct {
		List []struct {
			Name       string         `json:"name"`
			Type       string         `json:"type"`
			Query      any            `json:"query"`
			Definition string         `json:"definition"`
			Datasource map[string]any `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID          int            `json:"id"`
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Datasource  map[string]any `json:"datasource"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource map[string]any `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // collapsed rows
}

func loadDashboards(t testing.TB) []dashboard {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dashboardsDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("want the fleet, GPU and process dashboards in %s, found %v", dashboardsDir, files)
	}
	sort.Strings(files)
	var out []dashboard
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := json.Unmarshal(b, &d.raw); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		d.file = f
		out = append(out, d)
	}
	return out
}

// allPanels flattens rows.
func (d dashboard) allPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// dashboardVars replaces Grafana's variables in a panel query with values a plain
// Prometheus query accepts: every template variable matches anything, the rate interval
// is a fixed window.
func dashboardVars(expr, rateInterval string) string {
	r := strings.NewReplacer(
		"$__rate_interval", rateInterval, "${__rate_interval}", rateInterval,
		"$__interval", rateInterval, "${__interval}", rateInterval,
		"$instance", ".*", "$uuid", ".*", "$pid", ".*",
	)
	return r.Replace(expr)
}

// requireTool finds a server or tool binary: a test fails without it when
// VRAM_REQUIRE_ALL=1 (CI), and skips with the reason otherwise.
func requireTool(t testing.TB, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := "none of " + strings.Join(names, ", ") + " is installed (Debian: apt-get install prometheus prometheus-alertmanager; scripts/test.sh installs them)"
	testenv.Unavailable(t, "%s", msg)
	return ""
}
