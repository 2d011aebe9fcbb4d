package api

// The words of the wire contract that several parts share: the leak detector produces
// them (package trend uses these very constants), the JSON API and /metrics carry them,
// and triage switches on them. They live here, in a package that imports nothing of the
// daemon, so that the on-call command builds without NVML, procfs or the push server.

// Verdict is what the leak detector concludes about one (pid, uuid).
type Verdict string

const (
	// VerdictLeak: the allocated floor rises steadily (or, for a process that pushes no
	// allocator stats, the used floor does).
	VerdictLeak Verdict = "leak"
	// VerdictCacheGrowth: reserved rises while allocated is flat: the allocator's cache
	// is growing, normal while it plateaus.
	VerdictCacheGrowth Verdict = "cache_growth"
	// VerdictUnattributedGrowth: memory outside the allocator (used − reserved) rises
	// while allocated is flat: NCCL communicators, workspaces, raw allocations.
	VerdictUnattributedGrowth Verdict = "unattributed_growth"
	// VerdictSteady: nothing rises faster than the minimum rate with a good fit.
	VerdictSteady Verdict = "steady"
	// VerdictWarmingUp: the process is still warming up; no judgement yet.
	VerdictWarmingUp Verdict = "warming_up"
)

// Verdicts lists every verdict in a stable order, for exporting one 1 and the rest 0.
func Verdicts() []Verdict {
	return []Verdict{VerdictLeak, VerdictCacheGrowth, VerdictUnattributedGrowth, VerdictSteady, VerdictWarmingUp}
}

// Series names, as exported in the series label and Growth.Series.
const (
	SeriesAllocated    = "allocated"
	SeriesReserved     = "reserved"
	SeriesUsed         = "used"
	SeriesUnattributed = "unattributed"
)

// Window names, as exported in the window label and Growth.Window.
const (
	WindowShort = "short"
	WindowLong  = "long"
)

// MiBPerMinute is one MiB per minute in bytes per second, the unit people think in.
const MiBPerMinute = 1024 * 1024 / 60.0
