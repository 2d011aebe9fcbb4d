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
