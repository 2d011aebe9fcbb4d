package procinfo

// Fixture names shared by the procfs tests (Linux) and the cgroup parser tests (any OS).
const (
	fixtureRoot = "testdata/proc"
	hex1        = "3b7c1f0e9d2a4c6b8e0f1a3c5d7e9b2a4c6e8f0a1b3d5f7e9c2a4b6d8f0e1a3c"
	hex2        = "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0"
	podUID1     = "7d5c3e9a-1b2f-4c8d-9e0a-6f4b2d8c1e3a"
	// fixtureBoot is the btime in testdata/proc/stat.
	fixtureBoot = 1767225600
)
