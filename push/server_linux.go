package push

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// The kernel side of the push protocol is Linux's: SOCK_SEQPACKET unix sockets and
// SO_PASSCRED credentials on every message. server_other.go stands in elsewhere.

// builtIn reports that this build can serve the push socket.
const builtIn = true

// peerUID is the connecting process's uid (SO_PEERCRED), taken at accept so the
// per-uid limits apply before the connection costs anything more. false when it cannot
// be read; such a connection is held to the global limits only.
func peerUID(c *net.UnixConn) (uint32, bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	var (
		uc   *unix.Ucred
		uerr error
	)
	if err := rc.Control(func(fd uintptr) {
		uc, uerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || uerr != nil {
		return 0, false
	}
	return uc.Uid, true
}

func (s *Server) readLoop(cn *conn, id uint64) string {
	c := cn.c
	rc, err := c.SyscallConn()
	if err == nil {
		err = setPassCred(rc)
	}
	if err != nil {
		s.logger.Error("cannot enable SO_PASSCRED on a push connection; closing it", zap.Uint64("conn", id), zap.Error(err))
		return DisconnectReadError
	}
	if s.pace != nil {
		defer s.pace.handOn() // the next paced loop runs, whatever ends this one
		if err := cn.detach(rc); err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.logger.Error("cannot take a push connection out of the runtime's poller; closing it", zap.Uint64("conn", id), zap.Error(err))
			}
			return DisconnectReadError
		}
	}
	bucket := tokenBucket{tokens: float64(s.opts.Burst), last: cn.connectedAt}
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	rejects := 0
	for {
		var (
			buf            *[]byte
			n, oobn, flags int
			recvErr        error
		)
		// Waiting for readability before taking a buffer keeps idle connections (most of
		// them, most of the time) from each pinning a 64 KiB buffer.
		try := func(fd uintptr) bool {
			buf = s.bufs.Get().(*[]byte)
			n, oobn, flags, recvErr = recvmsgNonblock(int(fd), *buf, oob, unix.MSG_CMSG_CLOEXEC)
			if recvErr == unix.EAGAIN || recvErr == unix.EINTR {
				s.bufs.Put(buf)
				buf = nil // never Put twice: two readers would share one buffer
				return false
			}
			return true
		}
		var err error
		if s.pace == nil {
			err = rc.Read(try)
		} else {
			// Paced: drain what has arrived, then sleep until the next pace rather than
			// until the next message (ServerOptions.ReadPace). A closed connection (the
			// reaper's, Close's) fails the read, and end of stream reads as 0 bytes. Once
			// the server closes there is no pace, and Close closes every connection.
			for {
				got := false
				if got, err = cn.recvDetached(try); err != nil || got {
					break
				}
				if !s.pace.wait() {
					return DisconnectShutdown
				}
			}
		}
		if err == nil {
			err = recvErr
		}
		if err != nil || (n == 0 && oobn == 0) {
			// A SEQPACKET read of 0 bytes with no credentials is end of stream; an empty
			// message still carries credentials.
			if buf != nil {
				s.bufs.Put(buf)
			}
			if err == nil || errors.Is(err, unix.ECONNRESET) {
				return DisconnectClientClosed
			}
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if _, reaped := cn.deadline.Load().(string); !closing && !reaped {
				s.logger.Warn("reading from a push connection failed; closing it", zap.Uint64("conn", id), zap.Error(err))
			}
			return DisconnectReadError
		}
		s.bytes.Add(uint64(n))
		cn.lastMsg.Store(s.clock.Now().UnixNano())
		truncated := flags&unix.MSG_TRUNC != 0 || n > s.opts.MaxMessageBytes
		cred, rerr := s.ingest(cn, id, &bucket, (*buf)[:n], truncated, oob[:oobn])
		s.bufs.Put(buf)
		if rerr == nil {
			s.messages.Add(1)
			rejects = 0
			continue
		}
		s.rejected[reasonIndex(rerr.Reason)].Add(1)
		s.logReject(rerr, cred, id)
		// Sending too fast or arriving when the process or series table is full (other
		// senders filled it) are not garbage: the sender is well-formed and will be served
		// again soon.
		if rerr.Reason == ReasonRateLimited || rerr.Reason == ReasonTooManyProcesses || rerr.Reason == ReasonTooManySeries {
			continue
		}
		rejects++
		if rejects >= s.opts.MaxConsecutiveRejects {
			s.logger.Warn("closing a push connection that sent only rejected messages",
				zap.Uint64("conn", id), zap.Uint32("pid", cred.PID), zap.Int("consecutive_rejects", rejects))
			return DisconnectGarbage
		}
	}
}

// detach takes a paced connection's socket out of the Go runtime's poller: it keeps a
// duplicate of the descriptor and closes the net.UnixConn, which deregisters the
// original from epoll. Nothing waits for a paced socket's readiness, yet while it is
// registered every message that arrives is an epoll event that wakes a thread of an
// idle daemon to find no goroutine waiting: on a 16-core H200 host that was about
// 40 µs of CPU per pushed message, more than all the daemon's work on it.
func (cn *conn) detach(rc syscall.RawConn) error {
	fd, derr := -1, error(nil)
	if err := rc.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return err
	}
	if derr != nil {
		return fmt.Errorf("duplicating its descriptor (is the daemon out of file descriptors? raise its limit): %w", derr)
	}
	cn.raw.mu.Lock()
	if cn.raw.closed { // the reaper or Close got there first
		cn.raw.mu.Unlock()
		_ = unix.Close(fd)
		return net.ErrClosed
	}
	cn.raw.fd, cn.raw.detached = fd, true
	cn.raw.mu.Unlock()
	_ = cn.c.Close() // the socket stays open through fd
	return nil
}

// recvDetached runs try on a detached connection's descriptor unless it was closed.
func (cn *conn) recvDetached(try func(fd uintptr) bool) (bool, error) {
	cn.raw.mu.Lock()
	defer cn.raw.mu.Unlock()
	if cn.raw.closed {
		return false, net.ErrClosed
	}
	return try(uintptr(cn.raw.fd)), nil
}

// credentials extracts the sender's kernel credentials from a message's control data. It
// is pure (apart from closing passed descriptors) so tests can feed it a PID of 0, which
// only a sender in a PID namespace the daemon cannot see produces.
func credentials(oob []byte) (Cred, *RejectError) {
	var cred Cred
	found := false
	// x/sys reads the header before checking the length: never hand it fewer bytes.
	for len(oob) >= unix.SizeofCmsghdr {
		hdr, data, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			break
		}
		oob = rest
		if hdr.Level != unix.SOL_SOCKET {
			continue
		}
		m := unix.SocketControlMessage{Header: hdr, Data: data}
		switch hdr.Type {
		case unix.SCM_RIGHTS:
			// The protocol passes no descriptors; never keep one a sender slipped in.
			if fds, err := unix.ParseUnixRights(&m); err == nil {
				for _, fd := range fds {
					_ = unix.Close(fd)
				}
			}
		case unix.SCM_CREDENTIALS:
			if uc, err := unix.ParseUnixCredentials(&m); err == nil {
				cred = Cred{PID: uint32(uc.Pid), UID: uc.Uid, GID: uc.Gid}
				found = true
			}
		}
	}
	if !found {
		return cred, reject(ReasonNoPID, "message carried no kernel credentials")
	}
	if cred.PID == 0 {
		return cred, reject(ReasonNoPID, "the sender's PID is not visible in the daemon's PID namespace")
	}
	return cred, nil
}

func setPassCred(rc interface {
	Control(func(fd uintptr)) error
}) error {
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("setting SO_PASSCRED: %w", serr)
	}
	return nil
}
