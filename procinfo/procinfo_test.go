//go:build linux

package procinfo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func fixtureReader(t testing.TB, opts ...Option) *Reader {
	t.Helper()
	r, err := NewReader(fixtureRoot, opts...)
	if err != nil {
		t.Fatalf("NewReader(%q): %v", fixtureRoot, err)
	}
	return r
}

func ticksAfterBoot(ticks uint64) time.Time {
	return time.Unix(fixtureBoot, 0).Add(time.Duration(ticks) * 10 * time.Millisecond)
}

func TestFactsFixtures(t *testing.T) {
	page := uint64(os.Getpagesize())
	tests := []struct {
		name string
		pid  uint32
		want Facts
	}{
		{
			name: "vllm in a Kubernetes pod, containerd, cgroup v2",
			pid:  4242,
			want: Facts{
				PID:         4242,
				Comm:        "python3",
				Cmdline:     "python3 -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3-8B",
				StartTicks:  1234567,
				StartTime:   ticksAfterBoot(1234567),
				RSSBytes:    524288 * page,
				ContainerID: "containerd://" + hex1,
				PodUID:      podUID1,
			},
		},
		{
			name: "plain docker, cgroup v1",
			pid:  5151,
			want: Facts{
				PID:         5151,
				Comm:        "ollama",
				Cmdline:     "ollama serve",
				StartTicks:  200000,
				StartTime:   ticksAfterBoot(200000),
				RSSBytes:    10000 * page,
				ContainerID: "docker://" + hex2,
			},
		},
		{
			name: "host process, comm with a parenthesis, long UTF-8 cmdline cut",
			pid:  6161,
			want: Facts{
				PID:        6161,
				Comm:       "my (gpu) job",
				Cmdline:    "train.py --note " + strings.Repeat("été ", 18) + "…",
				StartTicks: 99,
				StartTime:  ticksAfterBoot(99),
				RSSBytes:   page,
			},
		},
		{
			name: "zombie: no cmdline, no RSS",
			pid:  7171,
			want: Facts{
				PID:        7171,
				Comm:       "defunct",
				StartTicks: 5,
				StartTime:  ticksAfterBoot(5),
			},
		},
	}
	r := fixtureReader(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Facts(tt.pid)
			if err != nil {
				t.Fatalf("Facts(%d): %v", tt.pid, err)
			}
			if !got.StartTime.Equal(tt.want.StartTime) {
				t.Errorf("StartTime = %v, want %v", got.StartTime, tt.want.StartTime)
			}
			got.StartTime, tt.want.StartTime = time.Time{}, time.Time{}
			if got != tt.want {
				t.Errorf("Facts(%d) =\n%+v\nwant\n%+v", tt.pid, got, tt.want)
			}
		})
	}
}

func TestFactsDefaultRuntimeDoesNotOverrideNamedRuntime(t *testing.T) {
	r := fixtureReader(t, WithDefaultRuntime(RuntimeDocker))
	got, err := r.Facts(4242)
	if err != nil {
		t.Fatal(err)
	}
	if want := "containerd://" + hex1; got.ContainerID != want {
		t.Errorf("ContainerID = %q, want %q (the scope name says containerd)", got.ContainerID, want)
	}
}

func TestFactsMissingPID(t *testing.T) {
	r := fixtureReader(t)
	for _, pid := range []uint32{0, 9999, 4294967295} {
		_, err := r.Facts(pid)
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("Facts(%d) error = %v, want ErrNotFound", pid, err)
		}
	}
}

func TestFactsMissingFileInPIDDir(t *testing.T) {
	// The process exited between reading stat and cgroup: the files vanish.
	root := t.TempDir()
	copyFile(t, filepath.Join(fixtureRoot, "stat"), filepath.Join(root, "stat"))
	for _, f := range []string{"stat", "cmdline"} {
		copyFile(t, filepath.Join(fixtureRoot, "4242", f), filepath.Join(root, "4242", f))
	}
	r, err := NewReader(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Facts(4242); !errors.Is(err, ErrNotFound) {
		t.Errorf("Facts(4242) error = %v, want ErrNotFound", err)
	}
}

func TestFactsBrokenStatIsNotNotFound(t *testing.T) {
	r := fixtureReader(t)
	_, err := r.Facts(8181)
	if err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("Facts(8181) error = %v, want a real failure", err)
	}
	if want := `read stat of process 8181 under "testdata/proc"`; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
}

func TestNewReaderErrors(t *testing.T) {
	noBtime := t.TempDir()
	if err := os.WriteFile(filepath.Join(noBtime, "stat"), []byte("cpu  1 2 3 4 5 6 7 8 9 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		root string
		opts []Option
		want string
	}{
		{"missing root", "testdata/no-such-proc", nil, `open procfs at "testdata/no-such-proc": `},
		{"no stat file", t.TempDir(), nil, "read boot time from "},
		{"no btime", noBtime, nil, "no btime line in "},
		{"bad runtime", fixtureRoot, []Option{WithDefaultRuntime("crio")}, `unknown default container runtime "crio"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(tt.root, tt.opts...)
			if err == nil {
				t.Fatalf("NewReader(%q) = %v, want error", tt.root, r)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if tt.name != "bad runtime" && !strings.Contains(err.Error(), "--path.procfs") {
				t.Errorf("error %q does not point at --path.procfs", err)
			}
		})
	}
}

func TestFactsRealProcSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this system")
	}
	r, err := NewReader("/proc")
	if err != nil {
		t.Fatal(err)
	}
	pid := uint32(os.Getpid())
	got, err := r.Facts(pid)
	if err != nil {
		t.Fatal(err)
	}
	wantComm := filepath.Base(os.Args[0])
	if len(wantComm) > 15 { // TASK_COMM_LEN - 1
		wantComm = wantComm[:15]
	}
	if got.PID != pid || got.Comm != wantComm {
		t.Errorf("PID, Comm = %d, %q; want %d, %q", got.PID, got.Comm, pid, wantComm)
	}
	if !strings.HasPrefix(got.Cmdline, filepath.Base(os.Args[0])) {
		t.Errorf("Cmdline %q does not start with %q", got.Cmdline, filepath.Base(os.Args[0]))
	}
	if got.RSSBytes == 0 || got.StartTicks == 0 {
		t.Errorf("RSSBytes = %d, StartTicks = %d; want both > 0", got.RSSBytes, got.StartTicks)
	}
	// The boot time is whole seconds and start ticks are 10 ms, so allow a
	// little slack around "now".
	if now := time.Now(); got.StartTime.After(now.Add(2*time.Second)) || got.StartTime.Before(now.Add(-time.Hour)) {
		t.Errorf("StartTime = %v, want shortly before %v", got.StartTime, now)
	}
}

func TestShortCmdline(t *testing.T) {
	long := strings.Repeat("x", 200)
	tests := []struct {
		name string
		argv []string
		want string
	}{
		{"empty", nil, ""},
		{"empty argv0", []string{""}, ""},
		{"basename", []string{"/opt/conda/bin/python", "serve.py"}, "python serve.py"},
		{"relative", []string{"./bin/tritonserver"}, "tritonserver"},
		{"root only", []string{"/"}, "/"},
		{"process title kept", []string{"sshd: alice@pts/0"}, "sshd: alice@pts/0"},
		{"empty args keep their spaces", []string{"a", "", "b"}, "a  b"},
		{"control characters", []string{"a", "x\ny\tz\x7f"}, "a x y z "},
		{"invalid UTF-8", []string{"a", "\xff\xfeb"}, "a \uFFFD\uFFFDb"},
		{"exactly 128", []string{long[:128]}, long[:128]},
		{"129 is cut", []string{long[:129]}, long[:125] + "…"},
		{"cut at separator", []string{long[:124], "yyyy"}, long[:124] + " …"},
		{"cut before a multibyte rune", []string{long[:124] + "日本語"}, long[:124] + "…"},
		{"many args stop early", append([]string{"p"}, strings.Split(strings.Repeat("arg ", 10000), " ")...), "p" + strings.Repeat(" arg", 31) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := shortCmdline(tt.argv)
			if got != tt.want {
				t.Errorf("shortCmdline = %q, want %q", got, tt.want)
			}
			if len(got) > maxCmdline || !utf8.ValidString(got) {
				t.Errorf("shortCmdline = %q: %d bytes, valid UTF-8 %v", got, len(got), utf8.ValidString(got))
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkFacts(b *testing.B) {
	r := fixtureReader(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Facts(4242); err != nil {
			b.Fatal(err)
		}
	}
}

func TestFactsConcurrent(t *testing.T) {
	// The daemon may enrich from several goroutines with one Reader.
	r := fixtureReader(t)
	done := make(chan error)
	for range 4 {
		go func() {
			var err error
			for range 50 {
				if _, err = r.Facts(4242); err != nil {
					break
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
