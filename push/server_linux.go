package push

import (
	"errors"
	"fmt"
	"net"

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
			// reaper's, Close's) makes Control fail, and end of stream reads as 0 bytes.
			// Once the server closes there is no pace: wait for the connection's close.
			for {
				got := false
				if err = rc.Control(func(fd uintptr) { got = try(fd) }); err != nil || got {
					break
				}
				if !s.pace.wait() {
					err = rc.Read(try)
					break
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
