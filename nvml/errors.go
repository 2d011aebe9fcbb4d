//go:build cgo

package nvml

import (
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ReturnName maps an NVML return code to the short snake_case name used in
// ErrorKey.Error. Unknown codes map to "other" so the label stays bounded whatever a
// future driver returns.
func ReturnName(r gonvml.Return) string {
	switch r {
	case gonvml.SUCCESS:
		return "success"
	case gonvml.ERROR_UNINITIALIZED:
		return "uninitialized"
	case gonvml.ERROR_INVALID_ARGUMENT:
		return "invalid_argument"
	case gonvml.ERROR_NOT_SUPPORTED:
		return "not_supported"
	case gonvml.ERROR_NO_PERMISSION:
		return "no_permission"
	case gonvml.ERROR_ALREADY_INITIALIZED:
		return "already_initialized"
	case gonvml.ERROR_NOT_FOUND:
		return "not_found"
	case gonvml.ERROR_INSUFFICIENT_SIZE:
		return "insufficient_size"
	case gonvml.ERROR_INSUFFICIENT_POWER:
		return "insufficient_power"
	case gonvml.ERROR_DRIVER_NOT_LOADED:
		return "driver_not_loaded"
	case gonvml.ERROR_TIMEOUT:
		return "timeout"
	case gonvml.ERROR_IRQ_ISSUE:
		return "irq_issue"
	case gonvml.ERROR_LIBRARY_NOT_FOUND:
		return "library_not_found"
	case gonvml.ERROR_FUNCTION_NOT_FOUND:
		return "function_not_found"
	case gonvml.ERROR_CORRUPTED_INFOROM:
		return "corrupted_inforom"
	case gonvml.ERROR_GPU_IS_LOST:
		return "gpu_is_lost"
	case gonvml.ERROR_RESET_REQUIRED:
		return "reset_required"
	case gonvml.ERROR_OPERATING_SYSTEM:
		return "operating_system"
	case gonvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return "lib_rm_version_mismatch"
	case gonvml.ERROR_IN_USE:
		return "in_use"
	case gonvml.ERROR_MEMORY:
		return "memory"
	case gonvml.ERROR_NO_DATA:
		return "no_data"
	case gonvml.ERROR_INSUFFICIENT_RESOURCES:
		return "insufficient_resources"
	case gonvml.ERROR_ARGUMENT_VERSION_MISMATCH:
		return "argument_version_mismatch"
	case gonvml.ERROR_DEPRECATED:
		return "deprecated"
	case gonvml.ERROR_NOT_READY:
		return "not_ready"
	case gonvml.ERROR_GPU_NOT_FOUND:
		return "gpu_not_found"
	case gonvml.ERROR_INVALID_STATE:
		return "invalid_state"
	case gonvml.ERROR_UNKNOWN:
		return "unknown"
	default:
		return "other"
	}
}

// CallError is an NVML call that did not return SUCCESS. It unwraps to the
// gonvml.Return, so callers can use errors.Is(err, gonvml.ERROR_LIBRARY_NOT_FOUND).
type CallError struct {
	Call   string
	Return gonvml.Return
}

func (e *CallError) Error() string {
	return fmt.Sprintf("nvml %s: %s (%s)", e.Call, returnText(e.Return), ReturnName(e.Return))
}

func (e *CallError) Unwrap() error { return e.Return }

// returnText is NVML's own description where we know it is safe to ask for it.
// gonvml.Return.Error calls nvmlErrorString once the library is loaded, which is fine
// here: errors are only formatted on the poll goroutine that owns NVML.
func returnText(r gonvml.Return) string { return r.Error() }

// initHint tells the operator what to do about a failed nvmlInit, keyed by the cause.
func initHint(r gonvml.Return) (what, todo string) {
	switch r {
	case gonvml.ERROR_LIBRARY_NOT_FOUND:
		return "libnvidia-ml.so.1 not found",
			"Install the NVIDIA driver, or in a container run with the NVIDIA container toolkit (--gpus all / runtimeClassName: nvidia)."
	case gonvml.ERROR_DRIVER_NOT_LOADED:
		return "the NVIDIA kernel driver is not loaded",
			"Check that the nvidia kernel module is loaded (lsmod | grep nvidia) and that nvidia-smi works."
	case gonvml.ERROR_NO_PERMISSION:
		return "no permission to open the GPU devices",
			"Run with access to /dev/nvidia* (in a container: the NVIDIA container toolkit, or a device plugin)."
	case gonvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return "libnvidia-ml and the kernel driver have different versions",
			"This usually follows a driver upgrade without a reboot: reboot or reload the nvidia kernel modules."
	default:
		return fmt.Sprintf("nvmlInit failed: %s (%s)", returnText(r), ReturnName(r)),
			"Check that nvidia-smi works on this host."
	}
}

// notAvailableMessage is the one warn line an operator sees when NVML cannot start.
func notAvailableMessage(r gonvml.Return) string {
	what, todo := initHint(r)
	return "NVML is not available: " + what +
		"; GPU metrics are off (vram_nvml_up 0) and pushed allocator stats are still served. " +
		todo + " Retrying in the background."
}

// driverGone reports whether a return code means the whole library is unusable (the
// driver was unloaded or NVML shut down underneath us), as opposed to one call failing.
func driverGone(r gonvml.Return) bool {
	switch r {
	case gonvml.ERROR_UNINITIALIZED, gonvml.ERROR_DRIVER_NOT_LOADED, gonvml.ERROR_LIBRARY_NOT_FOUND,
		gonvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return true
	}
	return false
}
