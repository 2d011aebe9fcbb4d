package helm

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vram-exporter/vram_exporter/deploy/internal/k8sdecode"
)

const plainValues = "plain-manifests.values.yaml"

// plainFiles maps a chart template to the plain manifest rendered from it. The example
// serving Deployment is not the chart's: it stays hand-written.
var plainFiles = map[string]string{
	"vram-exporter/templates/namespace.yaml":      "namespace.yaml",
	"vram-exporter/templates/serviceaccount.yaml": "serviceaccount.yaml",
	"vram-exporter/templates/daemonset.yaml":      "daemonset.yaml",
	"vram-exporter/templates/service.yaml":        "service.yaml",
	"vram-exporter/templates/servicemonitor.yaml": "servicemonitor.yaml",
	"vram-exporter/templates/prometheusrule.yaml": "prometheusrule.yaml",
}

// Helm's bookkeeping labels would be false on objects applied with kubectl.
var helmOnlyLabels = regexp.MustCompile(`(?m)^\s*(helm\.sh/chart|app\.kubernetes\.io/managed-by): .*\n`)

const plainHeader = "# Generated from the Helm chart deploy/helm/vram-exporter with\n" +
	"# deploy/helm/" + plainValues + " by\n" +
	"#   go test ./deploy/helm -run TestPlainManifests -update\n" +
	"# Edit the chart (or those values), not this file.\n"

// TestPlainManifests keeps deploy/kubernetes/*.yaml exactly what the chart renders with
// plain-manifests.values.yaml, less Helm's own labels, so the two cannot drift.
func TestPlainManifests(t *testing.T) {
	out := mustRender(t, readValues(t, plainValues))
	for tpl, file := range plainFiles {
		body, ok := out[tpl]
		if !ok || k8sdecode.Blank(body) {
			t.Fatalf("%s renders nothing with %s", tpl, plainValues)
		}
		got := plainHeader + helmOnlyLabels.ReplaceAllString(strings.TrimLeft(body, "\n"), "")
		if !strings.HasSuffix(got, "\n") {
			got += "\n"
		}
		path := filepath.Join("..", "kubernetes", file)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("deploy/kubernetes/%s is not what the chart renders; regenerate with go test ./deploy/helm -run TestPlainManifests -update", file)
		}
		if helmOnlyLabels.MatchString(got) {
			t.Errorf("%s keeps a Helm-only label", file)
		}
		decodeStrictly(t, got)
	}
	// Every chart object the plain values render has its plain file: a new template is
	// either added to plainFiles or rendered off by plain-manifests.values.yaml.
	for tpl, body := range out {
		if _, ok := plainFiles[tpl]; !ok && !k8sdecode.Blank(body) && !strings.HasSuffix(tpl, "NOTES.txt") {
			t.Errorf("%s renders objects with %s but has no plain manifest", tpl, plainValues)
		}
	}
}
