// Command vram_exporter is the node-local GPU memory exporter: the daemon (default),
// and the on-call subcommands. main stays thin; run() holds the wiring so tests can
// drive it without a process.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
