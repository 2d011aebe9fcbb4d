package push

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docs/protocol.md is the wire contract client authors write from: its list of reject
// reasons must be exactly Reasons(), the values of vram_push_rejected_total{reason}, and
// every reason it names beside a rule must be one of them.

// reasonList is the sentence that lists every reason.
var reasonList = regexp.MustCompile(`(?s)The reasons\s+are exactly:(.*?)\.\s`)

// namedReason is a reason given beside a rule, as in "≤ 8 entries (`too_many_labels`)",
// "PID 0: `no_pid`" or "is `schema`"; a list such as "(`pid`, `uuid`, …)" is not one.
var namedReason = regexp.MustCompile("\\(`([a-z][a-z0-9_]*)`[) ]|(?:: |is )`([a-z][a-z0-9_]*)`")

var codeWord = regexp.MustCompile("`([^`]+)`")

func protocolDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestProtocolDocListsExactlyTheReasons(t *testing.T) {
	doc := protocolDoc(t)
	m := reasonList.FindStringSubmatch(doc)
	if m == nil {
		t.Fatal(`docs/protocol.md lacks the sentence "The reasons are exactly: ….", which the reasons are checked against`)
	}
	var listed []string
	for _, w := range codeWord.FindAllStringSubmatch(m[1], -1) {
		listed = append(listed, w[1])
	}
	code := Reasons()
	for _, r := range listed {
		if !slices.Contains(code, r) {
			t.Errorf("docs/protocol.md lists reject reason %q, which package push does not have", r)
		}
	}
	for _, r := range code {
		if !slices.Contains(listed, r) {
			t.Errorf("docs/protocol.md's list of reject reasons lacks %q", r)
		}
	}
	if len(listed) != len(slices.Compact(slices.Sorted(slices.Values(listed)))) {
		t.Errorf("docs/protocol.md lists a reason twice: %q", listed)
	}
}

// Reasons named beside the rules (the field table's "(reason when violated)" and the
// daemon's steps) must exist too, or a renamed reason could linger in the table.
func TestProtocolDocNamesOnlyRealReasons(t *testing.T) {
	code := Reasons()
	named := 0
	for i, line := range strings.Split(protocolDoc(t), "\n") {
		for _, m := range namedReason.FindAllStringSubmatch(line, -1) {
			w := m[1] + m[2]
			named++
			if !slices.Contains(code, w) {
				t.Errorf("docs/protocol.md line %d names reject reason %q, which package push does not have", i+1, w)
			}
		}
	}
	if named < len(code) {
		t.Errorf("found %d reasons named beside rules, fewer than the %d reasons: the pattern no longer matches the page", named, len(code))
	}
}
