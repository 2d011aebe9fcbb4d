package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger builds the one logger the daemon passes down. format is console|json.
func newLogger(level, format string, w io.Writer) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	ec := zap.NewProductionEncoderConfig()
	ec.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	switch format {
	case "json":
		enc = zapcore.NewJSONEncoder(ec)
	case "console", "":
		ec.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(ec)
	default:
		return nil, fmt.Errorf("log format %q: want console or json", format)
	}
	core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), lvl)
	return zap.New(core, zap.ErrorOutput(zapcore.AddSync(w))), nil
}

// toolkitLogHandler carries the exporter-toolkit's log lines into zap. The toolkit names
// the listen address on two lines per listener ("Listening on", then "TLS is disabled."
// or "TLS is enabled."); the daemon's own "listening" line already names it, so the first
// is dropped and the address is left off the others, which keep what only the toolkit
// knows (TLS, HTTP/2, rate limiting). Warnings and errors pass untouched.
type toolkitLogHandler struct{ slog.Handler }

func (h toolkitLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		return h.Handler.Handle(ctx, r)
	}
	if r.Message == "Listening on" {
		return nil
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "address" {
			out.AddAttrs(a)
		}
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h toolkitLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return toolkitLogHandler{h.Handler.WithAttrs(as)}
}

func (h toolkitLogHandler) WithGroup(name string) slog.Handler {
	return toolkitLogHandler{h.Handler.WithGroup(name)}
}
