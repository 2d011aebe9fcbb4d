package join

import (
	"bufio"

	"github.com/vram-exporter/vram_exporter/leak/trace"
)

// TraceRecorder writes every joined view to a trace (JSON lines) so that an incident can
// be replayed later with `vram_exporter replay`. It flushes once per tick: a crash loses
// at most one tick, and the file is always whole lines.
type TraceRecorder struct {
	buf *bufio.Writer
	w   *trace.Writer
}

// NewTraceRecorder records to out, writing at most maxBytes.
func NewTraceRecorder(out *bufio.Writer, maxBytes int64) *TraceRecorder {
	return &TraceRecorder{buf: out, w: trace.NewWriter(out, maxBytes)}
}

// NewRotatingTraceRecorder records to out and calls rotate at the maxBytes bound
// instead of stopping (trace.Rotating; written is what the output already holds). rotate
// must flush out and reset it onto a fresh file.
func NewRotatingTraceRecorder(out *bufio.Writer, maxBytes, written int64, rotate func() error) *TraceRecorder {
	return &TraceRecorder{buf: out, w: trace.Rotating(out, maxBytes, written, rotate)}
}

// Record writes one line per GPU and per (pid, uuid) of the view: the samples the trend
// engine is fed (GPU.Sample, Process.Sample).
func (r *TraceRecorder) Record(v *View) error {
	for i := range v.GPUs {
		g := &v.GPUs[i]
		if err := r.w.WriteGPU(g.Sample(v.Time)); err != nil {
			return err
		}
	}
	for i := range v.Processes {
		if err := r.w.WriteProcess(v.Processes[i].Sample(v.Time)); err != nil {
			return err
		}
	}
	return r.buf.Flush()
}
