package nvml

// Call names used in ErrorKey.Call. They are the go-nvml method names, so an operator
// can look them up in the NVML reference; the set is fixed, which keeps the
// vram_nvml_errors_total label bounded.
const (
	CallInit                          = "Init"
	CallShutdown                      = "Shutdown"
	CallSystemGetDriverVersion        = "SystemGetDriverVersion"
	CallSystemGetNVMLVersion          = "SystemGetNVMLVersion"
	CallDeviceGetCount                = "DeviceGetCount"
	CallDeviceGetHandleByIndex        = "DeviceGetHandleByIndex"
	CallGetUUID                       = "GetUUID"
	CallGetName                       = "GetName"
	CallGetPciInfo                    = "GetPciInfo"
	CallGetMemoryInfoV2               = "GetMemoryInfo_v2"
	CallGetMemoryInfo                 = "GetMemoryInfo"
	CallGetBAR1MemoryInfo             = "GetBAR1MemoryInfo"
	CallGetMigMode                    = "GetMigMode"
	CallGetMaxMigDeviceCount          = "GetMaxMigDeviceCount"
	CallGetMigDeviceHandleByIndex     = "GetMigDeviceHandleByIndex"
	CallGetGpuInstanceID              = "GetGpuInstanceId"
	CallGetComputeInstanceID          = "GetComputeInstanceId"
	CallGetComputeRunningProcesses    = "GetComputeRunningProcesses"
	CallGetGraphicsRunningProcesses   = "GetGraphicsRunningProcesses"
	CallGetMPSComputeRunningProcesses = "GetMPSComputeRunningProcesses"
)

// ErrValueNotAvailable is the ErrorKey.Error used when a process list call succeeded
// but NVML reported a process's used memory as NVML_VALUE_NOT_AVAILABLE (no permission,
// some vGPU/WDDM setups). The process is still exported, with 0 bytes.
const ErrValueNotAvailable = "value_not_available"

// NotBuiltIn is the ErrorKey.Error counted once for CallInit by a binary built without
// NVML (see ErrNotBuiltIn), so vram_nvml_errors_total says why vram_nvml_up is 0.
const NotBuiltIn = "not_built_in"
