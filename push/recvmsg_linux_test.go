package push

import (
	"bytes"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// The raw recvmsg reads what unix.Recvmsg reads: the message, the sender's credentials,
// MSG_TRUNC for a message longer than the buffer, EAGAIN when nothing is queued.
func TestRecvmsgNonblockMatchesRecvmsg(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	if err := unix.SetsockoptInt(fds[1], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		t.Fatal(err)
	}
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	buf := make([]byte, 64)
	if _, _, _, err := recvmsgNonblock(fds[1], buf, oob, 0); err != unix.EAGAIN {
		t.Fatalf("empty socket: %v, want EAGAIN", err)
	}
	msg := []byte(`{"v": 1}`)
	for range 2 {
		if err := unix.Send(fds[0], msg, 0); err != nil {
			t.Fatal(err)
		}
	}
	n, oobn, flags, err := recvmsgNonblock(fds[1], buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || !bytes.Equal(buf[:n], msg) || flags&unix.MSG_TRUNC != 0 {
		t.Fatalf("read %q flags %#x err %v", buf[:n], flags, err)
	}
	cred, rerr := credentials(oob[:oobn])
	if rerr != nil || cred.PID != uint32(os.Getpid()) || cred.UID != uint32(os.Getuid()) {
		t.Fatalf("credentials %+v %v, want this process's", cred, rerr)
	}
	wn, woobn, wflags, _, werr := unix.Recvmsg(fds[1], buf[:4], oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if err := unix.Send(fds[0], msg, 0); err != nil {
		t.Fatal(err)
	}
	n, oobn, flags, err = recvmsgNonblock(fds[1], buf[:4], oob, unix.MSG_CMSG_CLOEXEC)
	if n != wn || oobn != woobn || flags != wflags || err != werr || flags&unix.MSG_TRUNC == 0 {
		t.Fatalf("truncated: %d %d %#x %v; unix.Recvmsg %d %d %#x %v", n, oobn, flags, err, wn, woobn, wflags, werr)
	}
}
