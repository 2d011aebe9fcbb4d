package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// promSynthetic are series Prometheus itself makes, which rules and panels may use.
var promSynthetic = map[string]bool{"up": true, "ALERTS": true}

// identityLabels are added by Prometheus (target labels), not by the exporter.
var targetLabels = map[string]bool{"instance": true, "job": true}

// foreignMetrics are other exporters' series the rules and dashboards may join, with
// the labels they carry: kube-state-metrics' kube_pod_container_info names a container
// ID's namespace, pod and container (scraped with honor_labels, so the labels are its own).
var foreignMetrics = map[string]map[string]bool{
	"kube_pod_container_info": {"namespace": true, "pod": true, "uid": true, "container": true,
		"image_spec": true, "image": true, "image_id": true, "container_id": true},
}

// checkExpr parses expr and checks that every metric it selects is produced by the
// exporter or by a recording rule, with labels that metric has.
func checkExpr(t *testing.T, where, expr string, exported map[string]map[string]bool, recorded map[string]bool) {
	t.Helper()
	e, err := parseExpr(expr)
	if err != nil {
		t.Errorf("%s: %q does not parse: %v", where, expr, err)
		return
	}
	sels := selectors(e)
	if len(sels) == 0 {
		t.Errorf("%s: %q selects no metric", where, expr)
	}
	for _, s := range sels {
		switch {
		case s.metric == "":
			t.Errorf("%s: a selector without a metric name in %q", where, expr)
		case promSynthetic[s.metric] || recorded[s.metric]:
		case foreignMetrics[s.metric] != nil:
			for _, l := range s.labels {
				if !targetLabels[l] && !foreignMetrics[s.metric][l] {
					t.Errorf("%s: %s has no label %q", where, s.metric, l)
				}
			}
		case exported[s.metric] == nil:
			t.Errorf("%s: metric %s is neither produced by the exporter nor recorded by a rule", where, s.metric)
		default:
			for _, l := range s.labels {
				if !targetLabels[l] && !exported[s.metric][l] && !exported[s.metric][anyLabel] {
					t.Errorf("%s: %s has no label %q", where, s.metric, l)
				}
			}
		}
	}
}

func recordedNames(rf ruleFile) map[string]bool {
	out := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				out[r.Record] = true
			}
		}
	}
	return out
}

func TestRulesParseAndUseExporterMetrics(t *testing.T) {
	rf := loadRules(t)
	exported := exporterMetrics(t)
	recorded := recordedNames(rf)
	alerts := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if (r.Record == "") == (r.Alert == "") {
				t.Errorf("group %s: a rule must be exactly one of record or alert: %+v", g.Name, r)
			}
			checkExpr(t, g.Name+"/"+r.Record+r.Alert, r.Expr, exported, recorded)
			if r.For != "" {
				if _, err := model.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
				}
			}
			if r.Alert != "" {
				alerts++
			}
		}
	}
	// Every family the issue asks for.
	for _, want := range []string{"VRAMGPUMemoryFillingUp", "VRAMProcessLeak", "VRAMUnattributedGrowth", "VRAMCacheGrowth",
		"VRAMAllocatorOOM", "VRAMAllocatorRetries", "VRAMExporterDown", "VRAMExporterAbsent", "VRAMNVMLDown", "VRAMPushRejections"} {
		if !hasAlert(rf, want) {
			t.Errorf("alert %s is missing", want)
		}
	}
	t.Logf("%d rules (%d alerts, %d recording rules) parse and select only exported or recorded metrics", alerts+len(recorded), alerts, len(recorded))
}

func hasAlert(rf ruleFile, name string) bool {
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == name {
				return true
			}
		}
	}
	return false
}

func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(runbookPath)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			// GitHub's anchor: lower case, spaces to dashes, punctuation dropped.
			a := strings.ToLower(strings.TrimSpace(h))
			a = regexp.MustCompile(`[^a-z0-9 _-]`).ReplaceAllString(a, "")
			out[strings.ReplaceAll(a, " ", "-")] = true
		}
	}
	return out
}

func TestAlertsHaveSeverityAnnotationsAndRunbooks(t *testing.T) {
	rf := loadRules(t)
	anchors := runbookAnchors(t)
	// Alerts about one process must name it, its container and its GPU; alerts about a
	// GPU must name the GPU and the largest process on it.
	// Both name the pod (namespace, pod, container) where kube-state-metrics knows it.
	perProcess := []string{"$labels.pid", "$labels.comm", "$labels.container_id", "$labels.uuid", "$labels.gpu", "$labels.name", "$labels.instance",
		".Labels.namespace", ".Labels.pod", ".Labels.container"}
	perGPU := []string{"$labels.uuid", "$labels.gpu", "$labels.name", "$labels.instance", ".Labels.comm", ".Labels.pid", ".Labels.container_id",
		".Labels.namespace", ".Labels.pod", ".Labels.container"}
	// A per-process alert's summary names the pod when known, else comm and pid.
	perProcessSummary := []string{"$labels.pid", "$labels.comm", ".Labels.namespace", ".Labels.pod", ".Labels.container"}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			switch r.Labels["severity"] {
			case "info", "warning", "critical":
			default:
				t.Errorf("%s: severity %q, want info, warning or critical", r.Alert, r.Labels["severity"])
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s: annotation %s missing", r.Alert, a)
				}
			}
			anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], runbookURLBase)
			if !ok || !anchors[anchor] {
				t.Errorf("%s: runbook_url %q is not a heading of docs/runbook.md (%s...)", r.Alert, r.Annotations["runbook_url"], runbookURLBase)
			}
			if anchor != strings.ToLower(r.Alert) {
				t.Errorf("%s: runbook anchor %q, want #%s", r.Alert, anchor, strings.ToLower(r.Alert))
			}
			var must []string
			e, err := parseExpr(r.Expr)
			if err != nil {
				continue // reported by TestRulesParseAndUseExporterMetrics
			}
			for _, s := range selectors(e) {
				switch {
				case strings.HasPrefix(s.metric, "vram_leak_verdict"), strings.HasPrefix(s.metric, "vram_runtime_"):
					must = perProcess
				case strings.HasPrefix(s.metric, "vram_gpu_memory") && must == nil:
					must = perGPU
				}
			}
			for _, m := range must {
				if !strings.Contains(r.Annotations["description"], m) {
					t.Errorf("%s: description does not name %s", r.Alert, m)
				}
			}
			if len(must) > 0 && must[0] == perProcess[0] {
				for _, m := range perProcessSummary {
					if !strings.Contains(r.Annotations["summary"], m) {
						t.Errorf("%s: summary does not name %s", r.Alert, m)
					}
				}
			}
			if must == nil && !strings.HasPrefix(r.Expr, "absent(") && !strings.Contains(r.Annotations["description"], "$labels.instance") {
				t.Errorf("%s: description does not name the node ($labels.instance)", r.Alert)
			}
		}
	}
}

// promtoolTestFile lists the keys of a promtool rule test file that promtool 2.x (2.42,
// Debian 12) and 3.x both accept; decoding strictly into it rejects any other key.
type promtoolTestFile struct {
	RuleFiles          []string `yaml:"rule_files"`
	EvaluationInterval string   `yaml:"evaluation_interval"`
	GroupEvalOrder     []string `yaml:"group_eval_order"`
	Tests              []struct {
		Name        string `yaml:"name"`
		Interval    string `yaml:"interval"`
		InputSeries []struct {
			Series string `yaml:"series"`
			Values string `yaml:"values"`
		} `yaml:"input_series"`
		AlertRuleTest []struct {
			EvalTime  string `yaml:"eval_time"`
			Alertname string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels      map[string]string `yaml:"exp_labels"`
				ExpAnnotations map[string]string `yaml:"exp_annotations"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
		PromqlExprTest []struct {
			Expr       string `yaml:"expr"`
			EvalTime   string `yaml:"eval_time"`
			ExpSamples []struct {
				Labels string  `yaml:"labels"`
				Value  float64 `yaml:"value"`
			} `yaml:"exp_samples"`
		} `yaml:"promql_expr_test"`
		ExternalLabels map[string]string `yaml:"external_labels"`
		ExternalURL    string            `yaml:"external_url"`
	} `yaml:"tests"`
}

func promtoolTestFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("prometheus/tests/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no promtool tests in prometheus/tests: %v", err)
	}
	sort.Strings(files)
	return files
}

func TestPromtoolTestFilesUsePortableKeysAndCoverEveryAlert(t *testing.T) {
	rf := loadRules(t)
	fired := map[string]bool{}
	silent := map[string]int{}
	for _, f := range promtoolTestFiles(t) {
		var tf promtoolTestFile
		decodeStrictYAML(t, f, &tf)
		for _, tg := range tf.Tests {
			if tg.Name == "" {
				t.Errorf("%s: a test group without a name", f)
			}
			for _, a := range tg.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					fired[a.Alertname] = true
				} else {
					silent[a.Alertname]++
				}
			}
			for _, s := range tg.InputSeries {
				checkExpr(t, f, s.Series, exporterMetricsWithUp(t), nil)
			}
		}
	}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if !fired[r.Alert] {
				t.Errorf("no promtool test makes %s fire", r.Alert)
			}
			if silent[r.Alert] == 0 {
				t.Errorf("no promtool test checks that %s stays silent on a look-alike", r.Alert)
			}
		}
	}
}

var exportedCache map[string]map[string]bool

func exporterMetricsWithUp(t *testing.T) map[string]map[string]bool {
	if exportedCache == nil {
		exportedCache = exporterMetrics(t)
	}
	return exportedCache
}

func TestPromtool(t *testing.T) {
	promtool := requireTool(t, "promtool")
	out, err := exec.Command(promtool, "check", "rules", rulesPath).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"test", "rules"}, promtoolTestFiles(t)...)
	out, err = exec.CommandContext(ctx, promtool, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
