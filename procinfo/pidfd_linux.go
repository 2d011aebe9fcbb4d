package procinfo

import (
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A pidfd (Linux 5.3+) names one process, never its PID's next owner, and becomes
// readable when that process exits: while a poll of it says "not exited", the PID still
// belongs to the process whose facts were read after the pidfd was opened. That makes
// PID-reuse detection exact at one poll(2) per process per tick, instead of reading
// /proc/PID/stat to compare start times.

// pidfdsUsable reports whether pidfds name the processes under root: pidfd_open works
// (kernel 5.3+, not filtered by seccomp) and root is a procfs of the daemon's own PID
// namespace (a host /proc mounted into a container without hostPID lists PIDs the
// daemon's pidfd_open would resolve to other processes, or to none).
func pidfdsUsable(root string) bool {
	self, err := os.Readlink(root + "/self")
	if err != nil || self != strconv.Itoa(os.Getpid()) {
		return false
	}
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

func pidfdOpen(pid uint32) (int, error) { return unix.PidfdOpen(int(pid), 0) }

// pidfdExited reports whether the process behind fd has exited. A failed poll counts as
// exited: the caller then reads the process again, which is never wrong, only slower.
// The poll has a zero timeout, so it is made as a raw system call: a Go system call
// would wake the runtime's monitor thread (sysmon) on every tick of an idle daemon, for
// a call that cannot block.
func pidfdExited(fd int) bool {
	pfd := unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	var zero unix.Timespec
	for {
		n, _, errno := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		return errno != 0 || n > 0
	}
}

func pidfdClose(fd int) { _ = unix.Close(fd) }
