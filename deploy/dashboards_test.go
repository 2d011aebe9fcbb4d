package deploy

import (
	"strings"
	"testing"
)

// TestDashboards also checks that the dashboards stand alone: no panel or variable
// selects a recording rule's series (recorded is empty here), so a Prometheus without the
// rules loaded still fills every panel (TestRealPrometheusAndAlertmanager shows it does).
func TestDashboards(t *testing.T) {
	exported := exporterMetrics(t)
	recorded := map[string]bool{}
	uids := map[string]string{}
	want := map[string]bool{"vram-fleet": false, "vram-gpu": false, "vram-process": false}
	for _, d := range loadDashboards(t) {
		where := d.file
		if _, ok := d.raw["__inputs"]; ok {
			t.Errorf("%s: has __inputs (an export for sharing); ship a plain dashboard with a datasource variable", where)
		}
		if d.UID == "" || d.Title == "" || d.Description == "" {
			t.Errorf("%s: uid, title and description are required", where)
		}
		if prev, dup := uids[d.UID]; dup {
			t.Errorf("%s: uid %q already used by %s", where, d.UID, prev)
		}
		uids[d.UID] = where
		if !strings.HasSuffix(d.file, "/"+d.UID+".json") {
			t.Errorf("%s: the file is named after its uid (%s.json), so the uid stays stable", where, d.UID)
		}
		if _, ok := want[d.UID]; ok {
			want[d.UID] = true
		}
		hasDS := false
		for _, v := range d.Templating.List {
			if v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus" {
				hasDS = true
			}
			if v.Type == "query" {
				if uid, _ := v.Datasource["uid"].(string); uid != "${datasource}" {
					t.Errorf("%s: variable %s does not use the datasource variable", where, v.Name)
				}
				checkExpr(t, where+" variable "+v.Name, labelValuesSelector(v.Definition), exported, recorded)
			}
		}
		if !hasDS {
			t.Errorf("%s: no datasource variable (name datasource, type datasource, query prometheus)", where)
		}
		ids := map[int]bool{}
		for _, p := range d.allPanels() {
			pw := where + " panel " + p.Title
			if p.ID == 0 || ids[p.ID] {
				t.Errorf("%s: panel id %d is missing or not unique", pw, p.ID)
			}
			ids[p.ID] = true
			if p.Type == "row" {
				continue
			}
			if p.Title == "" || p.Description == "" {
				t.Errorf("%s: title and description are required", pw)
			}
			if p.FieldConfig.Defaults.Unit == "" {
				t.Errorf("%s: no unit (bytes, binBps, s, percentunit, none, …)", pw)
			}
			if uid, _ := p.Datasource["uid"].(string); uid != "${datasource}" {
				t.Errorf("%s: panel datasource %v, want the ${datasource} variable", pw, p.Datasource)
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: no targets", pw)
			}
			for _, tg := range p.Targets {
				if uid, _ := tg.Datasource["uid"].(string); uid != "${datasource}" {
					t.Errorf("%s target %s: datasource %v, want the ${datasource} variable", pw, tg.RefID, tg.Datasource)
				}
				checkExpr(t, pw+" target "+tg.RefID, dashboardVars(tg.Expr, "5m"), exported, recorded)
				checkUnit(t, pw, p.FieldConfig.Defaults.Unit, tg.Expr)
			}
		}
	}
	for uid, ok := range want {
		if !ok {
			t.Errorf("dashboard %s is missing", uid)
		}
	}
}

// checkUnit: memory panels are in bytes, slopes in bytes per second, forecasts and ages
// in seconds.
func checkUnit(t *testing.T, where, unit, expr string) {
	t.Helper()
	want := ""
	switch {
	case strings.HasPrefix(strings.TrimLeft(expr, "( \n"), "max by (instance, job, pid, comm"):
		// A process identity table: its values are 1 and its labels are the content.
	case strings.Contains(expr, "_bytes_per_second"):
		want = "binBps"
	case strings.Contains(expr, "_seconds"):
		want = "s"
	case strings.Contains(expr, "_ratio"), strings.Contains(expr, ":ratio"), strings.Contains(expr, "/ (vram_gpu_memory_total_bytes"):
		want = "percentunit"
	case strings.Contains(expr, "_bytes") && !strings.Contains(expr, "_total"):
		want = "bytes"
	}
	if want != "" && unit != want {
		t.Errorf("%s: unit %q, want %q for %s", where, unit, want, expr)
	}
}

// labelValuesSelector turns label_values(selector, label) into the selector.
func labelValuesSelector(def string) string {
	s := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(def), "label_values("), ")")
	if i := strings.LastIndex(s, ","); i >= 0 {
		s = s[:i]
	}
	return dashboardVars(s, "5m")
}
