package collector

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Metric tables in README.md, docs/*.md and the other READMEs are references: a table whose first header
// cell is "metric" must list exactly the daemon's vram_* families (MetricNames() and
// daemonMetrics), once each. Every other vram_* name in
// those pages must be a metric too (or one of the non-metric names below), so a renamed
// or removed metric cannot linger in prose either.

// notMetrics are vram_* words the docs use that are not metric names.
var notMetrics = map[string]bool{
	"vram_exporter":        true, // the binary, job and directory name
	"vram_exporter_client": true, // the Python client module
	"vram_eval":            true, // cmd/vram_eval
}

// daemonMetrics are vram_* families the daemon exports beside the collectors':
// cmd/vram_exporter registers client_golang's version collector and the API's rejection
// counter, and its end-to-end tests check the binary serves them.
var daemonMetrics = []string{"vram_exporter_build_info", "vram_api_requests_rejected_total"}

// exported is every vram_* family a scrape of the daemon can carry, sorted.
func exported() []string {
	out := append(MetricNames(), daemonMetrics...)
	slices.Sort(out)
	return out
}

var metricWord = regexp.MustCompile(`\bvram_[a-z0-9_]+`)

func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{
		filepath.Join("..", "README.md"),
		filepath.Join("..", "deploy", "README.md"),
		filepath.Join("..", "client", "python", "README.md"),
	}, pages...)
}

func TestDocsMetricTablesListExactlyMetricNames(t *testing.T) {
	want := exported()
	tables := 0
	for _, page := range docPages(t) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range metricTables(string(text)) {
			tables++
			where := page[len("../"):] + " line " + strconv.Itoa(tb.line)
			seen := map[string]bool{}
			for _, n := range tb.names {
				if seen[n] {
					t.Errorf("%s: the metric table lists %s twice", where, n)
				}
				seen[n] = true
				if !slices.Contains(want, n) {
					t.Errorf("%s: the metric table lists %s, which the collectors do not export; remove or rename it", where, n)
				}
			}
			for _, n := range want {
				if !seen[n] {
					t.Errorf("%s: the metric table lacks %s", where, n)
				}
			}
		}
	}
	if tables == 0 {
		t.Fatal("no metric table (first header cell \"metric\") in README.md or docs/*.md; README.md must have one")
	}
}

func TestDocsNameOnlyRealMetrics(t *testing.T) {
	want := exported()
	for _, page := range docPages(t) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(text), "\n") {
			for _, w := range metricWord.FindAllString(line, -1) {
				if !notMetrics[w] && !slices.Contains(want, w) {
					t.Errorf("%s line %d names %s, which is not a metric the collectors export", page[len("../"):], i+1, w)
				}
			}
		}
	}
}

// The parser must see a table's rows, stop at its end and ignore other tables, or the
// test above could pass on nothing.
func TestMetricTablesParser(t *testing.T) {
	text := "# x\n\n| metric | type |\n| --- | --- |\n| `vram_a`, `vram_b` | gauge |\n| `vram_c` | counter |\n\n" +
		"prose `vram_d`\n\n| flag | default |\n| --- | --- |\n| `vram_e` | x |\n"
	got := metricTables(text)
	if len(got) != 1 || got[0].line != 3 || !slices.Equal(got[0].names, []string{"vram_a", "vram_b", "vram_c"}) {
		t.Errorf("metricTables() = %+v, want one table at line 3 with vram_a, vram_b, vram_c", got)
	}
}

type metricTable struct {
	line  int // of the header
	names []string
}

// metricTables finds the Markdown tables whose first header cell is "metric" and returns
// the vram_* names in each row's first cell.
func metricTables(text string) []metricTable {
	var out []metricTable
	inTable, isMetrics := false, false
	for i, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		first := strings.TrimSpace(strings.SplitN(strings.TrimPrefix(line, "|"), "|", 2)[0])
		switch {
		case !inTable: // a header row
			inTable, isMetrics = true, first == "metric"
			if isMetrics {
				out = append(out, metricTable{line: i + 1})
			}
		case isMetrics:
			last := &out[len(out)-1]
			last.names = append(last.names, metricWord.FindAllString(first, -1)...)
		}
	}
	return out
}
