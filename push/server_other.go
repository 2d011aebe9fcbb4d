//go:build !linux

package push

import (
	"errors"
	"net"
)

// Elsewhere than Linux there is no SOCK_SEQPACKET unix socket with SO_PASSCRED
// credentials, which the protocol rests on (the sender's PID comes from the kernel), so
// Listen reports ErrNotBuiltIn before touching the filesystem and nothing below runs.
const builtIn = false

var errNoPassCred = errors.New("SO_PASSCRED is Linux-only")

func setPassCred(interface{ Control(func(fd uintptr)) error }) error { return errNoPassCred }

func (s *Server) readLoop(*conn, uint64) string { return DisconnectReadError }

func peerUID(*net.UnixConn) (uint32, bool) { return 0, false }

func credentials([]byte) (Cred, *RejectError) {
	return Cred{}, reject(ReasonNoPID, "kernel credentials are Linux-only")
}
