package helm

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"

	"github.com/vram-exporter/vram_exporter/deploy/internal/k8sdecode"
)

var update = flag.Bool("update", false, "rewrite the goldens, the chart's copies of the rules and dashboards, and deploy/kubernetes from the chart")

const (
	chartDir    = "vram-exporter"
	releaseName = "vram-exporter"
	releaseNS   = "vram-exporter"
)

// The chart's copies of files that live elsewhere in the repository: Helm's .Files sees
// only the chart's own directory.
var copies = map[string]string{
	"../prometheus/vram_exporter.rules.yml": chartDir + "/files/vram_exporter.rules.yml",
	"../../dashboards/vram-fleet.json":      chartDir + "/files/dashboards/vram-fleet.json",
	"../../dashboards/vram-gpu.json":        chartDir + "/files/dashboards/vram-gpu.json",
	"../../dashboards/vram-process.json":    chartDir + "/files/dashboards/vram-process.json",
}

// TestChartCopiesMatchSources keeps the chart's rules and dashboards byte-equal to the
// files the rest of the project tests (deploy/prometheus, dashboards/).
func TestChartCopiesMatchSources(t *testing.T) {
	if *update {
		for src, dst := range copies {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for src, dst := range copies {
		want, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(dst)
		if err != nil {
			t.Fatalf("%v; create it with go test ./deploy/helm -update", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s; copy it with go test ./deploy/helm -update", dst, src)
		}
	}
	dash, err := filepath.Glob(chartDir + "/files/dashboards/*.json")
	if err != nil {
		t.Fatal(err)
	}
	src, err := filepath.Glob("../../dashboards/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(dash) != len(src) {
		t.Errorf("the chart has %d dashboards, dashboards/ has %d: add the new one to copies", len(dash), len(src))
	}
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	return ch
}

func readValues(t *testing.T, file string) map[string]any {
	t.Helper()
	if file == "" {
		return map[string]any{}
	}
	v, err := chartutil.ReadValuesFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return v.AsMap()
}

// render is `helm template` through Helm's engine: schema validation, strict templates
// (a misspelt value is an error), the prometheus-operator CRDs known to the cluster.
func render(t *testing.T, vals map[string]any) (map[string]string, error) {
	t.Helper()
	ch := loadChart(t)
	caps := chartutil.DefaultCapabilities.Copy()
	caps.APIVersions = append(caps.APIVersions, "monitoring.coreos.com/v1")
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{
		Name: releaseName, Namespace: releaseNS, Revision: 1, IsInstall: true,
	}, caps)
	if err != nil {
		return nil, err
	}
	return engine.Engine{Strict: true}.Render(ch, rv)
}

func mustRender(t *testing.T, vals map[string]any) map[string]string {
	t.Helper()
	out, err := render(t, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return out
}

// manifest is what `helm template` prints: each template's documents with a Source line,
// templates in name order, empty ones left out.
func manifest(out map[string]string) string {
	var names []string
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	var sb strings.Builder
	for _, n := range names {
		if strings.HasSuffix(n, "NOTES.txt") || strings.HasPrefix(filepath.Base(n), "_") {
			continue
		}
		for _, doc := range k8sdecode.Docs(out[n]) {
			fmt.Fprintf(&sb, "---\n# Source: %s\n%s\n", n, strings.Trim(doc, "\n"))
		}
	}
	return sb.String()
}

// decodeStrictly decodes every document into its Kubernetes or prometheus-operator type;
// an unknown or misspelt field is an error. Keys are Kind/name.
func decodeStrictly(t *testing.T, text string) map[string]any {
	t.Helper()
	objs, err := k8sdecode.Strict(text)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func get[T any](t *testing.T, objs map[string]any, key string) T {
	t.Helper()
	o, ok := objs[key].(T)
	if !ok {
		var have []string
		for k := range objs {
			have = append(have, k)
		}
		sort.Strings(have)
		t.Fatalf("%s not rendered (have %v)", key, have)
	}
	return o
}

// variants are the values the goldens and the lint cover: the defaults (device plugin)
// and every part on for each kind of cluster.
var variants = []struct{ name, values string }{
	{"default", ""},
	{"full-gpu-operator", "testdata/full-gpu-operator.values.yaml"},
	{"full-device-plugin", "testdata/full-device-plugin.values.yaml"},
	{"plain-manifests", "plain-manifests.values.yaml"},
}

func TestLint(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			l := lint.AllWithKubeVersion(chartDir, readValues(t, v.values), releaseNS, nil)
			for _, m := range l.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("lint: %s", m)
				} else {
					t.Logf("lint: %s", m)
				}
			}
		})
	}
}

// TestGoldens compares what each variant renders with testdata/<name>.golden.yaml
// (rewrite with -update and read the diff) after decoding every object strictly.
func TestGoldens(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			got := manifest(mustRender(t, readValues(t, v.values)))
			decodeStrictly(t, got)
			golden := filepath.Join("testdata", v.name+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v; create it with -update", err)
			}
			if got != string(want) {
				t.Errorf("rendering differs from %s; if the change is meant, rewrite it with go test ./deploy/helm -update and review the diff", golden)
			}
		})
	}
}
