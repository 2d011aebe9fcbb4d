package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// --config.check and the daemon's start refuse the same settings with the same words:
// a port out of range, a missing or broken web config, a trace path the daemon cannot
// open. The check said "valid" for each, and then the daemon exited 1 (or, for a FIFO,
// hung at start).
func TestConfigCheckRefusesWhatTheStartRefuses(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken-web.yml")
	if err := os.WriteFile(broken, []byte("tls_server_config:\n  cert_file: /nonexistent/cert.pem\n  key_file: /nonexistent/key.pem\nbasic_auth_users:\n  x: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noCert := filepath.Join(dir, "no-cert-web.yml")
	if err := os.WriteFile(noCert, []byte("tls_server_config:\n  cert_file: /nonexistent/cert.pem\n  key_file: /nonexistent/key.pem\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "trace.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		flag string
		want string
	}{
		{"port out of range", "--web.listen-address=127.0.0.1:99999", `web.listen_address: port "99999"`},
		{"missing web config", "--web.config.file=" + filepath.Join(dir, "missing.yml"), "web.config_file " + filepath.Join(dir, "missing.yml")},
		{"broken web config", "--web.config.file=" + broken, "web.config_file " + broken},
		{"web config with missing certificates", "--web.config.file=" + noCert, "web.config_file " + noCert},
		{"trace path in a missing directory", "--trace.record=" + filepath.Join(dir, "nope", "t.jsonl"), "trace.record: cannot create --trace.record file"},
		{"trace path is a FIFO", "--trace.record=" + fifo, "is not a regular file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(extra ...string) string {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				args := append([]string{tc.flag, "--push.socket=" + filepath.Join(t.TempDir(), "push.sock"),
					"--nvml.library-path=/nonexistent/libnvidia-ml.so.1"}, extra...)
				out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
				if ctx.Err() != nil {
					t.Fatalf("%v did not exit within 60s:\n%s", args, out)
				}
				var ee *exec.ExitError
				if !errorsAs(err, &ee) || ee.ExitCode() != 1 {
					t.Fatalf("%v: %v, want exit 1\n%s", args, err, out)
				}
				return string(out)
			}
			check := run("--config.check")
			if !strings.Contains(check, tc.want) {
				t.Errorf("--config.check says:\n%s\nwant it to contain %q", check, tc.want)
			}
			if start := run(); start != check {
				t.Errorf("the start and the check disagree:\nstart:\n%s\ncheck:\n%s", start, check)
			}
		})
	}
}
