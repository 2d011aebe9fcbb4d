package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/vram-exporter/vram_exporter/leak/trend"
)

func TestRoundTrip(t *testing.T) {
	at := time.Date(2025, 1, 1, 0, 0, 0, 500_000_000, time.UTC)
	procs := []trend.Sample{
		{T: at, Key: trend.Key{PID: 4242, Start: 123456, UUID: "GPU-abc"}, Used: 1 << 30, Allocated: 65 << 20, Reserved: 512 << 20, HasUsed: true, HasAllocated: true, HasReserved: true},
		{T: at.Add(time.Second), Key: trend.Key{PID: 1, UUID: "GPU-abc"}, Used: 7, HasUsed: true},
		// A push the daemon had already fed (see trend.Sample.Repeat).
		{T: at.Add(2 * time.Second), Key: trend.Key{PID: 4242, Start: 123456, UUID: "GPU-abc"}, Used: 1 << 30, Allocated: 65 << 20, Reserved: 512 << 20, HasUsed: true, HasAllocated: true, HasReserved: true, Repeat: true},
		{T: at.Add(1234567 * time.Microsecond), Key: trend.Key{PID: 4294967295, UUID: `GPU-"quoted"`}},
		// Pushes that said how many requests were in flight, none and some.
		{T: at.Add(3 * time.Second), Key: trend.Key{PID: 4242, Start: 123456, UUID: "GPU-abc"}, Allocated: 65 << 20, HasAllocated: true, HasInFlight: true},
		{T: at.Add(4 * time.Second), Key: trend.Key{PID: 4242, Start: 123456, UUID: "GPU-abc"}, Allocated: 80 << 20, HasAllocated: true, InFlight: 4294967295, HasInFlight: true},
	}
	gpu := trend.GPUSample{T: at, UUID: "GPU-abc", Used: 8 << 30, Total: 140 << 30}

	var buf bytes.Buffer
	w := NewWriter(&buf, 0)
	for _, p := range procs {
		if err := w.WriteProcess(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteGPU(gpu); err != nil {
		t.Fatal(err)
	}
	if strings.Count(buf.String(), `"repeat":true`) != 1 {
		t.Errorf("want one repeat mark, on the repeated push:\n%s", buf.String())
	}
	if strings.Count(buf.String(), `"in_flight":`) != 2 || !strings.Contains(buf.String(), `"in_flight":0}`) {
		t.Errorf("want in_flight on the two pushes that reported it, 0 included:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), `"used":1073741824`) {
		t.Errorf("bytes not written as integers:\n%s", buf.String())
	}

	r := NewReader(&buf)
	for i, want := range procs {
		rec, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if rec.Process == nil || *rec.Process != want || rec.Line != i+1 {
			t.Errorf("record %d = %+v (line %d), want %+v", i, rec.Process, rec.Line, want)
		}
	}
	rec, err := r.Next()
	if err != nil || rec.GPU == nil || *rec.GPU != gpu {
		t.Errorf("GPU record = %+v, %v; want %+v", rec.GPU, err, gpu)
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("at the end: %v, want io.EOF", err)
	}
}

func TestMalformedLinesAreCounted(t *testing.T) {
	in := strings.Join([]string{
		`{"t": 1, "pid": 1, "uuid": "GPU-a", "used": 5, "future_field": {"x": 1}}`, // 1 ok
		`not json`,                                        // 2
		`{"pid": 1, "uuid": "GPU-a"}`,                     // 3 no t
		`{"t": 1, "pid": 1, "used": 5}`,                   // 4 no uuid
		`{"t": 1, "pid": 0, "uuid": "GPU-a"}`,             // 5 bad pid
		`{"t": 1, "uuid": "GPU-a", "gpu_used": 5}`,        // 6 gpu without total
		`{"t": 1, "pid": 2, "uuid": "GPU-a", "used": -5}`, // 7 negative
		``, // 8 blank: skipped, not malformed
		`{"t": 2, "uuid": "GPU-a", "gpu_used": 1, "gpu_total": 2}`, // 9 ok
		`{"t": 1, "pid": 1.5, "uuid": "GPU-a"}`,                    // 10 fractional pid
		`{"t": 1, "pid": 1, "uuid": "GPU-a", "in_flight": -1}`,     // 11 negative count
		`{"t": 1, "pid": 1, "uuid": "GPU-a", "in_flight": 1.5}`,    // 12 fractional count
		`{"t": 1, "pid": 1, "uuid": "GPU-a", "in_flight": 5e9}`,    // 13 past uint32
		`{"t": 3, "pid": 1, "uuid": "GPU-a", "in_flight": 3}`,      // 14 ok
	}, "\n")
	r := NewReader(strings.NewReader(in))
	var lines []int
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, rec.Line)
	}
	if len(lines) != 3 || lines[0] != 1 || lines[1] != 9 || lines[2] != 14 {
		t.Errorf("good lines = %v, want [1 9 14]", lines)
	}
	n, errs := r.Malformed()
	wantLines := []int{2, 3, 4, 5, 6, 7, 10, 11, 12, 13}
	if n != len(wantLines) || len(errs) != len(wantLines) {
		t.Fatalf("malformed = %d %v, want lines %v", n, errs, wantLines)
	}
	for i, e := range errs {
		if e.Line != wantLines[i] {
			t.Errorf("malformed #%d at line %d, want %d (%v)", i, e.Line, wantLines[i], e)
		}
	}
}

func TestWriterBound(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 200)
	p := trend.Sample{T: time.Unix(1, 0), Key: trend.Key{PID: 1, UUID: "GPU-a"}, Used: 1, HasUsed: true}
	var errs []error
	for range 20 {
		if err := w.WriteProcess(p); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) != 1 || !errors.Is(errs[0], ErrFull) {
		t.Fatalf("errors = %v, want exactly one ErrFull", errs)
	}
	if buf.Len() > 200 {
		t.Errorf("wrote %d bytes past a 200-byte bound", buf.Len())
	}
	full, dropped := w.Full()
	if !full || dropped == 0 || int(dropped)+strings.Count(buf.String(), "\n") != 20 {
		t.Errorf("Full() = %v, %d with %d lines written", full, dropped, strings.Count(buf.String(), "\n"))
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte(`{"t": 1, "pid": 1, "uuid": "GPU-a", "used": 5}` + "\n" + `{"t":2,"uuid":"GPU-a","gpu_used":1,"gpu_total":2}`))
	f.Add([]byte("{\n}\n\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(bytes.NewReader(b))
		for i := 0; i < 10000; i++ {
			rec, err := r.Next()
			if err != nil {
				return
			}
			if (rec.Process == nil) == (rec.GPU == nil) {
				t.Fatalf("record with both or neither kind: %+v", rec)
			}
		}
	})
}

// A line over MaxLineBytes is skipped and counted; the lines after it are still read
// (bufio.Scanner stopped the whole replay there).
func TestReaderSkipsLongLines(t *testing.T) {
	good := `{"t": 1, "pid": 1, "uuid": "GPU-a", "used": 5}`
	long := `{"t": 1, "pid": 1, "uuid": "GPU-` + strings.Repeat("a", 3*MaxLineBytes) + `"}`
	in := good + "\n" + long + "\n" + good + "\n" + strings.Repeat("x", MaxLineBytes+10)
	r := NewReader(strings.NewReader(in))
	var lines []int
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		lines = append(lines, rec.Line)
	}
	if fmt.Sprint(lines) != "[1 3]" {
		t.Errorf("records at lines %v, want [1 3]", lines)
	}
	n, errs := r.Malformed()
	if n != 2 || len(errs) != 2 || errs[0].Line != 2 || errs[1].Line != 4 || !strings.Contains(errs[0].Error(), "longer than") {
		t.Errorf("Malformed() = %d, %v; want lines 2 and 4, too long", n, errs)
	}
}

// At its bound a rotating Writer calls rotate and starts over: no output past the
// bound, only whole lines, nothing dropped.
func TestWriterRotates(t *testing.T) {
	var files []*bytes.Buffer
	cur := &bytes.Buffer{}
	var out switchWriter
	out.w = cur
	rotate := func() error {
		files = append(files, cur)
		cur = &bytes.Buffer{}
		out.w = cur
		return nil
	}
	w := Rotating(&out, 200, 150, rotate) // the file already holds 150 bytes
	p := trend.Sample{T: time.Unix(1, 0), Key: trend.Key{PID: 1, UUID: "GPU-a"}, Used: 1, HasUsed: true}
	for range 20 {
		if err := w.WriteProcess(p); err != nil {
			t.Fatal(err)
		}
	}
	files = append(files, cur)
	if w.Rotations() == 0 || w.Rotations() != len(files)-1 {
		t.Fatalf("%d rotations for %d files", w.Rotations(), len(files))
	}
	lines := 0
	for i, f := range files {
		limit := 200
		if i == 0 {
			limit = 50 // what was left of the bound
		}
		if f.Len() > limit {
			t.Errorf("file %d holds %d bytes, over %d", i, f.Len(), limit)
		}
		if f.Len() > 0 && !strings.HasSuffix(f.String(), "}\n") {
			t.Errorf("file %d ends mid-line: %q", i, f.String())
		}
		lines += strings.Count(f.String(), "\n")
	}
	if full, dropped := w.Full(); full || dropped != 0 || lines != 20 {
		t.Errorf("Full() = %v, %d; %d of 20 lines written", full, dropped, lines)
	}
}

// A rotate that fails stops recording like the bound does, once.
func TestWriterRotateFailureStops(t *testing.T) {
	var buf bytes.Buffer
	w := Rotating(&buf, 100, 0, func() error { return errors.New("rename: read-only file system") })
	p := trend.Sample{T: time.Unix(1, 0), Key: trend.Key{PID: 1, UUID: "GPU-a"}, Used: 1, HasUsed: true}
	var errs []error
	for range 10 {
		if err := w.WriteProcess(p); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "read-only") {
		t.Errorf("errors = %v, want one naming the rotate failure", errs)
	}
}

type switchWriter struct{ w io.Writer }

func (s *switchWriter) Write(b []byte) (int, error) { return s.w.Write(b) }
