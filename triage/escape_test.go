package triage

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vram-exporter/vram_exporter/api"
)

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text · 140 GiB", "plain text · 140 GiB"},
		{"\x1b[2J\x1b[HALL GOOD", `\x1b[2J\x1b[HALL GOOD`},
		{"a\rb\nc\td\a", `a\x0db\x0ac\x09d\x07`},
		{"del\x7f", `del\x7f`},
		{"c1\u009b31m", `c1\u009b31m`},
		{"bidi\u202eevil\u2066", `bidi\u202eevil\u2066`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"", ""},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

const hostile = "\x1b[2J\x1b[H\rALL GOOD\a\u202e"

// fillStrings sets every string reachable in v (slices get one element) to hostile.
func fillStrings(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(hostile)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).CanSet() {
				fillStrings(v.Field(i))
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillStrings(v.Index(0))
	case reflect.Pointer:
		if v.Type().Elem().Kind() == reflect.Struct || v.Type().Elem().Kind() == reflect.String {
			v.Set(reflect.New(v.Type().Elem()))
			fillStrings(v.Elem())
		}
	}
}

// Every string of a report (a pushed label, a comm, a GPU name, a diagnosis, a warning)
// reaches the table escaped: no control character of the daemon's data reaches the
// terminal, in colour or not, and the report itself is not modified.
func TestWriteTableEscapesEveryString(t *testing.T) {
	var r Report
	fillStrings(reflect.ValueOf(&r).Elem())
	r.Processes[0].Verdict = string(api.VerdictLeak) // the verdict picks a colour; keep one
	orig := r.Processes[0].Comm
	for _, color := range []bool{false, true} {
		var buf bytes.Buffer
		if err := WriteTable(&buf, r, color); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if !strings.Contains(out, `\x1b[2J`) {
			t.Fatalf("color=%v: the hostile text is not shown escaped:\n%s", color, out)
		}
		for _, bad := range []string{"\x1b[2J", "\x1b[H", "\r", "\a", "\u202e"} {
			if strings.Contains(out, bad) {
				t.Errorf("color=%v: output contains raw %q", color, bad)
			}
		}
		if !color && strings.Contains(out, "\x1b") {
			t.Errorf("colourless output contains an escape character")
		}
	}
	if r.Processes[0].Comm != orig {
		t.Error("WriteTable modified the caller's report")
	}
}

func TestStatusErrorEscapesTheBody(t *testing.T) {
	e := &StatusError{URL: "http://x", Code: 500, Status: "500 Internal Server Error", Excerpt: hostile}
	if strings.ContainsAny(e.Error(), "\x1b\r\a") {
		t.Errorf("error text carries control characters: %q", e.Error())
	}
}

func TestEscapedKeepsTimes(t *testing.T) {
	now := time.Unix(1_700_000_000, 0).UTC()
	r := escaped(Report{Time: now, Node: "n\x1b"})
	if !r.Time.Equal(now) || r.Node != `n\x1b` {
		t.Errorf("escaped: time %v node %q", r.Time, r.Node)
	}
}
