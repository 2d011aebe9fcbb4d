package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// systemd's own checker accepts the unit: no unknown key, no bad value, no warning. It
// wants ExecStart's binary to exist, so a copy of the unit runs /bin/true instead (with
// the same flags); everything else is the shipped file.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze := requireTool(t, "systemd-analyze")
	b, err := os.ReadFile("systemd/vram_exporter.service")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if !strings.Contains(text, "ExecStart=/usr/local/bin/vram_exporter ") {
		t.Fatal("ExecStart no longer runs /usr/local/bin/vram_exporter; update this test")
	}
	text = strings.Replace(text, "ExecStart=/usr/local/bin/vram_exporter ", "ExecStart=/bin/true ", 1)
	unit := filepath.Join(t.TempDir(), "vram_exporter.service")
	if err := os.WriteFile(unit, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
