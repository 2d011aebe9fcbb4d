package replay

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
)

// Decompress returns in as a plain trace: a gzip stream (the project's own labelled
// traces are .jsonl.gz, and a recorded trace is often compressed before it is shared) is
// unpacked, anything else is read as is. It looks at the magic bytes rather than the file
// name, so standard input and a renamed file work too.
func Decompress(in io.Reader) (io.ReadCloser, error) {
	br := bufio.NewReader(in)
	magic, err := br.Peek(2)
	if err != nil && len(magic) < 2 {
		// Too short for gzip: an empty or one-byte trace, for Events to report.
		return io.NopCloser(br), nil
	}
	if magic[0] != 0x1f || magic[1] != 0x8b {
		return io.NopCloser(br), nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("the trace starts like gzip but its header is broken (%w); decompress it with gunzip to see where", err)
	}
	return zr, nil
}
