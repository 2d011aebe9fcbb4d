// Package trace is the record format of the leak detector's input: the samples the
// daemon joins, one JSON object per line, so that an incident can be replayed through
// the same engine later (vram_exporter replay) and the evaluation suite can be fed from
// files, synthetic or recorded on real GPUs.
//
// A process line (any of used, allocated, reserved may be absent; start is optional):
//
//	{"t": 1735689600.5, "pid": 4242, "start": 123456, "uuid": "GPU-…", "used": 1073741824, "allocated": 68157440, "reserved": 536870912}
//
// A GPU line:
//
//	{"t": 1735689600.5, "uuid": "GPU-…", "gpu_used": 8589934592, "gpu_total": 150754820096}
//
// t is Unix time in seconds (fractions allowed); byte fields are integers (a fraction is
// accepted and kept); start is the process start time in clock ticks since boot, which
// tells a reused PID from its predecessor; in_flight, when present, is the requests the
// process had in flight with that push (its client's requests_in_flight), and repeat
// says the allocator stats are a push an earlier line already carried. A line with a pid is a process line; a line
// without one must carry gpu_used and gpu_total. Readers ignore unknown fields, so
// later versions may add some, and count malformed lines (with their line numbers)
// instead of stopping.
package trace

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/vram-exporter/vram_exporter/leak/trend"
)

// Record is one line: exactly one of Process and GPU is set. A line holds exactly what
// the trend engine is fed (its Sample and GPUSample), so a replay sees what the daemon
// saw.
type Record struct {
	Line    int // 1-based line number in the input
	Process *trend.Sample
	GPU     *trend.GPUSample
}

// line is the wire form. Pointers tell "absent" from zero.
type line struct {
	T         *float64 `json:"t"`
	PID       *int64   `json:"pid,omitempty"`
	Start     uint64   `json:"start,omitempty"`
	UUID      string   `json:"uuid"`
	Used      *float64 `json:"used,omitempty"`
	Allocated *float64 `json:"allocated,omitempty"`
	Reserved  *float64 `json:"reserved,omitempty"`
	GPUUsed   *float64 `json:"gpu_used,omitempty"`
	GPUTotal  *float64 `json:"gpu_total,omitempty"`
	// Repeat: allocated and reserved are a push the daemon already recorded.
	Repeat bool `json:"repeat,omitempty"`
	// InFlight: the requests in flight the client reported with that push.
	InFlight *float64 `json:"in_flight,omitempty"`
}

// LineError says why one input line was skipped.
type LineError struct {
	Line int
	Err  error
}

func (e LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e LineError) Unwrap() error { return e.Err }

// maxKeptErrors bounds the line errors a Reader keeps; the count goes on.
const maxKeptErrors = 100

// MaxLineBytes is the longest line a Reader accepts; a longer one is skipped and counted
// as malformed (errLineTooLong), and reading goes on after it.
const MaxLineBytes = 64 * 1024

// Reader reads records from a trace, skipping (and counting) malformed lines.
type Reader struct {
	br        *bufio.Reader
	line      int
	malformed int
	errs      []LineError
	buf       []byte
}

// NewReader returns a Reader over r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 16<<10)}
}

var errLineTooLong = fmt.Errorf("longer than %d bytes (skipped)", MaxLineBytes)

// readLine returns the next line without its newline, or errLineTooLong having consumed
// the whole of a longer one: bufio.Scanner would stop the whole read there instead.
func (r *Reader) readLine() ([]byte, error) {
	r.buf = r.buf[:0]
	long := false
	for {
		chunk, err := r.br.ReadSlice('\n')
		if !long {
			if len(r.buf)+len(chunk) > MaxLineBytes+1 { // +1: the newline
				long, r.buf = true, r.buf[:0]
			} else {
				r.buf = append(r.buf, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && (len(r.buf) > 0 || long) && errors.Is(err, io.EOF):
			// a last line without a newline
		case err != nil:
			return nil, err
		}
		if long {
			return nil, errLineTooLong
		}
		b := r.buf
		if n := len(b); n > 0 && b[n-1] == '\n' {
			b = b[:n-1]
		}
		return b, nil
	}
}

// Next returns the next well-formed record, or io.EOF at the end of the input. Any other
// error is a read error of the underlying reader, not a malformed line.
func (r *Reader) Next() (Record, error) {
	for {
		b, err := r.readLine()
		if err != nil && !errors.Is(err, errLineTooLong) {
			if errors.Is(err, io.EOF) {
				return Record{}, io.EOF
			}
			return Record{}, fmt.Errorf("reading trace after line %d: %w", r.line, err)
		}
		r.line++
		var rec Record
		if err == nil {
			if len(trimSpace(b)) == 0 {
				continue
			}
			rec, err = parse(b)
		}
		if err != nil {
			r.malformed++
			if len(r.errs) < maxKeptErrors {
				r.errs = append(r.errs, LineError{Line: r.line, Err: err})
			}
			continue
		}
		rec.Line = r.line
		return rec, nil
	}
}

// Malformed reports how many lines were skipped, and the first ones with their reasons.
func (r *Reader) Malformed() (int, []LineError) { return r.malformed, r.errs }

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

var (
	errNoTime    = errors.New(`missing "t" (Unix seconds)`)
	errNoUUID    = errors.New(`missing "uuid"`)
	errBadPID    = errors.New(`"pid" must be an integer between 1 and 4294967295`)
	errNoGPU     = errors.New(`a line without "pid" must carry "gpu_used" and "gpu_total"`)
	errBadNumber = errors.New("byte counts must be finite and not negative")
	// in_flight is the client's requests_in_flight, a count.
	errBadInFlight = errors.New(`"in_flight" must be an integer between 0 and 4294967295`)
)

func parse(b []byte) (Record, error) {
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return Record{}, fmt.Errorf("not a JSON object: %w", err)
	}
	if l.T == nil || math.IsNaN(*l.T) || math.IsInf(*l.T, 0) {
		return Record{}, errNoTime
	}
	if l.UUID == "" {
		return Record{}, errNoUUID
	}
	for _, p := range []*float64{l.Used, l.Allocated, l.Reserved, l.GPUUsed, l.GPUTotal} {
		if p != nil && (*p < 0 || math.IsInf(*p, 0) || math.IsNaN(*p)) {
			return Record{}, errBadNumber
		}
	}
	t := fromUnix(*l.T)
	if l.PID == nil {
		if l.GPUUsed == nil || l.GPUTotal == nil {
			return Record{}, errNoGPU
		}
		return Record{GPU: &trend.GPUSample{T: t, UUID: l.UUID, Used: *l.GPUUsed, Total: *l.GPUTotal}}, nil
	}
	if *l.PID < 1 || *l.PID > math.MaxUint32 {
		return Record{}, errBadPID
	}
	p := &trend.Sample{T: t, Key: trend.Key{PID: uint32(*l.PID), Start: l.Start, UUID: l.UUID}}
	if l.Used != nil {
		p.Used, p.HasUsed = *l.Used, true
	}
	if l.Allocated != nil {
		p.Allocated, p.HasAllocated = *l.Allocated, true
	}
	if l.Reserved != nil {
		p.Reserved, p.HasReserved = *l.Reserved, true
	}
	p.Repeat = l.Repeat && (p.HasAllocated || p.HasReserved)
	if l.InFlight != nil {
		f := *l.InFlight
		if f < 0 || f > math.MaxUint32 || f != math.Trunc(f) {
			return Record{}, errBadInFlight
		}
		p.InFlight, p.HasInFlight = uint32(f), true
	}
	return Record{Process: p}, nil
}

// fromUnix converts Unix seconds to a time, to the microsecond: finer digits are float
// noise, and rounding keeps a written-then-read time equal to the original.
func fromUnix(s float64) time.Time {
	us := math.Round(s * 1e6)
	return time.UnixMicro(int64(us)).UTC()
}

// ErrFull is returned (once) by the write that would take a Writer past its bound.
var ErrFull = errors.New("trace file reached its size bound; recording stopped")

// Writer writes records to a trace, up to a bound on the bytes written. Past the bound
// it writes nothing more: the first write refused returns an error wrapping ErrFull (for
// the caller to log once); later ones are dropped and counted silently. A Writer given
// a rotate function (Rotating) starts over instead.
type Writer struct {
	w       io.Writer
	max     int64
	written int64
	full    bool
	dropped int64
	rotate  func() error
	rotated int
	buf     []byte
}

// NewWriter returns a Writer to w that writes at most maxBytes (0 or less: no bound).
func NewWriter(w io.Writer, maxBytes int64) *Writer {
	return &Writer{w: w, max: maxBytes}
}

// Rotating returns a Writer to w that, when a line would take the output past maxBytes,
// calls rotate and writes on from zero. rotate must finish the current output and leave
// w writing to a fresh one (the daemon flushes, renames the file to PATH.1 and reopens
// PATH), so every file holds whole lines and at most maxBytes. written is what the
// output already holds (a file appended to after a restart); past the bound already,
// the first write rotates. A failed rotate stops the Writer like ErrFull.
func Rotating(w io.Writer, maxBytes, written int64, rotate func() error) *Writer {
	return &Writer{w: w, max: maxBytes, written: written, rotate: rotate}
}

// Rotations is how many times the Writer started a new output.
func (w *Writer) Rotations() int { return w.rotated }

// WriteProcess appends a process line.
func (w *Writer) WriteProcess(p trend.Sample) error {
	b := w.buf[:0]
	b = append(b, `{"t":`...)
	b = appendTime(b, p.T)
	b = append(b, `,"pid":`...)
	b = strconv.AppendUint(b, uint64(p.Key.PID), 10)
	if p.Key.Start != 0 {
		b = append(b, `,"start":`...)
		b = strconv.AppendUint(b, p.Key.Start, 10)
	}
	b = append(b, `,"uuid":`...)
	b = strconv.AppendQuote(b, p.Key.UUID)
	if p.HasUsed {
		b = appendField(b, "used", p.Used)
	}
	if p.HasAllocated {
		b = appendField(b, "allocated", p.Allocated)
	}
	if p.HasReserved {
		b = appendField(b, "reserved", p.Reserved)
	}
	if p.Repeat && (p.HasAllocated || p.HasReserved) {
		b = append(b, `,"repeat":true`...)
	}
	if p.HasInFlight {
		b = append(b, `,"in_flight":`...)
		b = strconv.AppendUint(b, uint64(p.InFlight), 10)
	}
	b = append(b, "}\n"...)
	w.buf = b
	return w.write(b)
}

// WriteGPU appends a GPU line.
func (w *Writer) WriteGPU(g trend.GPUSample) error {
	b := w.buf[:0]
	b = append(b, `{"t":`...)
	b = appendTime(b, g.T)
	b = append(b, `,"uuid":`...)
	b = strconv.AppendQuote(b, g.UUID)
	b = appendField(b, "gpu_used", g.Used)
	b = appendField(b, "gpu_total", g.Total)
	b = append(b, "}\n"...)
	w.buf = b
	return w.write(b)
}

// Full reports whether the bound was reached, and how many records were dropped since.
func (w *Writer) Full() (bool, int64) { return w.full, w.dropped }

func (w *Writer) write(b []byte) error {
	if w.full {
		w.dropped++
		return nil
	}
	if w.max > 0 && w.written+int64(len(b)) > w.max {
		if w.rotate == nil {
			w.full = true
			w.dropped++
			return fmt.Errorf("%w after %d bytes (raise the bound or start a new file)", ErrFull, w.written)
		}
		if err := w.rotate(); err != nil {
			w.full = true
			w.dropped++
			return fmt.Errorf("starting a new trace file at the size bound: %w; recording stopped", err)
		}
		w.rotated++
		w.written = 0
	}
	n, err := w.w.Write(b)
	w.written += int64(n)
	if err != nil {
		return fmt.Errorf("writing trace: %w", err)
	}
	return nil
}

func appendTime(b []byte, t time.Time) []byte {
	us := t.UnixMicro()
	return strconv.AppendFloat(b, float64(us)/1e6, 'f', -1, 64)
}

func appendField(b []byte, name string, v float64) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		return strconv.AppendInt(b, int64(v), 10)
	}
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}
