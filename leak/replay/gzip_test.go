package replay

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/vram-exporter/vram_exporter/leak/trend"
)

// A shipped labelled trace (gzip) replays to the same changes as its plain text.
func TestDecompressReplaysTheShippedGzipTraces(t *testing.T) {
	raw, err := os.ReadFile("../eval/testdata/leak_alloc_10mib.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	run := func(in io.Reader) (string, Summary) {
		t.Helper()
		r, err := Decompress(in)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var out bytes.Buffer
		sum, err := Run(r, &out, trend.DefaultConfig(), FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), sum
	}
	fromGz, sumGz := run(bytes.NewReader(raw))
	fromPlain, _ := run(bytes.NewReader(plain))
	if sumGz.Records == 0 || sumGz.Malformed != 0 || !strings.Contains(fromGz, `"leak"`) {
		t.Fatalf("gzip trace: %d records, %d malformed, output %q; want records, none malformed and a leak verdict", sumGz.Records, sumGz.Malformed, fromGz)
	}
	if fromGz != fromPlain {
		t.Errorf("gzip and plain replays differ:\n%s\n---\n%s", fromGz, fromPlain)
	}
}

func TestDecompressBrokenGzipHeaderSaysSo(t *testing.T) {
	_, err := Decompress(strings.NewReader("\x1f\x8b\x00garbage"))
	if err == nil || !strings.Contains(err.Error(), "gunzip") {
		t.Fatalf("err %v, want one that says the gzip header is broken", err)
	}
	for _, in := range []string{"", "{", `{"t":1}`} {
		r, err := Decompress(strings.NewReader(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		b, _ := io.ReadAll(r)
		if string(b) != in {
			t.Errorf("%q read back as %q", in, b)
		}
	}
}
