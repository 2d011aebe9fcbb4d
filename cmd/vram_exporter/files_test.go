package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vram-exporter/vram_exporter/internal/asuser"
)

// The per-user fallback directory is made 0700; an existing one is used only if this
// user owns it and nobody else can write it.
func TestPrepareFallbackDir(t *testing.T) {
	base := t.TempDir()
	fresh := filepath.Join(base, "fresh")
	if err := prepareFallbackDir(fresh); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("fresh directory: %v, %v; want mode 0700", fi.Mode(), err)
	}
	if err := prepareFallbackDir(fresh); err != nil {
		t.Errorf("own 0700 directory refused: %v", err)
	}

	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := prepareFallbackDir(open); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Errorf("world-writable directory: %v, want refused as writable by others", err)
	}

	link := filepath.Join(base, "link")
	if err := os.Symlink(fresh, link); err != nil {
		t.Fatal(err)
	}
	if err := prepareFallbackDir(link); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("symlink: %v, want refused", err)
	}
}

func TestPrepareFallbackDirRefusesAnotherUsersDirectory(t *testing.T) {
	asuser.RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "theirs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, asuser.Nobody, asuser.Nobody); err != nil {
		t.Fatal(err)
	}
	if err := prepareFallbackDir(dir); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Errorf("a directory of uid 65534: %v, want refused naming its owner", err)
	}
}
