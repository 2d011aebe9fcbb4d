package helm

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// renderObjects renders values given as YAML and decodes every object strictly.
func renderObjects(t *testing.T, valuesYAML string) map[string]any {
	t.Helper()
	var vals map[string]any
	if err := yaml.Unmarshal([]byte(valuesYAML), &vals); err != nil {
		t.Fatal(err)
	}
	if vals == nil {
		vals = map[string]any{}
	}
	return decodeStrictly(t, manifest(mustRender(t, vals)))
}

func daemonSet(t *testing.T, objs map[string]any) (*appsv1.DaemonSet, corev1.PodSpec, corev1.Container) {
	t.Helper()
	ds := get[*appsv1.DaemonSet](t, objs, "DaemonSet/vram-exporter")
	ps := ds.Spec.Template.Spec
	if len(ps.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(ps.Containers))
	}
	return ds, ps, ps.Containers[0]
}

func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// TestModes: how NVML's library and device nodes reach the container, and which nodes
// the daemon runs on, in each mode; overrides replace the mode's choice.
func TestModes(t *testing.T) {
	t.Run("devicePlugin (default): no RuntimeClass, no GPU Operator label needed", func(t *testing.T) {
		_, ps, _ := daemonSet(t, renderObjects(t, ""))
		if ps.RuntimeClassName != nil {
			t.Errorf("runtimeClassName %q: the default must work without the GPU Operator's RuntimeClass", *ps.RuntimeClassName)
		}
		if len(ps.NodeSelector) != 0 {
			t.Errorf("nodeSelector %v: the default must not need one label", ps.NodeSelector)
		}
		if ps.Affinity == nil || ps.Affinity.NodeAffinity == nil || ps.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			t.Fatal("devicePlugin mode must restrict the daemon to GPU nodes (required node affinity)")
		}
		var keys []string
		for _, term := range ps.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			if len(term.MatchExpressions) != 1 {
				t.Fatalf("each GPU label must be its own (ORed) term: %+v", term)
			}
			keys = append(keys, term.MatchExpressions[0].Key)
		}
		for _, want := range []string{"nvidia.com/gpu.present", "feature.node.kubernetes.io/pci-10de.present"} {
			if !slices.Contains(keys, want) {
				t.Errorf("GPU node terms %v lack %s", keys, want)
			}
		}
	})
	t.Run("gpuOperator: the Operator's RuntimeClass and label", func(t *testing.T) {
		_, ps, _ := daemonSet(t, renderObjects(t, "mode: gpuOperator"))
		if ps.RuntimeClassName == nil || *ps.RuntimeClassName != "nvidia" {
			t.Errorf("runtimeClassName %v, want nvidia", ps.RuntimeClassName)
		}
		if ps.NodeSelector["nvidia.com/gpu.present"] != "true" || ps.Affinity != nil {
			t.Errorf("nodeSelector %v affinity %v, want only nvidia.com/gpu.present=true", ps.NodeSelector, ps.Affinity)
		}
	})
	t.Run("runtimeClassName and nodeSelector override the mode", func(t *testing.T) {
		_, ps, _ := daemonSet(t, renderObjects(t, "runtimeClassName: nvidia-cdi\nnodeSelector: {gpu: \"yes\"}"))
		if ps.RuntimeClassName == nil || *ps.RuntimeClassName != "nvidia-cdi" {
			t.Errorf("runtimeClassName %v, want nvidia-cdi", ps.RuntimeClassName)
		}
		if !reflect.DeepEqual(ps.NodeSelector, map[string]string{"gpu": "yes"}) || ps.Affinity != nil {
			t.Errorf("nodeSelector %v affinity %v: a nodeSelector replaces the mode's node choice", ps.NodeSelector, ps.Affinity)
		}
	})
	for _, mode := range []string{"devicePlugin", "gpuOperator"} {
		t.Run(mode+": every GPU through the toolkit, none from the scheduler", func(t *testing.T) {
			_, ps, c := daemonSet(t, renderObjects(t, "mode: "+mode))
			if env(c, "NVIDIA_VISIBLE_DEVICES") != "all" || env(c, "NVIDIA_DRIVER_CAPABILITIES") != "utility" {
				t.Errorf("env %+v: NVIDIA_VISIBLE_DEVICES=all and NVIDIA_DRIVER_CAPABILITIES=utility make the toolkit mount libnvidia-ml and /dev/nvidia*", c.Env)
			}
			for _, rl := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
				if _, ok := rl["nvidia.com/gpu"]; ok {
					t.Error("the daemon must not request nvidia.com/gpu (it would take a GPU and see only that one)")
				}
			}
			if !ps.HostPID {
				t.Error("hostPID must be true")
			}
			if !c.Resources.Limits.Memory().Equal(resource.MustParse("256Mi")) {
				t.Errorf("memory limit %v, want 256Mi", c.Resources.Limits.Memory())
			}
		})
	}
}

// TestSocketAndPushGroup: the three places that name the push group agree, and the host
// /proc and the socket directory are mounted where the flags say.
func TestSocketAndPushGroup(t *testing.T) {
	_, ps, c := daemonSet(t, renderObjects(t, "socket: {pushGroup: 4242, hostPath: /var/run/vx}"))
	if ps.SecurityContext == nil || !slices.Equal(ps.SecurityContext.SupplementalGroups, []int64{4242}) {
		t.Errorf("supplementalGroups %v, want [4242]", ps.SecurityContext)
	}
	if !slices.Contains(c.Args, "--push.socket-group=4242") || !slices.Contains(c.Args, "--push.socket=/run/vram_exporter/push.sock") {
		t.Errorf("args %v lack the socket and its group", c.Args)
	}
	if len(ps.InitContainers) != 1 || !strings.Contains(strings.Join(ps.InitContainers[0].Command, " "), "chown 65532:4242 /run/vram_exporter") {
		t.Errorf("init container must hand the directory to 65532:4242: %+v", ps.InitContainers)
	}
	vols := map[string]corev1.Volume{}
	for _, v := range ps.Volumes {
		vols[v.Name] = v
	}
	sock := vols["socket-dir"].HostPath
	if sock == nil || sock.Path != "/var/run/vx" || sock.Type == nil || *sock.Type != corev1.HostPathDirectoryOrCreate {
		t.Errorf("socket hostPath %+v, want /var/run/vx DirectoryOrCreate", sock)
	}
	if p := vols["host-proc"].HostPath; p == nil || p.Path != "/proc" || !slices.Contains(c.Args, "--path.procfs=/host/proc") {
		t.Errorf("host /proc %+v not mounted for --path.procfs", p)
	}

	_, ps, c = daemonSet(t, renderObjects(t, "socket: {enabled: false}"))
	if !slices.Contains(c.Args, "--push.socket=") || len(ps.InitContainers) != 0 || len(ps.SecurityContext.SupplementalGroups) != 0 {
		t.Errorf("socket off: want --push.socket= and no init container or push group, got %v %d %v", c.Args, len(ps.InitContainers), ps.SecurityContext.SupplementalGroups)
	}
}

// TestProbesUnderWebConfig: probes and monitors follow what the web config file holds.
// exporter-toolkit asks every path for credentials when basic auth is on, so the probes
// are then TCP checks; under TLS alone they are HTTPS GETs (the kubelet does not verify).
func TestProbesUnderWebConfig(t *testing.T) {
	for _, tc := range []struct {
		name, values string
		tcp          bool
		scheme       corev1.URIScheme
	}{
		{"plain", "", false, ""},
		{"tls", "webConfig: {enabled: true, existingSecret: s, tls: true}", false, corev1.URISchemeHTTPS},
		{"basic auth", "webConfig: {enabled: true, existingSecret: s, basicAuth: true}", true, ""},
		{"tls and basic auth", "webConfig: {enabled: true, existingSecret: s, tls: true, basicAuth: true}", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderObjects(t, tc.values+"\nserviceMonitor: {enabled: true}\npodMonitor: {enabled: true}")
			_, _, c := daemonSet(t, objs)
			for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
				switch {
				case p == nil:
					t.Fatalf("no %s probe", name)
				case tc.tcp && (p.TCPSocket == nil || p.TCPSocket.Port != intstr.FromString("metrics") || p.HTTPGet != nil):
					t.Errorf("%s: want a TCP check on metrics, got %+v", name, p.ProbeHandler)
				case !tc.tcp && (p.HTTPGet == nil || p.HTTPGet.Port != intstr.FromString("metrics") || p.HTTPGet.Scheme != tc.scheme):
					t.Errorf("%s: want an HTTP GET (scheme %q) on metrics, got %+v", name, tc.scheme, p.ProbeHandler)
				}
			}
			wantScheme := "http"
			if strings.Contains(tc.values, "tls: true") {
				wantScheme = "https"
			}
			sm := get[*monitoringv1.ServiceMonitor](t, objs, "ServiceMonitor/vram-exporter")
			pm := get[*monitoringv1.PodMonitor](t, objs, "PodMonitor/vram-exporter")
			if s := sm.Spec.Endpoints[0].Scheme; s == nil || string(*s) != wantScheme {
				t.Errorf("ServiceMonitor scheme %v, want %s", s, wantScheme)
			}
			if s := pm.Spec.PodMetricsEndpoints[0].Scheme; s == nil || string(*s) != wantScheme {
				t.Errorf("PodMonitor scheme %v, want %s", s, wantScheme)
			}
			if tc.values != "" && !slices.Contains(c.Args, "--web.config.file=/etc/vram_exporter/web/web-config.yml") {
				t.Errorf("args %v lack --web.config.file", c.Args)
			}
		})
	}
}

// TestMonitorsSetJobAndInstance: the alert rules select job="vram_exporter" and page with
// the node name as instance, whichever monitor scrapes.
func TestMonitorsSetJobAndInstance(t *testing.T) {
	objs := renderObjects(t, "serviceMonitor: {enabled: true}\npodMonitor: {enabled: true}")
	sm := get[*monitoringv1.ServiceMonitor](t, objs, "ServiceMonitor/vram-exporter")
	pm := get[*monitoringv1.PodMonitor](t, objs, "PodMonitor/vram-exporter")
	svc := get[*corev1.Service](t, objs, "Service/vram-exporter")
	ds, _, _ := daemonSet(t, objs)
	check := func(what string, rc []monitoringv1.RelabelConfig) {
		var job, inst bool
		for _, r := range rc {
			job = job || (r.TargetLabel == "job" && r.Replacement != nil && *r.Replacement == "vram_exporter")
			inst = inst || (r.TargetLabel == "instance" && slices.Contains(r.SourceLabels, "__meta_kubernetes_pod_node_name"))
		}
		if !job || !inst {
			t.Errorf("%s relabelings %+v must set job=vram_exporter and instance=node name", what, rc)
		}
	}
	check("ServiceMonitor", sm.Spec.Endpoints[0].RelabelConfigs)
	check("PodMonitor", pm.Spec.PodMetricsEndpoints[0].RelabelConfigs)
	podLabels := ds.Spec.Template.Labels
	for what, sel := range map[string]map[string]string{"Service": svc.Spec.Selector, "PodMonitor": pm.Spec.Selector.MatchLabels, "DaemonSet": ds.Spec.Selector.MatchLabels} {
		for k, v := range sel {
			if podLabels[k] != v {
				t.Errorf("%s selector %v does not select the pods %v", what, sel, podLabels)
			}
		}
	}
	for k, v := range sm.Spec.Selector.MatchLabels {
		if svc.Labels[k] != v {
			t.Errorf("ServiceMonitor selector %v does not select the Service %v", sm.Spec.Selector.MatchLabels, svc.Labels)
		}
	}
}

// TestPrometheusRuleIsTheRulesFile: the PrometheusRule holds exactly the rules of
// deploy/prometheus/vram_exporter.rules.yml.
func TestPrometheusRuleIsTheRulesFile(t *testing.T) {
	b, err := os.ReadFile("../prometheus/vram_exporter.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var want monitoringv1.PrometheusRuleSpec
	if err := yaml.UnmarshalStrict(b, &want); err != nil {
		t.Fatal(err)
	}
	pr := get[*monitoringv1.PrometheusRule](t, renderObjects(t, "prometheusRule: {enabled: true, labels: {release: kps}}"), "PrometheusRule/vram-exporter")
	if !reflect.DeepEqual(pr.Spec, want) {
		t.Error("the PrometheusRule's spec differs from the rules file")
	}
	if pr.Labels["release"] != "kps" {
		t.Errorf("labels %v lack release=kps", pr.Labels)
	}
}

// TestDashboardsConfigMap: one ConfigMap with the sidecar label, holding every dashboard
// byte for byte.
func TestDashboardsConfigMap(t *testing.T) {
	files, err := filepath.Glob("../../dashboards/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards: %v", err)
	}
	for _, tc := range []struct{ values, ns, label, value string }{
		{"dashboards: {enabled: true}", releaseNS, "grafana_dashboard", "1"},
		{"dashboards: {enabled: true, namespace: monitoring, label: dash, labelValue: vram}", "monitoring", "dash", "vram"},
	} {
		cm := get[*corev1.ConfigMap](t, renderObjects(t, tc.values), "ConfigMap/vram-exporter-dashboards")
		if cm.Namespace != tc.ns || cm.Labels[tc.label] != tc.value {
			t.Errorf("%s: namespace %q labels %v, want %q and %s=%q", tc.values, cm.Namespace, cm.Labels, tc.ns, tc.label, tc.value)
		}
		if len(cm.Data) != len(files) {
			t.Errorf("ConfigMap holds %d dashboards, want %d", len(cm.Data), len(files))
		}
		for _, f := range files {
			want, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if got := cm.Data[filepath.Base(f)]; got != strings.TrimSuffix(string(want), "\n") {
				t.Errorf("%s in the ConfigMap differs from %s", filepath.Base(f), f)
			}
		}
	}
}

// TestWebConfigSecret: with the file's content in values the chart makes the Secret
// (exact bytes) and mounts it; with existingSecret it mounts the user's and makes none.
func TestWebConfigSecret(t *testing.T) {
	objs := renderObjects(t, `webConfig:
  enabled: true
  basicAuth: true
  config:
    basic_auth_users:
      prometheus: $2y$10$abcdefghijklmnopqrstuv
  secretFiles:
    extra.pem: "line\n"`)
	sec := get[*corev1.Secret](t, objs, "Secret/vram-exporter-web-config")
	var cfg map[string]map[string]string
	if err := yaml.UnmarshalStrict(sec.Data["web-config.yml"], &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg["basic_auth_users"]["prometheus"] != "$2y$10$abcdefghijklmnopqrstuv" || string(sec.Data["extra.pem"]) != "line\n" {
		t.Errorf("secret data %q", sec.Data)
	}
	_, ps, c := daemonSet(t, objs)
	mounted := false
	for _, v := range ps.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "vram-exporter-web-config" {
			for _, m := range c.VolumeMounts {
				mounted = mounted || (m.Name == v.Name && m.MountPath == "/etc/vram_exporter/web" && m.ReadOnly)
			}
		}
	}
	if !mounted {
		t.Error("the web config Secret must be mounted read-only at /etc/vram_exporter/web")
	}

	objs = renderObjects(t, "webConfig: {enabled: true, existingSecret: mine, key: cfg.yml}")
	if _, ok := objs["Secret/vram-exporter-web-config"]; ok {
		t.Error("with existingSecret the chart must not make a Secret")
	}
	_, ps, c = daemonSet(t, objs)
	if !slices.ContainsFunc(ps.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == "mine" }) ||
		!slices.Contains(c.Args, "--web.config.file=/etc/vram_exporter/web/cfg.yml") {
		t.Errorf("existingSecret mine / key cfg.yml not used: %+v %v", ps.Volumes, c.Args)
	}
}

// TestRejectsMistakes: values that would deploy something broken fail the render with a
// message that says what to do.
func TestRejectsMistakes(t *testing.T) {
	for _, tc := range []struct{ values, want string }{
		{"mode: gpuoperator", "mode"},
		{"imagee: {tag: x}", "imagee"},
		{"resources: {limit: {memory: 1Gi}}", "limit"},
		{"socket: {pushGroup: 0}", "pushGroup"},
		{"devicePlugin: {gpuNodeLabels: []}", "pick your GPU nodes"},
		{"webConfig: {enabled: true}", "webConfig.existingSecret"},
		{"serviceMonitor: {enabled: true}\nservice: {enabled: false}", "podMonitor"},
	} {
		var vals map[string]any
		if err := yaml.Unmarshal([]byte(tc.values), &vals); err != nil {
			t.Fatal(err)
		}
		_, err := render(t, vals)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want one naming %q", tc.values, err, tc.want)
		}
	}
}
