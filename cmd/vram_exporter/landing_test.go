package main

import (
	"regexp"
	"strings"
	"testing"
)

// Every link on the landing page answers 200 (it linked the toolkit's /debug/pprof/heap,
// which the daemon does not serve), and each JSON API endpoint is a link of its own.
func TestLandingPageLinksAllAnswer(t *testing.T) {
	d := startDaemon(t)
	code, page := d.get("/")
	if code != 200 {
		t.Fatalf("landing page answered %d", code)
	}
	links := map[string]bool{}
	for _, m := range regexp.MustCompile(`href="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		links[m[1]] = true
	}
	for _, want := range []string{"/metrics", "/api/v1/status", "/api/v1/gpus", "/api/v1/processes", "/-/healthy", "/-/ready"} {
		if !links[want] {
			t.Errorf("landing page does not link %s: %s", want, page)
		}
	}
	for l := range links {
		if strings.Contains(l, "://") {
			t.Errorf("landing page links off the daemon: %s", l)
			continue
		}
		if code, body := d.get(l); code != 200 {
			t.Errorf("landing page link %s answers %d: %.200s", l, code, body)
		}
	}
	if strings.Contains(page, "debug/pprof") {
		t.Errorf("landing page still mentions pprof: %s", page)
	}
	d.stop()
}
