package main

import (
	"bufio"
	"fmt"
	"os"

	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/config"
	"github.com/vram-exporter/vram_exporter/join"
)

// openRecorder opens --trace.record for appending (a restart must not wipe the trace of
// an incident) and bounds it by --trace.max-bytes including what the file already holds.
func openRecorder(cfg config.Config, logger *zap.Logger) (join.Recorder, func(), error) {
	path := cfg.Trace.Record
	if path == "" {
		return nil, func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot open --trace.record file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("trace file: %w", err)
	}
	left := int64(cfg.Trace.MaxBytes) - st.Size()
	if left <= 0 {
		f.Close()
		return nil, nil, fmt.Errorf("trace file %s already holds %d bytes, at or over --trace.max-bytes %d: move it away or raise the bound", path, st.Size(), cfg.Trace.MaxBytes)
	}
	logger.Info("recording a trace of every sample", zap.String("path", path), zap.Int64("bytes_left", left))
	buf := bufio.NewWriterSize(f, 64<<10)
	return join.NewTraceRecorder(buf, left), func() {
		if err := buf.Flush(); err != nil {
			logger.Warn("flushing the trace file", zap.Error(err))
		}
		f.Close()
	}, nil
}
