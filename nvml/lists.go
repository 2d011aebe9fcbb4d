//go:build cgo

package nvml

import (
	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// go-nvml's process-list wrappers start every call with room for one process and double
// the buffer on ERROR_INSUFFICIENT_SIZE, allocating a fresh one each time: with 16
// processes that is at least two driver calls per list per GPU per poll (two when the
// driver reports the count it needs, as documented; five when it does not), each an
// ioctl. The poller instead offers a buffer sized from the device's previous list plus
// headroom, reused between polls, so a steady poll makes one call per list.

// ListsInto reads a process list into a caller's buffer with exactly one driver call
// per method call: the nvmlDeviceGet*RunningProcesses_v3 contract. On SUCCESS the
// first n entries of buf are the list; on ERROR_INSUFFICIENT_SIZE n is the count the
// driver needs (when it says; otherwise n <= len(buf)). The poller uses it where a
// device offers it: real handles through listsInto (lists_cgo.go), nvmltest's fakes.
type ListsInto interface {
	GetComputeRunningProcessesInto(buf []gonvml.ProcessInfo) (n int, ret gonvml.Return)
	GetGraphicsRunningProcessesInto(buf []gonvml.ProcessInfo) (n int, ret gonvml.Return)
	GetMPSComputeRunningProcessesInto(buf []gonvml.ProcessInfo) (n int, ret gonvml.Return)
}

// minListBuf is the smallest buffer offered: room for a small node's processes on the
// first poll without a retry.
const minListBuf = 16

// maxListTries bounds the retries when the list grows between calls; NVML lists at most
// a few thousand processes per GPU, so growing by what the driver asks for ends at once.
const maxListTries = 8

// listHeadroom is the room offered beyond the last list's length, so a few new
// processes between polls do not cost a retry.
func listHeadroom(n int) int { return max(minListBuf, n+n/4+4) }

// ReadList reads one process list through l (kind 0 compute, 1 graphics, 2 MPS) into
// *buf, growing *buf when the driver asks for more room; it returns the list (aliasing
// *buf, valid until the next call with the same buffer) and the driver calls made.
func ReadList(l ListsInto, kind int, buf *[]gonvml.ProcessInfo) ([]gonvml.ProcessInfo, int, gonvml.Return) {
	call := l.GetComputeRunningProcessesInto
	switch kind {
	case 1:
		call = l.GetGraphicsRunningProcessesInto
	case 2:
		call = l.GetMPSComputeRunningProcessesInto
	}
	if len(*buf) < minListBuf {
		*buf = make([]gonvml.ProcessInfo, minListBuf)
	}
	for tries := 1; ; tries++ {
		n, ret := call(*buf)
		switch {
		case ret == gonvml.SUCCESS:
			list := (*buf)[:min(max(n, 0), len(*buf))]
			if want := listHeadroom(n); want > len(*buf) {
				// The next list must fit without a retry.
				*buf = make([]gonvml.ProcessInfo, want)
			}
			return list, tries, ret
		case ret != gonvml.ERROR_INSUFFICIENT_SIZE || tries == maxListTries:
			return nil, tries, ret
		}
		next := 2 * len(*buf) // the driver did not say how many: double, as go-nvml does
		if n > len(*buf) {
			next = listHeadroom(n)
		}
		*buf = make([]gonvml.ProcessInfo, next)
	}
}
