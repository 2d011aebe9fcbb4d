package main

import (
	"strings"
	"testing"
)

// replay reads the gzip traces the project ships (it read their compressed bytes as
// malformed lines and exited 1 with "no sample could be read").
func TestReplayReadsTheShippedGzipTrace(t *testing.T) {
	code, stdout, stderr := runArgs(t, "replay", "--input=../../leak/eval/testdata/leak_alloc_10mib.jsonl.gz", "--output=json")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q; want 0 and nothing skipped", code, stderr)
	}
	if !strings.Contains(stdout, `"pid":4242`) || !strings.Contains(stdout, `"verdict":"leak"`) {
		t.Errorf("stdout %q; want pid 4242's leak verdict", stdout)
	}
}
