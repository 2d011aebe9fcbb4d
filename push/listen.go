package push

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// ErrSocketInUse is matched (errors.Is) by the error Listen returns when a live daemon
// already serves the socket path.
var ErrSocketInUse = errors.New("push socket in use")

type inUseError struct{ path string }

func (e *inUseError) Error() string {
	return fmt.Sprintf("another vram_exporter is already serving %s; stop it or choose another --push.socket", e.path)
}

func (e *inUseError) Is(target error) bool { return target == ErrSocketInUse }

// ErrNotBuiltIn is matched (errors.Is) by the error Listen returns on an OS other than
// Linux: the protocol needs SOCK_SEQPACKET unix sockets and SO_PASSCRED credentials.
var ErrNotBuiltIn = errors.New("the push socket is not built in on " + runtime.GOOS +
	" (it needs Linux's SOCK_SEQPACKET unix sockets and SO_PASSCRED): no allocator stats are received")

// dirMode is the directory the daemon creates for a socket of mode m: rwx for the owner;
// for group and others r-x where the socket gives them r or w, so whoever may use the
// socket can traverse to it. Never w for them: write on the directory would let any
// pusher unlink the socket and bind its own in its place, and read every other sender's
// stats.
func dirMode(m os.FileMode) os.FileMode {
	may := (m | (m&0o222)<<1) & 0o044 // r where the socket gives r or w
	return 0o700 | may | may>>2
}

// Listen prepares the socket directory, replaces a stale socket a crashed daemon left
// behind, binds the SOCK_SEQPACKET socket and applies mode, group and SO_PASSCRED.
func (s *Server) Listen() error {
	path := s.opts.Path
	if !builtIn {
		return ErrNotBuiltIn
	}
	if err := s.makeDir(filepath.Dir(path)); err != nil {
		return err
	}
	if err := s.clearStale(path); err != nil {
		return err
	}
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return fmt.Errorf("listening on push socket %s: %w", path, err)
	}
	// Close removes the file itself, and only if it is still ours.
	ln.SetUnlinkOnClose(false)
	fail := func(err error) error {
		_ = ln.Close()
		_ = os.Remove(path)
		return err
	}
	if err := os.Chmod(path, s.opts.Mode); err != nil {
		return fail(fmt.Errorf("setting mode of push socket %s: %w", path, err))
	}
	if s.gid >= 0 {
		if err := os.Lchown(path, -1, s.gid); err != nil {
			return fail(fmt.Errorf("giving push socket %s to group %d: %w (the daemon must be root or a member of that group)", path, s.gid, err))
		}
	}
	rc, err := ln.SyscallConn()
	if err == nil {
		err = setPassCred(rc)
	}
	if err != nil {
		return fail(fmt.Errorf("enabling kernel credentials on push socket %s: %w", path, err))
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fail(fmt.Errorf("push socket %s vanished after bind: %w", path, err))
	}
	s.mu.Lock()
	s.ln = ln
	s.inode = inode(fi)
	s.mu.Unlock()
	s.logger.Info("push socket listening", zap.String("path", path), zap.Stringer("mode", s.opts.Mode), zap.Int("gid", s.gid))
	return nil
}

// makeDir creates the socket directory with the directory mode and group. A directory
// that already exists is left alone: its owner (systemd RuntimeDirectory=, a hostPath
// volume, an administrator) decided its permissions, and it may be shared, like /tmp.
func (s *Server) makeDir(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("push socket directory %s exists and is not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("push socket directory %s: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("creating the parent of push socket directory %s: %w", dir, err)
	}
	mode := dirMode(s.opts.Mode)
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating push socket directory %s: %w", dir, err)
	}
	// Mkdir's mode passed through the umask; set it exactly.
	if err := os.Chmod(dir, mode); err != nil {
		return fmt.Errorf("setting mode of push socket directory %s: %w", dir, err)
	}
	if s.gid >= 0 {
		if err := os.Chown(dir, -1, s.gid); err != nil {
			return fmt.Errorf("giving push socket directory %s to group %d: %w (the daemon must be root or a member of that group)", dir, s.gid, err)
		}
	}
	return nil
}

// clearStale makes path free for bind: nothing there, or a socket nobody listens on (a
// crashed daemon's), which it removes. A live socket or any other file is an error: the
// daemon never takes a socket from a running daemon nor deletes a file it did not make.
func (s *Server) clearStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking push socket path %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket; refusing to remove it: move it away or choose another --push.socket", path)
	}
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.Dial("unixpacket", path)
	if err == nil {
		_ = c.Close()
		return &inUseError{path: path}
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("cannot tell whether another daemon serves %s (%w); remove it by hand if none does", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing stale push socket %s: %w", path, err)
	}
	s.logger.Info("replaced a stale push socket left by a daemon that is gone", zap.String("path", path))
	return nil
}

// removeOwnSocket removes the socket file unless something else has replaced it since
// Listen (an administrator, or a second daemon after this one's file was deleted).
func (s *Server) removeOwnSocket() error {
	fi, err := os.Lstat(s.opts.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking push socket %s before removing it: %w", s.opts.Path, err)
	}
	if inode(fi) != s.inode {
		return nil
	}
	if err := os.Remove(s.opts.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing push socket %s: %w", s.opts.Path, err)
	}
	return nil
}

func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
