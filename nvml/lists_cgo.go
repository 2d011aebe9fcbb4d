//go:build cgo

package nvml

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

// The v3 process list entry points (R510+). go-nvml loads libnvidia-ml with
// RTLD_GLOBAL, so once its Init has run they resolve from the global scope.
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} vram_process_info;

typedef int (*vram_list_fn)(void *device, unsigned int *count, vram_process_info *infos);

static void *vram_lookup(const char *name) { return dlsym(RTLD_DEFAULT, name); }

static int vram_call_list(void *fn, void *device, unsigned int *count, void *infos) {
	return ((vram_list_fn)fn)(device, count, (vram_process_info *)infos);
}

static size_t vram_process_info_size(void) { return sizeof(vram_process_info); }
*/
import "C"

import (
	"reflect"
	"unsafe"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// rawLists are the v3 list entry points of the loaded driver (nil entries: absent).
type rawLists struct {
	fn [3]unsafe.Pointer
}

var rawListNames = [3]string{
	"nvmlDeviceGetComputeRunningProcesses_v3",
	"nvmlDeviceGetGraphicsRunningProcesses_v3",
	"nvmlDeviceGetMPSComputeRunningProcesses_v3",
}

// lookupRawLists finds the v3 entry points after Init; nil when any is missing (an
// older driver, or a library that is not libnvidia-ml such as nvmltest's), or when
// gonvml.ProcessInfo is not laid out as the C struct (a go-nvml that changed it).
func lookupRawLists() *rawLists {
	if !layoutMatches() {
		return nil
	}
	var r rawLists
	for i, name := range rawListNames {
		cs := C.CString(name)
		r.fn[i] = C.vram_lookup(cs)
		C.free(unsafe.Pointer(cs))
		if r.fn[i] == nil {
			return nil
		}
	}
	return &r
}

func layoutMatches() bool {
	var p gonvml.ProcessInfo
	return unsafe.Sizeof(p) == uintptr(C.vram_process_info_size()) && unsafe.Offsetof(p.UsedGpuMemory) == 8 &&
		unsafe.Offsetof(p.GpuInstanceId) == 16 && unsafe.Offsetof(p.ComputeInstanceId) == 20
}

// rawHandle is the nvmlDevice_t behind a go-nvml device handle, nil for anything else
// (a mock). go-nvml keeps it in the only field of its unexported nvmlDevice struct.
func rawHandle(d gonvml.Device) unsafe.Pointer {
	v := reflect.ValueOf(d)
	if v.Kind() != reflect.Struct || v.Type().Name() != "nvmlDevice" ||
		v.Type().PkgPath() != "github.com/NVIDIA/go-nvml/pkg/nvml" || v.NumField() != 1 {
		return nil
	}
	f := v.Field(0)
	if f.Kind() != reflect.Pointer {
		return nil
	}
	return f.UnsafePointer()
}

// DeviceListsInto is the ListsInto of one device as the poller picks it: the device's
// own, or one driver call per list through the v3 entry points of the libnvidia-ml that
// go-nvml loaded (call it after Init); nil when neither is there. scripts/nvmlraw uses
// it to time what the poller calls.
func DeviceListsInto(d gonvml.Device) ListsInto { return lookupRawLists().listsFor(d) }

// handleLists is ListsInto over a real device handle.
type handleLists struct {
	r *rawLists
	h unsafe.Pointer
}

// listsFor returns the ListsInto for d: its own (nvmltest), the driver's v3 calls for a
// real handle, or nil (go-nvml's wrappers are used then).
func (r *rawLists) listsFor(d gonvml.Device) ListsInto {
	if l, ok := d.(ListsInto); ok {
		return l
	}
	if r == nil {
		return nil
	}
	if h := rawHandle(d); h != nil {
		return handleLists{r: r, h: h}
	}
	return nil
}

func (l handleLists) call(kind int, buf []gonvml.ProcessInfo) (int, gonvml.Return) {
	count := C.uint(len(buf))
	ret := C.vram_call_list(l.r.fn[kind], l.h, &count, unsafe.Pointer(&buf[0]))
	return int(count), gonvml.Return(ret)
}

func (l handleLists) GetComputeRunningProcessesInto(buf []gonvml.ProcessInfo) (int, gonvml.Return) {
	return l.call(0, buf)
}

func (l handleLists) GetGraphicsRunningProcessesInto(buf []gonvml.ProcessInfo) (int, gonvml.Return) {
	return l.call(1, buf)
}

func (l handleLists) GetMPSComputeRunningProcessesInto(buf []gonvml.ProcessInfo) (int, gonvml.Return) {
	return l.call(2, buf)
}
