// Package procinfo reads process facts from procfs: the name,
// short command line, start time, host RSS, container ID and Kubernetes pod
// UID of the processes NVML reports on a GPU.
//
// NVML reports host PIDs, so these facts are only right when the daemon sees
// the host PID namespace: in Kubernetes run the pod with hostPID: true, and in
// any container point --path.procfs at the host's /proc mounted inside it
// (e.g. /host/proc). Otherwise every GPU process is ErrNotFound, or worse, a
// PID names an unrelated process of the container.
//
// A PID alone does not identify a process, since the kernel reuses PIDs;
// (PID, StartTicks) does. Callers that cache facts should key them on both.
//
// Container IDs are written the way kube-state-metrics writes container_id
// ("containerd://<64 hex>", "docker://…", "cri-o://…", "podman://…") so the
// two join in PromQL. The runtime is read from the cgroup path where the path
// names it (systemd driver scopes such as cri-containerd-<id>.scope, or
// /docker/<id>). The Kubernetes cgroupfs driver layout,
// /kubepods/<qos>/pod<uid>/<id>, does not name the runtime: WithDefaultRuntime
// says which one the node uses, containerd unless told otherwise.
package procinfo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/prometheus/procfs"
)

// ErrNotFound means the process is not in procfs: it exited (normal, GPU
// processes come and go between an NVML sample and this read), or the daemon
// does not see the host PID namespace.
var ErrNotFound = errors.New("process not found in procfs (it exited, or the daemon does not see the host PID namespace: " +
	"run with hostPID: true and --path.procfs pointing at the host's /proc)")

// ErrNotBuiltIn is what NewReader returns on an OS other than Linux, which has no
// procfs: the daemon then runs without process facts (there are no GPU processes to
// describe there anyway, since NVML and the push socket are Linux's too).
var ErrNotBuiltIn = errors.New("process facts are not built in on " + runtime.GOOS + " (they are read from Linux's procfs)")

// Facts about one process, read from procfs.
type Facts struct {
	PID uint32
	// Comm is the kernel's task name (as in /proc/PID/comm), at most 15 bytes.
	Comm string
	// Cmdline is argv joined by spaces, argv[0] reduced to its basename, at
	// most 128 bytes of valid UTF-8, cut with "…": short enough for a label.
	Cmdline string
	// StartTicks is field 22 of /proc/PID/stat, clock ticks after boot. With
	// PID it identifies a process, so a reused PID is a new process.
	StartTicks uint64
	// StartTime is the wall-clock start: boot time + StartTicks/USER_HZ.
	StartTime time.Time
	// RSSBytes is the host resident set size.
	RSSBytes uint64
	// ContainerID is "<runtime>://<64 hex>" as kube-state-metrics writes it,
	// "" when the process is not in a container.
	ContainerID string
	// PodUID is the Kubernetes pod UID with dashes, "" when none.
	PodUID string
}

// Option configures a Reader.
type Option func(*Reader)

// WithDefaultRuntime names the runtime ("containerd", "docker", "cri-o" or
// "podman") for cgroup paths that give a container ID without saying which
// runtime made it: the Kubernetes cgroupfs driver layout
// /kubepods/<qos>/pod<uid>/<id>. The default is containerd.
func WithDefaultRuntime(name string) Option {
	return func(r *Reader) { r.defaultRuntime = name }
}

// userHZ is USER_HZ, the unit of the start time in /proc/PID/stat. The kernel
// fixes it at 100 for userspace on every architecture Linux GPUs run on,
// whatever CONFIG_HZ is; procfs assumes the same.
const userHZ = 100

// maxCmdline bounds Cmdline: it ends up in label values and the JSON API.
const maxCmdline = 128

// Reader reads Facts from one procfs mount. It is immutable after NewReader,
// so it is safe for concurrent use.
type Reader struct {
	fs             procfs.FS
	root           string
	bootTime       time.Time
	pageSize       uint64
	defaultRuntime string
}

// NewReader opens the procfs mounted at procRoot and reads the boot time once
// (it does not change while the machine is up).
func NewReader(procRoot string, opts ...Option) (*Reader, error) {
	if !builtIn {
		return nil, ErrNotBuiltIn
	}
	r := &Reader{root: procRoot, pageSize: uint64(os.Getpagesize()), defaultRuntime: RuntimeContainerd}
	for _, o := range opts {
		o(r)
	}
	switch r.defaultRuntime {
	case RuntimeContainerd, RuntimeDocker, RuntimeCRIO, RuntimePodman:
	default:
		return nil, fmt.Errorf("unknown default container runtime %q: use one of %q, %q, %q, %q (as kube-state-metrics writes them in container_id)",
			r.defaultRuntime, RuntimeContainerd, RuntimeDocker, RuntimeCRIO, RuntimePodman)
	}
	var err error
	if r.fs, err = procfs.NewFS(procRoot); err != nil {
		return nil, fmt.Errorf("open procfs at %q: %w (check --path.procfs: it must point at the host's /proc)", procRoot, err)
	}
	st, err := r.fs.Stat()
	if err != nil {
		return nil, fmt.Errorf("read boot time from %q: %w (check --path.procfs: it must point at a mounted /proc)",
			filepath.Join(procRoot, "stat"), err)
	}
	if st.BootTime == 0 {
		return nil, fmt.Errorf("no btime line in %q (check --path.procfs: it must point at a mounted /proc)", filepath.Join(procRoot, "stat"))
	}
	r.bootTime = time.Unix(int64(st.BootTime), 0)
	return r, nil
}

// Facts reads the facts of one process. It returns an error wrapping
// ErrNotFound when the process is gone; any other error is a real failure.
func (r *Reader) Facts(pid uint32) (Facts, error) {
	p, err := r.fs.Proc(int(pid))
	if err != nil {
		return Facts{}, r.readErr(pid, "directory", err)
	}
	st, err := p.Stat()
	if err != nil {
		return Facts{}, r.readErr(pid, "stat", err)
	}
	argv, err := p.CmdLine()
	if err != nil {
		return Facts{}, r.readErr(pid, "cmdline", err)
	}
	// Read raw rather than through procfs's Cgroups: ParseCgroup tolerates
	// odd lines, where procfs fails the whole file on one.
	cg, err := os.ReadFile(r.root + "/" + strconv.FormatUint(uint64(pid), 10) + "/cgroup")
	if err != nil {
		return Facts{}, r.readErr(pid, "cgroup", err)
	}
	f := Facts{
		PID: pid,
		// The comm in stat is the same kernel field as /proc/PID/comm;
		// taking it from there saves a file read per process.
		Comm:       st.Comm,
		Cmdline:    shortCmdline(argv),
		StartTicks: st.Starttime,
		StartTime:  r.bootTime.Add(time.Duration(st.Starttime) * (time.Second / userHZ)),
	}
	if st.RSS > 0 {
		f.RSSBytes = uint64(st.RSS) * r.pageSize
	}
	f.ContainerID, f.PodUID = ParseCgroup(string(cg), r.defaultRuntime)
	return f, nil
}

// readErr maps "the process is gone" to ErrNotFound: ENOENT when the PID
// directory is already reaped, ESRCH when it went away between open and read.
func (r *Reader) readErr(pid uint32, what string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("process %d: %w", pid, ErrNotFound)
	}
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("read %s of process %d under %q: %w (is procfs mounted with hidepid? the daemon must read other users' processes)",
			what, pid, r.root, err)
	}
	return fmt.Errorf("read %s of process %d under %q: %w", what, pid, r.root, err)
}

// shortCmdline joins argv into a label-sized string: argv[0] is reduced to its
// basename (the path adds length, not meaning), invalid UTF-8 becomes U+FFFD
// and control characters become spaces, so the result is always a valid and
// printable label value.
func shortCmdline(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	const ellipsis = "…"
	out := make([]byte, 0, maxCmdline)
	cut := -1 // where to cut if it turns out too long
	// add appends one rune, or reports false once the limit is passed.
	add := func(c rune) bool {
		w := utf8.RuneLen(c)
		if cut < 0 && len(out)+w > maxCmdline-len(ellipsis) {
			cut = len(out)
		}
		if len(out)+w > maxCmdline {
			return false
		}
		out = utf8.AppendRune(out, c)
		return true
	}
	for i, a := range argv {
		if i == 0 {
			a = argv0Base(a)
		} else if !add(' ') {
			return string(out[:cut]) + ellipsis
		}
		for j := 0; j < len(a); {
			c, n := utf8.DecodeRuneInString(a[j:])
			j += n
			if c < 0x20 || c == 0x7f {
				c = ' '
			}
			// An invalid byte already decodes as utf8.RuneError (U+FFFD).
			if !add(c) {
				return string(out[:cut]) + ellipsis
			}
		}
	}
	return string(out)
}

// argv0Base keeps only the basename of a path in argv[0]. Processes that
// rewrite their argv into a title ("postgres: writer", "sshd: user@pts/0")
// put spaces in it; those are left alone, since their slashes are not a path.
func argv0Base(a string) string {
	if a == "" || strings.ContainsRune(a, ' ') {
		return a
	}
	if b := filepath.Base(a); b != "/" && b != "." {
		return b
	}
	return a
}
