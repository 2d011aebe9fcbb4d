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

// Record writes one line per GPU and per (pid, uuid) of the view. Allocated and reserved
// are the top-level pool sums, as the trend engine sees them.
func (r *TraceRecorder) Record(v *View) error {
	for i := range v.GPUs {
		g := &v.GPUs[i]
		if err := r.w.WriteGPU(trace.GPU{T: v.Time, UUID: g.UUID, Used: float64(g.UsedBytes), Total: float64(g.TotalBytes)}); err != nil {
			return err
		}
	}
	for i := range v.Processes {
		p := &v.Processes[i]
		err := r.w.WriteProcess(trace.Process{
			T: v.Time, PID: p.PID, Start: p.Facts.StartTicks, UUID: p.UUID,
			Used: float64(p.UsedBytes), HasUsed: p.HasNVML,
			Allocated: float64(p.AllocatedBytes), HasAllocated: p.Pushed,
			Reserved: float64(p.ReservedBytes), HasReserved: p.Pushed,
		})
		if err != nil {
			return err
		}
	}
	return r.buf.Flush()
}
