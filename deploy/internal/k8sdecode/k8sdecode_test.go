package k8sdecode

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestStrict(t *testing.T) {
	objs, err := Strict("# a comment only\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n---\n\n# nothing\n")
	if err != nil {
		t.Fatal(err)
	}
	if cm, ok := objs["ConfigMap/a"].(*corev1.ConfigMap); !ok || cm.Data["k"] != "v" || len(objs) != 1 {
		t.Fatalf("objects %v", objs)
	}
	for text, want := range map[string]string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndatta: {}\n":                                              "strict decoding",
		"apiVersion: v9\nkind: Thing\nmetadata:\n  name: a\n":                                                             `unexpected kind "v9" "Thing"`,
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: a\n": "Service/a rendered twice",
	} {
		if _, err := Strict(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Strict(%q) = %v, want an error with %q", text, err, want)
		}
	}
}
