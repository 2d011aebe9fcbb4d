//go:build !linux

package push

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Off Linux the push socket is not built in: Listen says so and creates nothing, so the
// daemon can report it and serve the rest.
func TestListenIsNotBuiltIn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	srv, err := NewServer(ServerOptions{Path: filepath.Join(dir, "push.sock")}, NewStore(0, 0, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); !errors.Is(err, ErrNotBuiltIn) {
		t.Fatalf("Listen = %v, want ErrNotBuiltIn", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Listen touched the filesystem: %s: %v", dir, err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("Close after a failed Listen: %v", err)
	}
}
