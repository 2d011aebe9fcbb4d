package procinfo

import (
	"os"
	"strconv"

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
func pidfdExited(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err != nil || n > 0
	}
}

func pidfdClose(fd int) { _ = unix.Close(fd) }
