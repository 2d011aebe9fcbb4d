package procinfo

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// readSmall reads up to len(buf) bytes of a small procfs file with plain system calls.
// os.Open costs about as much again as the read itself here: it sets the descriptor
// non-blocking, tries to register it with the network poller and allocates a File with
// a cleanup, none of which a one-shot read of a procfs file needs; the Cache does this
// once per process per tick.
func readSmall(path string, buf []byte) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}
