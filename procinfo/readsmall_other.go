//go:build !linux

package procinfo

import (
	"errors"
	"io"
	"os"
)

// readSmall reads up to len(buf) bytes of a file (there is no procfs here; NewReader
// already reports ErrNotBuiltIn, so this only keeps the package building).
func readSmall(path string, buf []byte) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return n, err
	}
	return n, nil
}
