package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/vram-exporter/vram_exporter/deploy/internal/k8sdecode"
)

const prometheusRulePath = "kubernetes/prometheusrule.yaml"

// decodeManifests splits every YAML file under kubernetes/ into documents and decodes
// each strictly (unknown or misspelt fields are errors) into its Kubernetes API type.
func decodeManifests(t *testing.T) map[string]any {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	sort.Strings(files)
	out := map[string]any{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := k8sdecode.Strict(string(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for k, o := range objs {
			if _, dup := out[k]; dup {
				t.Fatalf("%s: %s is in another manifest too", f, k)
			}
			out[k] = o
		}
	}
	return out
}

func get[T any](t *testing.T, objs map[string]any, key string) T {
	t.Helper()
	o, ok := objs[key].(T)
	if !ok {
		t.Fatalf("manifest %s missing (have %v)", key, keys(objs))
	}
	return o
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestManifestsDecodeStrictly(t *testing.T) {
	objs := decodeManifests(t)
	t.Logf("decoded strictly: %v", keys(objs))
}

func TestDaemonSet(t *testing.T) {
	objs := decodeManifests(t)
	ds := get[*appsv1.DaemonSet](t, objs, "DaemonSet/vram-exporter")
	ps := ds.Spec.Template.Spec
	if !ps.HostPID {
		t.Error("hostPID must be true: NVML and the push socket speak host PIDs")
	}
	if ps.RuntimeClassName == nil || *ps.RuntimeClassName != "nvidia" {
		t.Error("runtimeClassName nvidia is needed for libnvidia-ml.so.1")
	}
	if len(ps.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(ps.Containers))
	}
	c := ps.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"--path.procfs=/host/proc", "--push.socket=/run/vram_exporter/push.sock", "--web.listen-address=:10090"} {
		if !strings.Contains(args, want) {
			t.Errorf("args lack %s", want)
		}
	}
	checkFlagsDocumented(t, "DaemonSet", c.Args)
	vols := map[string]corev1.Volume{}
	for _, v := range ps.Volumes {
		vols[v.Name] = v
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	if m, ok := mounts["/host/proc"]; !ok || !m.ReadOnly || vols[m.Name].HostPath == nil || vols[m.Name].HostPath.Path != "/proc" {
		t.Error("the host's /proc must be mounted read-only at /host/proc")
	}
	m, ok := mounts["/run/vram_exporter"]
	if !ok || vols[m.Name].HostPath == nil || vols[m.Name].HostPath.Path != "/run/vram_exporter" {
		t.Fatal("the socket directory must be the hostPath /run/vram_exporter")
	}
	sc := c.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
		!reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("container securityContext is not tight: %+v", sc)
	}
	if ps.SecurityContext == nil || ps.SecurityContext.SeccompProfile == nil || ps.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("pod seccompProfile RuntimeDefault missing")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Error("resources: cpu and memory requests and a memory limit are required")
	}
	if _, gpu := c.Resources.Limits["nvidia.com/gpu"]; gpu {
		t.Error("the daemon must not request a GPU (it would take one from the scheduler)")
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Port != intstr.FromString("metrics") {
			t.Errorf("%s probe must be an HTTP GET on the metrics port", name)
		}
	}
	for _, ic := range ps.InitContainers {
		isc := ic.SecurityContext
		if isc == nil || isc.AllowPrivilegeEscalation == nil || *isc.AllowPrivilegeEscalation || isc.Capabilities == nil ||
			!reflect.DeepEqual(isc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("init container %s: securityContext must drop ALL and forbid escalation", ic.Name)
		}
		// The socket directory: the push group must traverse it to reach the socket, and
		// must not write it (a pod could unlink the socket and bind its own).
		if m := regexp.MustCompile(`chmod (\d+) /run/vram_exporter`).FindStringSubmatch(strings.Join(ic.Command, " ")); m != nil {
			mode, err := strconv.ParseUint(m[1], 8, 32)
			if err != nil || mode&0o022 != 0 || mode&0o010 == 0 {
				t.Errorf("init container %s: socket directory mode %s must let the group traverse (g+x) and give nobody but the owner w", ic.Name, m[1])
			}
		} else if ic.Name == "socket-dir" {
			t.Errorf("init container %s no longer sets the socket directory's mode; update this test", ic.Name)
		}
	}

	// Service, ServiceMonitor and the example serving Deployment fit together.
	svc := get[*corev1.Service](t, objs, "Service/vram-exporter")
	if !reflect.DeepEqual(svc.Spec.Selector, ds.Spec.Template.Labels) && !subset(svc.Spec.Selector, ds.Spec.Template.Labels) {
		t.Errorf("service selector %v does not select the DaemonSet's pods %v", svc.Spec.Selector, ds.Spec.Template.Labels)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].Port != c.Ports[0].ContainerPort {
		t.Errorf("service port %+v does not match container port %+v", svc.Spec.Ports, c.Ports)
	}
	sm := get[*monitoringv1.ServiceMonitor](t, objs, "ServiceMonitor/vram-exporter")
	if !subset(sm.Spec.Selector.MatchLabels, svc.Labels) || len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" {
		t.Errorf("ServiceMonitor does not select the Service's metrics port: %+v", sm.Spec)
	}
	jobSet := false
	for _, r := range sm.Spec.Endpoints[0].RelabelConfigs {
		if r.TargetLabel == "job" && r.Replacement != nil && *r.Replacement == "vram_exporter" {
			jobSet = true
		}
	}
	if !jobSet {
		t.Error("the ServiceMonitor must set job=vram_exporter, the job the rules expect")
	}
	dep := get[*appsv1.Deployment](t, objs, "Deployment/ranker")
	dps := dep.Spec.Template.Spec
	hostSock := false
	for _, v := range dps.Volumes {
		if v.HostPath != nil && v.HostPath.Path == "/run/vram_exporter" {
			for _, vm := range dps.Containers[0].VolumeMounts {
				hostSock = hostSock || (vm.Name == v.Name && vm.MountPath == "/run/vram_exporter")
			}
		}
	}
	if !hostSock {
		t.Error("the serving example must mount the hostPath /run/vram_exporter")
	}
	if dps.SecurityContext == nil || !containsInt(dps.SecurityContext.SupplementalGroups, 10090) || !containsInt(ps.SecurityContext.SupplementalGroups, 10090) ||
		!strings.Contains(args, "--push.socket-group=10090") {
		t.Error("the daemon's --push.socket-group and the pods' supplementalGroups must agree (10090)")
	}
	cm := get[*corev1.ConfigMap](t, objs, "ConfigMap/ranker-serve")
	if !strings.Contains(cm.Data["serve.py"], "import vram_exporter_client") || !strings.Contains(cm.Data["serve.py"], "sample_now()") {
		t.Error("the serving example must use the Python client")
	}
}

func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

func containsInt(xs []int64, x int64) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// checkFlagsDocumented: every flag a manifest or unit passes is one the README's flag
// table documents, so a renamed flag breaks this test rather than a deployment.
func checkFlagsDocumented(t *testing.T, where string, args []string) {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if !strings.HasPrefix(name, "--") {
			continue
		}
		if !bytes.Contains(readme, []byte("`"+name+"`")) {
			t.Errorf("%s: flag %s is not in the README's flag table", where, name)
		}
	}
}

// TestPrometheusRuleMatchesRulesFile keeps kubernetes/prometheusrule.yaml the same
// rules as prometheus/vram_exporter.rules.yml. The file is rendered from the Helm chart
// (go test ./deploy/helm -update copies the rules into the chart and regenerates it).
func TestPrometheusRuleMatchesRulesFile(t *testing.T) {
	b, err := os.ReadFile(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	var spec monitoringv1.PrometheusRuleSpec
	if err := yaml.UnmarshalStrict(b, &spec); err != nil {
		t.Fatalf("%s does not decode into PrometheusRuleSpec: %v", rulesPath, err)
	}
	objs := decodeManifests(t)
	pr := get[*monitoringv1.PrometheusRule](t, objs, "PrometheusRule/vram-exporter")
	if !reflect.DeepEqual(pr.Spec, spec) {
		t.Fatalf("%s differs from %s; regenerate with go test ./deploy/helm -update", prometheusRulePath, rulesPath)
	}
}

func TestSystemdUnit(t *testing.T) {
	b, err := os.ReadFile("systemd/vram_exporter.service")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	kv := map[string]string{}
	section := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Errorf("not key=value: %q", line)
			}
			kv[section+"."+k] = strings.TrimSpace(v)
		}
	}
	if kv["Service.RuntimeDirectory"] != "vram_exporter" {
		t.Errorf("RuntimeDirectory=%q, want vram_exporter (systemd creates /run/vram_exporter for the socket)", kv["Service.RuntimeDirectory"])
	}
	exec := strings.Fields(kv["Service.ExecStart"])
	if len(exec) == 0 || !strings.Contains(kv["Service.ExecStart"], "--push.socket=/run/vram_exporter/push.sock") {
		t.Errorf("ExecStart must put the socket in the RuntimeDirectory: %q", kv["Service.ExecStart"])
	}
	checkFlagsDocumented(t, "systemd unit", exec)
	if kv["Service.User"] == "" || kv["Service.User"] == "root" || kv["Service.NoNewPrivileges"] != "yes" {
		t.Error("the unit must run as an unprivileged user with NoNewPrivileges")
	}
	if kv["Install.WantedBy"] == "" {
		t.Error("no [Install] WantedBy")
	}
}
