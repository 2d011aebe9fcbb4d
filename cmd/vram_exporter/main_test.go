package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/vram-exporter/vram_exporter/internal/asuser"
)

// buildDir holds what the end-to-end tests build (the -race binary, built once by
// buildBinary); TestMain removes it when the tests end, so no run leaves a binary in the
// temporary directory. A test binary killed by -timeout or a panic cannot clean up.
var buildDir string

func TestMain(m *testing.M) {
	asuser.Main() // when this binary was started to act as another user
	os.Exit(inTempDir("vram_exporter-e2e", func(dir string) int {
		buildDir = dir
		return m.Run()
	}))
}

// inTempDir runs run with a fresh temporary directory and removes the directory, and
// everything in it, afterwards. Failing to remove it fails the run.
func inTempDir(prefix string, run func(dir string) int) int {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintf(os.Stderr, "end-to-end build directory: %v\n", err)
		return 1
	}
	code := run(dir)
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintf(os.Stderr, "remove the end-to-end build directory: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func TestInTempDirRemovesWhatWasBuilt(t *testing.T) {
	for _, want := range []int{0, 3} {
		var seen string
		got := inTempDir("vram_exporter-inTempDir-test", func(dir string) int {
			seen = dir
			// What buildBinary leaves: a binary, in a subdirectory here for good measure.
			if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "sub", "vram_exporter"), []byte("\x7fELF"), 0o755); err != nil {
				t.Fatal(err)
			}
			return want
		})
		if got != want {
			t.Errorf("inTempDir returned %d, want run's %d", got, want)
		}
		if seen == "" {
			t.Fatal("run was not called")
		}
		if _, err := os.Stat(seen); !os.IsNotExist(err) {
			t.Errorf("%s is still there after inTempDir (stat: %v)", seen, err)
		}
	}
}

// The tests' build directory is the one TestMain removes.
func TestBuildBinaryBuildsIntoTheRemovedDir(t *testing.T) {
	bin := buildBinary(t)
	if buildDir == "" || filepath.Dir(bin) != buildDir {
		t.Errorf("buildBinary built %s, outside TestMain's build directory %q", bin, buildDir)
	}
}
