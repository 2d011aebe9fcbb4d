package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/config"
	"github.com/vram-exporter/vram_exporter/join"
)

// openTraceFile opens --trace.record for appending (a restart must not wipe the trace of
// an incident). O_NONBLOCK keeps a FIFO (or a device) at the path from blocking the
// start, where the daemon could not even be stopped; anything but a regular file is
// refused. create false only checks that the daemon could open it, for --config.check.
func openTraceFile(path string, create bool) (*os.File, error) {
	flags := os.O_WRONLY | os.O_APPEND | syscall.O_NONBLOCK
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o640)
	switch {
	case errors.Is(err, syscall.ENXIO): // a FIFO nobody reads
		return nil, notRegular(path, fs.ModeNamedPipe)
	case !create && errors.Is(err, fs.ErrNotExist):
		dir := filepath.Dir(path)
		if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
			return nil, fmt.Errorf("cannot create --trace.record file %s: directory %s: %w", path, dir, err)
		}
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("cannot open --trace.record file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("--trace.record file %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, notRegular(path, st.Mode().Type())
	}
	return f, nil
}

func notRegular(path string, m fs.FileMode) error {
	return fmt.Errorf("--trace.record %s is not a regular file (%v); give the path of a file the daemon may create and append to", path, m)
}

// checkTraceFile is --config.check's view of the trace file: what openTraceFile would
// refuse at start, without creating it.
func checkTraceFile(path string) error {
	if path == "" {
		return nil
	}
	f, err := openTraceFile(path, false)
	if f != nil {
		f.Close()
	}
	return err
}

// openRecorder opens --trace.record and records up to --trace.max-bytes per file: at the
// bound it moves the file to PATH.1 (replacing the previous one) and starts PATH afresh,
// so a full trace never stops the daemon from starting and at most twice the bound sits
// on disk.
func openRecorder(cfg config.Config, logger *zap.Logger) (join.Recorder, func(), error) {
	path := cfg.Trace.Record
	if path == "" {
		return nil, func() {}, nil
	}
	f, err := openTraceFile(path, true)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("--trace.record file %s: %w", path, err)
	}
	buf := bufio.NewWriterSize(f, 64<<10)
	rotate := func() error {
		if err := buf.Flush(); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		if err := os.Rename(path, path+".1"); err != nil {
			return err
		}
		nf, err := openTraceFile(path, true)
		if err != nil {
			return err
		}
		f = nf
		buf.Reset(f)
		logger.Info("trace file reached --trace.max-bytes; moved it to PATH.1 and started a new one",
			zap.String("path", path), zap.Uint64("max_bytes", cfg.Trace.MaxBytes))
		return nil
	}
	logger.Info("recording a trace of every sample", zap.String("path", path),
		zap.Int64("bytes", st.Size()), zap.Uint64("max_bytes", cfg.Trace.MaxBytes))
	rec := join.NewRotatingTraceRecorder(buf, int64(cfg.Trace.MaxBytes), st.Size(), rotate)
	return rec, func() {
		if err := buf.Flush(); err != nil {
			logger.Warn("flushing the trace file", zap.Error(err))
		}
		f.Close()
	}, nil
}
