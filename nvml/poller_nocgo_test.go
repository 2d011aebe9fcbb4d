//go:build !cgo

package nvml_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/vram-exporter/vram_exporter/clock"
	"github.com/vram-exporter/vram_exporter/nvml"
)

// Without cgo the daemon still gets a Poller: it stays down, counts the Init that cannot
// happen and says once why, and Run returns when the daemon stops.
func TestNotBuiltInPollerStaysDownAndSaysWhy(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	epoch := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	p := nvml.NewLibraryPoller("/ignored/libnvidia-ml.so.1", nvml.Options{Clock: clock.NewFake(epoch)}, zap.New(core))
	if s := p.Latest(); s.Up || len(s.Errors) != 0 {
		t.Fatalf("before Run: %+v, want down with no errors", s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()

	key := nvml.ErrorKey{Call: nvml.CallInit, Error: nvml.NotBuiltIn}
	deadline := time.Now().Add(10 * time.Second)
	for p.Latest().Errors[key] != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("Run did not publish the not-built-in Init; latest %+v", p.Latest())
		}
		time.Sleep(time.Millisecond)
	}
	if s := p.Latest(); s.Up || !s.Time.Equal(epoch) {
		t.Errorf("after Run: up %v at %v, want down at %v", s.Up, s.Time, epoch)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
	warns := logs.FilterLevelExact(zap.WarnLevel).All()
	if len(warns) != 1 {
		t.Fatalf("want one warn line, got %d: %v", len(warns), logs.All())
	}
	err, _ := warns[0].ContextMap()["error"].(string)
	if err != nvml.ErrNotBuiltIn.Error() {
		t.Errorf("warn line error field %q, want %q", err, nvml.ErrNotBuiltIn)
	}
}
