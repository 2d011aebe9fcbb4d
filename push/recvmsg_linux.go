package push

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// recvmsgNonblock is unix.Recvmsg for a MSG_DONTWAIT read, made as a raw system call.
// A Go system call tells the scheduler it may block, and that wakes the runtime's
// monitor thread (sysmon) whenever the process was fully idle: with pushers sending
// once a second each, that wake and the monitor's follow-up sleeps were most of the
// daemon's idle context switches (about three per message, next to the one that
// delivers it). A recvmsg that cannot block needs none of that.
func recvmsgNonblock(fd int, p, oob []byte, flags int) (n, oobn, recvflags int, err error) {
	var iov unix.Iovec
	if len(p) > 0 {
		iov.Base = &p[0]
		iov.SetLen(len(p))
	}
	msg := unix.Msghdr{Iov: &iov}
	msg.SetIovlen(1)
	if len(oob) > 0 {
		msg.Control = &oob[0]
		msg.SetControllen(len(oob))
	}
	r, _, errno := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), uintptr(flags|unix.MSG_DONTWAIT))
	if errno != 0 {
		return 0, 0, 0, errno
	}
	return int(r), int(msg.Controllen), int(msg.Flags), nil
}
