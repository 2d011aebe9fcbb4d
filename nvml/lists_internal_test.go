//go:build cgo

package nvml

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/vram-exporter/vram_exporter/nvml/nvmltest"
)

// The v3 shim passes go-nvml's ProcessInfo slice to the driver as its C array.
func TestProcessInfoLayoutIsTheDrivers(t *testing.T) {
	if !layoutMatches() {
		t.Fatal("gonvml.ProcessInfo is not laid out as nvmlProcessInfo_t: the v3 list shim would misread the driver")
	}
}

// Only go-nvml's own handles are driven through the shim; a mock keeps go-nvml's
// wrappers, and nvmltest's fake its own ListsInto.
func TestListsForPicksTheDevicesOwn(t *testing.T) {
	r := &rawLists{}
	if l := r.listsFor(&mock.Device{}); l != nil {
		t.Fatalf("a mock device got %T", l)
	}
	if rawHandle(&mock.Device{}) != nil {
		t.Fatal("a mock device has a raw handle")
	}
	srv := nvmltest.NewServer(nvmltest.H200s(1, 1)...)
	srv.Init()
	d, _ := srv.DeviceGetHandleByIndex(0)
	if _, ok := r.listsFor(d).(handleLists); ok {
		t.Fatal("nvmltest's device driven through the shim")
	}
	if (*rawLists)(nil).listsFor(d) == nil {
		t.Fatal("nvmltest's device lost its ListsInto without the shim")
	}
}
