package deploy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"

	"github.com/vram-exporter/vram_exporter/leak/trend"
)

// Test scale. The end-to-end test runs the shipped rules file in a real Prometheus after
// one mechanical transformation, scaleRules: every duration in it (each rule's "for",
// every range selector, subquery range and step, and offset) is divided by
// timeScale, with a floor of 1s; thresholds, numbers and annotations are untouched. So a
// 15m "for" becomes 15s and a [1h] range [1m]. deploy/README.md documents it.
const timeScale = 60

func scaleDuration(d time.Duration) time.Duration {
	if d == 0 {
		return 0
	}
	return max(d/timeScale, time.Second)
}

func scaleRules(t *testing.T, rf ruleFile) ruleFile {
	t.Helper()
	out := ruleFile{}
	for _, g := range rf.Groups {
		ng := ruleGroup{Name: g.Name}
		for _, r := range g.Rules {
			e, err := parseExpr(r.Expr)
			if err != nil {
				t.Fatalf("%s%s: %v", r.Record, r.Alert, err)
			}
			parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
				switch n := n.(type) {
				case *parser.MatrixSelector:
					if n.RangeExpr != nil {
						t.Fatalf("%s: duration expressions are not scaled", r.Alert)
					}
					n.Range = scaleDuration(n.Range)
				case *parser.SubqueryExpr:
					if n.RangeExpr != nil || n.StepExpr != nil || n.OriginalOffsetExpr != nil {
						t.Fatalf("%s: duration expressions are not scaled", r.Alert)
					}
					n.Range, n.Step, n.OriginalOffset = scaleDuration(n.Range), scaleDuration(n.Step), scaleDuration(n.OriginalOffset)
				case *parser.VectorSelector:
					if n.OriginalOffsetExpr != nil {
						t.Fatalf("%s: duration expressions are not scaled", r.Alert)
					}
					n.OriginalOffset = scaleDuration(n.OriginalOffset)
				}
				return nil
			})
			r.Expr = e.String()
			if r.For != "" {
				d, err := model.ParseDuration(r.For)
				if err != nil {
					t.Fatal(err)
				}
				r.For = model.Duration(scaleDuration(time.Duration(d))).String()
			}
			ng.Rules = append(ng.Rules, r)
		}
		out.Groups = append(out.Groups, ng)
	}
	return out
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// proc is a server or client the test started; its output is kept for failure reports
// and it is stopped (SIGTERM, then SIGKILL) at the end of the test.
type proc struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func startProc(t *testing.T, name string, stdout io.Writer, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Stderr = p
	p.cmd.Stdout = p
	if stdout != nil {
		p.cmd.Stdout = stdout
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			out := p.output()
			if len(out) > 6000 {
				out = "…" + out[len(out)-6000:]
			}
			t.Logf("--- %s output (tail):\n%s", name, out)
		}
	})
	return p
}

func waitHTTP(t *testing.T, p *proc, u string, deadline time.Time) {
	t.Helper()
	for {
		resp, err := http.Get(u)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited before %s answered:\n%s", p.name, u, p.output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s did not answer 200 in time", p.name, u)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func writeFile(t *testing.T, path string, v any) {
	t.Helper()
	var b []byte
	switch v := v.(type) {
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = yaml.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// leakScript is a leaking serving process at an accelerated rate: the real Python client
// pushing a torch pool whose allocated bytes rise 4 MiB every 100 ms (reserved follows
// with a constant cache). It exits when its stdin closes.
const leakScript = `
import os, sys, threading, time
import vram_exporter_client as vc
threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
uuid = "GPU-11111111-2222-3333-4444-555555555555"
r = vc.Reporter(socket_path=sys.argv[1], interval=0.1, labels={"service": "e2e-leak"}, runtime="torch", sources=[])
alloc = 64 << 20
r.set_pool(uuid, "torch", allocated=alloc, reserved=alloc + (256 << 20))
r.start()
print("ready", os.getpid(), flush=True)
while True:
    time.sleep(0.1)
    alloc += 4 << 20
    r.set_pool(uuid, "torch", allocated=alloc, reserved=alloc + (256 << 20))
`

// The exporter's leak engine at test scale: 1 s buckets, 20 s / 40 s windows, 5 s
// warm-up and minimum duration (config/config.go validates these).
const trendConfig = `
trend:
  bucket: 1s
  short_window: 20s
  long_window: 40s
  warm_up: 5s
  min_duration: 5s
`

type amWebhook struct {
	Status string `json:"status"`
	Alerts []struct {
		Status      string            `json:"status"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"alerts"`
}

// TestRealPrometheusAndAlertmanager runs the shipped rules (at test scale) in a real
// Prometheus that scrapes the real exporter every second while the real Python client
// simulates a leaking process, and checks that the leak alert reaches a real
// Alertmanager (and its webhook), that every dashboard query returns data, and that
// promtool check metrics passes on the live /metrics. A second target serves the
// exporter's real collectors over a fake NVML node (CI has no GPU) so that the GPU
// panels have data too.
func TestRealPrometheusAndAlertmanager(t *testing.T) {
	promBin := requireTool(t, "prometheus")
	amBin := requireTool(t, "prometheus-alertmanager", "alertmanager")
	promtool := requireTool(t, "promtool")
	python := requireTool(t, "python3")
	if testing.Short() {
		t.Skip("-short: the real-server end-to-end test takes about a minute")
	}
	dir := t.TempDir()

	// The exporter binary, built from this checkout.
	bin := filepath.Join(dir, "vram_exporter")
	build := exec.Command("go", "build", "-o", bin, "../cmd/vram_exporter")
	build.Env = append(os.Environ(), "CGO_ENABLED=1", "CGO_CFLAGS=-Wno-deprecated-declarations")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// From here on every wait shares one bound (the leak alert arrives in about 30 s).
	deadline := time.Now().Add(4 * time.Minute)
	writeFile(t, filepath.Join(dir, "vram.yml"), trendConfig)
	socket := filepath.Join(dir, "run", "push.sock")
	exporter := startProc(t, "vram_exporter", nil, bin,
		"--web.listen-address=127.0.0.1:0", "--log.format=json",
		"--nvml.library-path="+filepath.Join(dir, "no-such-libnvidia-ml.so.1"), "--nvml.poll-interval=100ms",
		"--push.socket="+socket, "--push.ttl=5s", "--config.file="+filepath.Join(dir, "vram.yml"))
	exporterAddr := waitExporterAddr(t, exporter)

	// A second target: the exporter's real collectors over a fake NVML node.
	fake := httptest.NewServer(promhttp.HandlerFor(fixtureRegistry(t, trend.Steady), promhttp.HandlerOpts{}))
	t.Cleanup(fake.Close)
	fakeAddr := strings.TrimPrefix(fake.URL, "http://")

	// Alertmanager, sending to a webhook in this test.
	hooks := make(chan amWebhook, 100)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m amWebhook
		if err := json.NewDecoder(r.Body).Decode(&m); err == nil {
			hooks <- m
		}
	}))
	t.Cleanup(hook.Close)
	amAddr := freePort(t)
	writeFile(t, filepath.Join(dir, "alertmanager.yml"), fmt.Sprintf(`
route:
  receiver: test
  group_by: [alertname, instance, pid]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: test
    webhook_configs:
      - url: %s/
        send_resolved: false
`, hook.URL))
	am := startProc(t, "alertmanager", nil, amBin, "--config.file="+filepath.Join(dir, "alertmanager.yml"),
		"--storage.path="+filepath.Join(dir, "am-data"), "--web.listen-address="+amAddr, "--cluster.listen-address=")
	waitHTTP(t, am, "http://"+amAddr+"/-/ready", deadline)

	// A kube-state-metrics stand-in that names the fixture process's pod, scraped by both
	// Prometheus servers, so the pod join runs in a real Prometheus.
	ksm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# HELP kube_pod_container_info Information about a container in a pod.\n# TYPE kube_pod_container_info gauge\n"+
			"kube_pod_container_info{namespace=%q,pod=%q,uid=%q,container=%q,image_spec=\"registry.example/server:1\",image=\"registry.example/server:1\",image_id=\"registry.example/server@sha256:0\",container_id=%q} 1\n",
			e2ePodNamespace, e2ePod, fixturePodUID, e2eContainer, fixtureContainerID)
	}))
	t.Cleanup(ksm.Close)

	// Prometheus with the shipped rules at test scale.
	scaled := scaleRules(t, loadRules(t))
	rulesFile := filepath.Join(dir, "vram_exporter.rules.yml")
	writeFile(t, rulesFile, scaled)
	if out, err := exec.Command(promtool, "check", "rules", rulesFile).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules on the test-scale rules: %v\n%s", err, out)
	}
	promAddr := freePort(t)
	writeFile(t, filepath.Join(dir, "prometheus.yml"), fmt.Sprintf(`
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [%q]
alerting:
  alertmanagers:
    - static_configs:
        - targets: [%q]
scrape_configs:
  - job_name: vram_exporter
    static_configs:
      - targets: [%q, %q]
  - job_name: kube-state-metrics
    honor_labels: true
    static_configs:
      - targets: [%q]
`, rulesFile, amAddr, exporterAddr, fakeAddr, strings.TrimPrefix(ksm.URL, "http://")))
	prom := startProc(t, "prometheus", nil, promBin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "prom-data"), "--web.listen-address="+promAddr)
	waitHTTP(t, prom, "http://"+promAddr+"/-/ready", deadline)

	// A second Prometheus with NO rules loaded, the way a user who only imports the
	// dashboards has it: every dashboard query must fill from raw series alone.
	bareAddr := freePort(t)
	writeFile(t, filepath.Join(dir, "prometheus-bare.yml"), fmt.Sprintf(`
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: vram_exporter
    static_configs:
      - targets: [%q, %q]
  - job_name: kube-state-metrics
    honor_labels: true
    static_configs:
      - targets: [%q]
`, exporterAddr, fakeAddr, strings.TrimPrefix(ksm.URL, "http://")))
	bare := startProc(t, "prometheus-bare", nil, promBin, "--config.file="+filepath.Join(dir, "prometheus-bare.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "prom-bare-data"), "--web.listen-address="+bareAddr)
	waitHTTP(t, bare, "http://"+bareAddr+"/-/ready", deadline)

	// The leaking process.
	clientDir, _ := filepath.Abs("../client/python")
	pyOut, pyW := io.Pipe()
	py := exec.Command(python, "-c", leakScript, socket)
	py.Env = append(os.Environ(), "PYTHONPATH="+clientDir, "PYTHONUNBUFFERED=1")
	py.Stdout = pyW
	py.Stderr = os.Stderr
	pyIn, err := py.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := py.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pyIn.Close(); _ = py.Process.Kill(); _ = py.Wait() })
	sc := bufio.NewScanner(pyOut)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "ready ") {
		t.Fatalf("python client did not start: %q", sc.Text())
	}
	pid := strings.TrimPrefix(sc.Text(), "ready ")
	go func() { _, _ = io.Copy(io.Discard, pyOut) }()
	start := time.Now()
	t.Logf("servers up: exporter %s, fake GPU node %s, prometheus %s, alertmanager %s; leaking python pid %s", exporterAddr, fakeAddr, promAddr, amAddr, pid)

	// The leak alert reaches Alertmanager's webhook.
	var got map[string]string
	var gotAnn map[string]string
	seen := map[string]bool{}
	for got == nil {
		select {
		case m := <-hooks:
			for _, a := range m.Alerts {
				seen[a.Labels["alertname"]] = true
				if a.Labels["alertname"] == "VRAMProcessLeak" && a.Labels["pid"] == pid && a.Status == "firing" {
					got, gotAnn = a.Labels, a.Annotations
				}
			}
		case <-time.After(time.Until(deadline)):
			verdicts := query(t, promAddr, `vram_leak_verdict{pid="`+pid+`"} == 1`)
			alerts := query(t, promAddr, `ALERTS`)
			t.Fatalf("VRAMProcessLeak for pid %s did not reach Alertmanager; webhooks saw %v; verdict %v; ALERTS %v", pid, seen, verdicts, alerts)
		}
	}
	t.Logf("VRAMProcessLeak for pid %s reached Alertmanager's webhook %s after the leak started: labels %v; description %q",
		pid, time.Since(start).Round(time.Second), got, gotAnn["description"])
	if got["severity"] != "warning" || got["verdict"] != "leak" || !strings.Contains(gotAnn["description"], "pid "+pid) ||
		!strings.Contains(gotAnn["runbook_url"], "docs/runbook.md#vramprocessleak") {
		t.Errorf("leak alert labels %v annotations %v", got, gotAnn)
	}
	// Alertmanager's own API lists it too.
	resp, err := http.Get("http://" + amAddr + "/api/v2/alerts?filter=" + url.QueryEscape(`alertname="VRAMProcessLeak"`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !strings.Contains(string(body), `"pid":"`+pid+`"`) {
		t.Errorf("Alertmanager API does not list the leak alert for pid %s: %s", pid, body)
	}

	// Every dashboard query, and every variable's selector, returns data from the
	// Prometheus WITHOUT rules; only a panel of firing alerts (ALERTS alone) needs the
	// alerting rules, and is asked of the Prometheus that has them.
	n, onRules := 0, 0
	for _, d := range loadDashboards(t) {
		for _, v := range d.Templating.List {
			if v.Type == "query" {
				if res := query(t, bareAddr, labelValuesSelector(v.Definition)); len(res) == 0 {
					t.Errorf("%s variable %s: %s returned no data without rules", d.UID, v.Name, v.Definition)
				}
				n++
			}
		}
		for _, p := range d.allPanels() {
			for _, tg := range p.Targets {
				q := dashboardVars(tg.Expr, "30s")
				addr, where := bareAddr, "without rules"
				if onlyAlerts(t, q) {
					addr, where = promAddr, "with the alerting rules"
					onRules++
				}
				if res := query(t, addr, q); len(res) == 0 {
					t.Errorf("%s panel %q target %s returned no data %s: %s", d.UID, p.Title, tg.RefID, where, q)
				}
				n++
			}
		}
	}
	t.Logf("%d dashboard queries returned data, %d of them from a Prometheus without rules", n, n-onRules)

	// The pod join in a real Prometheus: the process table names the fixture process's
	// pod (from the kube-state-metrics stand-in) and keeps the real exporter's python
	// process, which runs outside any container, with an empty pod.
	var table string
	for _, d := range loadDashboards(t) {
		for _, p := range d.allPanels() {
			if d.UID == "vram-process" && p.Title == "Process" {
				table = dashboardVars(p.Targets[0].Expr, "30s")
			}
		}
	}
	rows := queryLabels(t, bareAddr, table)
	podOf := map[string]string{}
	for _, r := range rows {
		if podOf[r["instance"]+"/"+r["pid"]] != "" {
			t.Errorf("process table: two rows for pid %s on %s: %v", r["pid"], r["instance"], rows)
		}
		podOf[r["instance"]+"/"+r["pid"]] = r["namespace"] + "/" + r["pod"] + "/" + r["container"] + "."
	}
	if got, want := podOf[fakeAddr+"/4242"], e2ePodNamespace+"/"+e2ePod+"/"+e2eContainer+"."; got != want {
		t.Errorf("process table: pid 4242 of the fixture node is in %q, want %q: %v", got, want, rows)
	}
	if got := podOf[exporterAddr+"/"+pid]; got != "//." {
		t.Errorf("process table: the python process (pid %s, no container) is in %q, want no pod: %v", pid, got, rows)
	}
	t.Logf("process table without rules: %v", podOf)

	// The recording rule the alerts use agrees with the dashboards' inline join.
	recorded := map[string]string{}
	for _, r := range queryLabels(t, promAddr, "instance_pid:vram_process_info:pod") {
		recorded[r["instance"]+"/"+r["pid"]] = r["namespace"] + "/" + r["pod"] + "/" + r["container"] + "."
	}
	for k, v := range podOf {
		if recorded[k] != v {
			t.Errorf("instance_pid:vram_process_info:pod says %s is in %q, the dashboards' join %q", k, recorded[k], v)
		}
	}

	// promtool check metrics on the live exposition of the real exporter.
	resp, err = http.Get("http://" + exporterAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	live, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	check := exec.CommandContext(ctx, promtool, "check", "metrics")
	check.Stdin = bytes.NewReader(live)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics on the live /metrics: %v\n%s", err, out)
	}
	t.Logf("promtool check metrics: clean on %d bytes of live /metrics; alerts seen by Alertmanager's webhook: %v", len(live), keysOf(seen))
}

// The pod the kube-state-metrics stand-in gives the fixture node's container.
const (
	e2ePodNamespace    = "serving"
	e2ePod             = "llm-0"
	e2eContainer       = "server"
	fixturePodUID      = "0f8b6a3e-1111-2222-3333-444455556666"
	fixtureContainerID = "containerd://abababababababababababababababababababababababababababababababab"
)

// onlyAlerts says whether a query selects nothing but ALERTS, which only alerting rules make.
func onlyAlerts(t *testing.T, q string) bool {
	t.Helper()
	e, err := parseExpr(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	for _, s := range selectors(e) {
		if s.metric != "ALERTS" {
			return false
		}
	}
	return true
}

// queryLabels runs an instant query and returns each result's labels.
func queryLabels(t *testing.T, promAddr, q string) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, raw := range query(t, promAddr, q) {
		var r struct {
			Metric map[string]string `json:"metric"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("query %s: %v", q, err)
		}
		out = append(out, r.Metric)
	}
	return out
}

func keysOf(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// waitExporterAddr reads the exporter's JSON log until it says where it listens.
func waitExporterAddr(t *testing.T, p *proc) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		sc := bufio.NewScanner(strings.NewReader(p.output()))
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "listening" {
				if a, ok := m["address"].(string); ok {
					return a
				}
			}
		}
		select {
		case <-p.done:
			t.Fatalf("exporter exited before listening:\n%s", p.output())
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("exporter did not log its address:\n%s", p.output())
	return ""
}

func query(t *testing.T, promAddr, q string) []json.RawMessage {
	t.Helper()
	resp, err := http.Get("http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	if r.Status != "success" {
		t.Errorf("query %s: %s", q, r.Error)
	}
	return r.Data.Result
}
