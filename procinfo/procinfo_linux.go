package procinfo

// builtIn: Linux has procfs.
const builtIn = true
