package collector

import (
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// Label sets. pid is inherent to per-process metrics; every other label is bounded
// (GPU count, pool count per process, a fixed enum).
var (
	gpuLabels     = []string{"uuid", "gpu"}
	procLabels    = []string{"pid", "uuid", "gpu"}
	poolLabels    = []string{"pid", "uuid", "gpu", "pool", "parent"}
	growthLabels  = []string{"pid", "uuid", "gpu", "series", "window"}
	verdictLabels = []string{"pid", "uuid", "gpu", "verdict"}
)

const sampled = " Sampled by the daemon every --nvml.poll-interval, not at scrape time."

type descs struct {
	nvmlUp, nvmlInfo, nvmlPollDuration, nvmlErrors                         *metricDesc
	gpuInfo, gpuTotal, gpuUsed, gpuFree, gpuDriverReserved                 *metricDesc
	gpuBAR1Total, gpuBAR1Used                                              *metricDesc
	procUsed, procUnattributed, procInFlight, procInfo, procRSS, procStart *metricDesc
	rtAllocated, rtReserved, rtCached, rtPeak, rtActive, rtInactiveSplit   *metricDesc
	rtLimit, rtRetries, rtOOMs                                             *metricDesc
	pushConnections, pushConnectionsTotal, pushMessages, pushBytes         *metricDesc
	pushRejected, pushDisconnects, pushProcesses, pushAge                  *metricDesc
	pushClientDropped, pushUnknownDevices                                  *metricDesc
	growth, growthFit, verdict, gpuGrowth, gpuGrowthFit, gpuExhaustion     *metricDesc
	collectorSuccess, collectorDuration, demo                              *metricDesc
	duplicates, duplicateBytes, headroom, largestWorker                    *metricDesc
	// The bounds of issue 11: what senders hold against their limits, and what was left out.
	pushSeries, pushPIDReused, trendKeys, trendUntracked *metricDesc
	diag                                                 diagDescs
}

// Every family is a gauge unless its name ends in _total.
func nd(name, help string, labels ...string) *metricDesc {
	typ := dto.MetricType_GAUGE
	if strings.HasSuffix(name, "_total") {
		typ = dto.MetricType_COUNTER
	}
	return newMetricDesc(namespace+"_"+name, help, typ, labels...)
}

func newDescs() descs {
	return descs{
		nvmlUp:           nd("nvml_up", "1 if NVML is initialised and the last poll enumerated the GPUs, 0 if NVML is unavailable (no driver, library not found, driver gone)."),
		nvmlInfo:         nd("nvml_info", "NVIDIA driver and NVML library versions; always 1.", "driver_version", "nvml_version"),
		nvmlPollDuration: nd("nvml_poll_duration_seconds", "Wall time of the last NVML poll over all GPUs and process lists."),
		nvmlErrors:       nd("nvml_errors_total", "NVML calls that failed, by call and NVML error, since the daemon started. A failing GPU is left out; the others still export.", "call", "error"),

		gpuInfo:           nd("gpu_info", "GPU (or MIG device) identity; always 1. memory_api says whether memory came from nvmlDeviceGetMemoryInfo_v2 (v2) or the older v1 call. mig_mode is read when NVML starts, when the set of GPUs changes and every minute: it changes only with a GPU reset.", "uuid", "gpu", "name", "pci_bus_id", "memory_api", "mig_mode", "parent_uuid", "gpu_instance_id", "compute_instance_id"),
		gpuTotal:          nd("gpu_memory_total_bytes", "Total memory of the GPU (NVML)."+sampled, gpuLabels...),
		gpuUsed:           nd("gpu_memory_used_bytes", "Memory in use on the GPU (NVML; with memory_api v2 this excludes the driver's own reservation)."+sampled, gpuLabels...),
		gpuFree:           nd("gpu_memory_free_bytes", "Free memory on the GPU (NVML)."+sampled, gpuLabels...),
		gpuDriverReserved: nd("gpu_memory_driver_reserved_bytes", "Memory the driver reserves for itself (NVML v2 'reserved'; absent with memory_api v1). Not the allocator's reserved bytes."+sampled, gpuLabels...),
		gpuBAR1Total:      nd("gpu_bar1_total_bytes", "Total BAR1 (host-mappable) memory of the GPU.", gpuLabels...),
		gpuBAR1Used:       nd("gpu_bar1_used_bytes", "BAR1 (host-mappable) memory in use. Read from NVML every 15 s; the last figure is kept in between.", gpuLabels...),

		procUsed:         nd("process_gpu_memory_used_bytes", "GPU memory a process holds as the driver sees it (NVML compute, graphics and MPS lists, deduplicated). pid is a host PID. The compute list is read every --nvml.poll-interval, the graphics and MPS lists every 5 s (the last ones kept in between; a process in the compute list has this tick's figure).", procLabels...),
		procUnattributed: nd("process_unattributed_bytes", "Driver view minus allocator view: process GPU memory used minus the reserved bytes of its top-level pushed pools. CUDA context, cuBLAS/cuDNN/NCCL workspaces, TensorRT persistent memory, plugins. Negative when an allocator reports more than the driver sees."+sampled, procLabels...),
		procInFlight:     nd("process_requests_in_flight", "Requests the process had in flight when its client read the allocator stats of its newest push: only from clients that count their requests (the Python client's reporter.request()), the largest of the process's connections. 0 is a moment at rest, when the allocated bytes are the floor a leak grows; a server that never reaches 0 has load in flight as its floor, and the leak detector holds what that floor does.", procLabels...),
		procInfo:         nd("process_info", "Facts about a GPU process from procfs; always 1. Join with `* on(pid) group_left(comm, container_id) vram_process_info`. container_id matches kube-state-metrics.", "pid", "comm", "cmdline", "container_id", "pod_uid"),
		procRSS:          nd("process_host_rss_bytes", "Host (CPU) resident set size of a GPU process, from procfs, read again at most every 10 s."+sampled, "pid"),
		procStart:        nd("process_start_time_seconds", "Start time of a GPU process since the Unix epoch; a new value for the same pid is a new process.", "pid"),

		rtAllocated:     nd("runtime_allocated_bytes", "Bytes live tensors/buffers occupy in an allocator pool, as pushed by the process. Nested pools (parent set) are inside their parent.", poolLabels...),
		rtReserved:      nd("runtime_reserved_bytes", "Bytes an allocator pool holds from the driver, allocated or cached, as pushed by the process.", poolLabels...),
		rtCached:        nd("runtime_cached_bytes", "Reserved minus allocated: memory the allocator keeps cached for reuse. Looks like a leak in nvidia-smi, but is a cache.", poolLabels...),
		rtPeak:          nd("runtime_peak_allocated_bytes", "Peak allocated bytes of the pool since process start (or the runtime's last reset), as pushed.", poolLabels...),
		rtActive:        nd("runtime_active_bytes", "Bytes in active allocator blocks, as pushed.", poolLabels...),
		rtInactiveSplit: nd("runtime_inactive_split_bytes", "Bytes in inactive, split allocator blocks: fragmentation, as pushed.", poolLabels...),
		rtLimit:         nd("runtime_limit_bytes", "The allocator's configured cap for the pool, as pushed.", poolLabels...),
		rtRetries:       nd("runtime_alloc_retries_total", "Allocation retries (cache flushes after a failed cudaMalloc) since process start, as pushed.", poolLabels...),
		rtOOMs:          nd("runtime_ooms_total", "Out-of-memory errors the allocator raised since process start, as pushed.", poolLabels...),

		pushConnections:      nd("push_connections", "Open push socket connections."),
		pushConnectionsTotal: nd("push_connections_total", "Push socket connections accepted since the daemon started."),
		pushMessages:         nd("push_messages_total", "Push messages accepted since the daemon started."),
		pushBytes:            nd("push_received_bytes_total", "Bytes of push messages received (accepted or not)."),
		pushRejected:         nd("push_rejected_total", "Push messages dropped for bad input, by reason (see docs/protocol.md).", "reason"),
		pushDisconnects:      nd("push_disconnects_total", "Push connections the daemon closed, by reason.", "reason"),
		pushProcesses:        nd("push_tracked_processes", "Processes whose pushed stats are in the view (connected and within --push.ttl)."),
		pushAge:              nd("push_last_message_age_seconds", "Seconds since the newest accepted push message of a process.", "pid"),
		pushClientDropped:    nd("push_client_dropped_samples_total", "Samples the client library dropped instead of blocking the serving process (client_dropped), as pushed.", "pid"),
		pushUnknownDevices:   nd("push_unknown_devices", "Pushed (pid, GPU UUID) pairs whose UUID NVML does not know while NVML is up: a client reporting a wrong UUID, or a GPU NVML cannot see. Their data is exported but feeds no leak trend."),
		pushSeries:           nd("push_series", "Pushed (process, GPU, pool) the daemon holds over all senders; a message that would take it past --push.max-series is rejected (too_many_series)."),
		pushPIDReused:        nd("push_pid_reused_total", "Push connections left out of the view because their PID now names another process than the one that connected (its start time changed): a dead sender's connection kept open by a child, and the PID reused."),
		trendKeys:            nd("trend_keys", "(pid, GPU) histories the leak detector holds; new ones beyond --trend.max-keys are not tracked."),
		trendUntracked:       nd("trend_untracked_samples_total", "Samples of new (pid, GPU) the leak detector did not track because it held --trend.max-keys histories."),

		growth:        nd("growth_bytes_per_second", "Growth slope of a process's memory series on one GPU (allocated, reserved, used, unattributed), fitted on the per-bucket floor over the short or long window. From the daemon's own sampling, not from Prometheus.", growthLabels...),
		growthFit:     nd("growth_fit_ratio", "Fit quality (0..1) of the growth slope with the same labels. From the daemon's own sampling.", growthLabels...),
		verdict:       nd("leak_verdict", "Leak verdict for a process on one GPU: 1 for the current verdict, 0 for the others (leak, cache_growth, unattributed_growth, steady, warming_up). From the daemon's own sampling.", verdictLabels...),
		gpuGrowth:     nd("gpu_growth_bytes_per_second", "Growth slope of the GPU's used memory over the short or long window, fitted on the per-bucket floor. From the daemon's own sampling.", "uuid", "gpu", "window"),
		gpuGrowthFit:  nd("gpu_growth_fit_ratio", "Fit quality (0..1) of the GPU's growth slope. From the daemon's own sampling.", "uuid", "gpu", "window"),
		gpuExhaustion: nd("gpu_exhaustion_seconds", "Projected seconds until the GPU's memory is full at its current growth rate (the fitted slope of the used floor). Absent when memory is not growing with a good fit, and during the trend warm-up after the daemon starts. From the daemon's own sampling.", gpuLabels...),

		duplicates:     nd("worker_duplicates", "Workers of one service (client label service, else the same comm and cmdline: basis) on one GPU that each hold a similar footprint (within 10% of the group median): the model is loaded once per worker.", "uuid", "gpu", "service", "basis"),
		duplicateBytes: nd("worker_duplicates_bytes", "GPU memory held together by the duplicated workers of vram_worker_duplicates.", "uuid", "gpu", "service", "basis"),
		headroom:       nd("gpu_headroom_workers", "How many more workers of the largest per-process footprint on this GPU still fit in free memory after the safety margin (headroom.safety_margin_bytes). Absent for a GPU without processes.", gpuLabels...),
		largestWorker:  nd("gpu_largest_worker_bytes", "Largest per-process footprint on the GPU (NVML used, else pushed reserved): the worker size vram_gpu_headroom_workers counts in.", gpuLabels...),

		collectorSuccess:  nd("collector_success", "1 if the named collector's source was healthy at the last sample (nvml: NVML up; process: procfs readable), else 0.", "collector"),
		collectorDuration: nd("collector_duration_seconds", "Time the named collector took to build its series from the current view. The vram_* families are built and encoded once per sample tick (on the first scrape after it) and served as bytes until the next, so this is not a per-scrape time.", "collector"),
		demo:              nd("demo_mode", "1 when the daemon runs on a simulated node (demo mode): the data is NOT from real GPUs."),

		diag: newDiagDescs(),
	}
}

// all lists the fixed descriptors in a stable order (runtime_info, whose label names vary per sender, is not among them).
func (d descs) all() []*metricDesc {
	out := []*metricDesc{
		d.nvmlUp, d.nvmlInfo, d.nvmlPollDuration, d.nvmlErrors,
		d.gpuInfo, d.gpuTotal, d.gpuUsed, d.gpuFree, d.gpuDriverReserved, d.gpuBAR1Total, d.gpuBAR1Used,
		d.procUsed, d.procUnattributed, d.procInFlight, d.procInfo, d.procRSS, d.procStart,
		d.rtAllocated, d.rtReserved, d.rtCached, d.rtPeak, d.rtActive, d.rtInactiveSplit, d.rtLimit, d.rtRetries, d.rtOOMs,
		d.pushConnections, d.pushConnectionsTotal, d.pushMessages, d.pushBytes, d.pushRejected, d.pushDisconnects,
		d.pushProcesses, d.pushAge, d.pushClientDropped, d.pushUnknownDevices,
		d.growth, d.growthFit, d.verdict, d.gpuGrowth, d.gpuGrowthFit, d.gpuExhaustion,
		d.collectorSuccess, d.collectorDuration, d.demo,
		d.duplicates, d.duplicateBytes, d.headroom, d.largestWorker,
		d.pushSeries, d.pushPIDReused, d.trendKeys, d.trendUntracked,
	}
	out = append(out, d.diag.all()...)
	return out
}

// MetricNames lists every vram_* metric family the collectors can export, sorted. Tests
// use it to check that docs, dashboards and demo mode cover every family.
func MetricNames() []string {
	names := []string{namespace + "_runtime_info"}
	for _, d := range newDescs().all() {
		names = append(names, d.name)
	}
	sort.Strings(names)
	return names
}
