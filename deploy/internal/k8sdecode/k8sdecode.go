// Package k8sdecode decodes rendered manifests strictly into their Kubernetes and
// prometheus-operator types, for the tests of the committed manifests and of the Helm
// chart: an unknown or misspelt field, an unexpected kind or an object rendered twice
// is an error, so a manifest that kubectl would reject, or silently trim, fails a test.
package k8sdecode

import (
	"fmt"
	"regexp"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// Docs splits a YAML stream into its documents, leaving out those with nothing but
// comments and blank lines.
func Docs(text string) []string {
	var out []string
	for _, doc := range docSep.Split(text, -1) {
		if !Blank(doc) {
			out = append(out, doc)
		}
	}
	return out
}

// Blank reports whether doc holds nothing but comments and blank lines.
func Blank(doc string) bool {
	for _, l := range strings.Split(doc, "\n") {
		if l := strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// Strict decodes every document of text into a pointer to its type, keyed Kind/name.
func Strict(text string) (map[string]any, error) {
	objs := map[string]any{}
	for i, doc := range Docs(text) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return nil, fmt.Errorf("doc %d: %w\n%s", i, err, doc)
		}
		obj := newObject(tm.APIVersion + "/" + tm.Kind)
		if obj == nil {
			return nil, fmt.Errorf("doc %d: unexpected kind %q %q\n%s", i, tm.APIVersion, tm.Kind, doc)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			return nil, fmt.Errorf("doc %d (%s): strict decoding: %w\n%s", i, tm.Kind, err, doc)
		}
		key := tm.Kind + "/" + obj.(metav1.Object).GetName()
		if _, dup := objs[key]; dup {
			return nil, fmt.Errorf("%s rendered twice", key)
		}
		objs[key] = obj
	}
	return objs, nil
}

// newObject is an empty object of the kinds the manifests and the chart render.
func newObject(apiVersionKind string) any {
	switch apiVersionKind {
	case "v1/Namespace":
		return &corev1.Namespace{}
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}
	case "v1/Service":
		return &corev1.Service{}
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}
	case "v1/Secret":
		return &corev1.Secret{}
	case "apps/v1/DaemonSet":
		return &appsv1.DaemonSet{}
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}
	case "monitoring.coreos.com/v1/ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}
	case "monitoring.coreos.com/v1/PodMonitor":
		return &monitoringv1.PodMonitor{}
	case "monitoring.coreos.com/v1/PrometheusRule":
		return &monitoringv1.PrometheusRule{}
	}
	return nil
}
