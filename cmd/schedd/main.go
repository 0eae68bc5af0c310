//go:debug updatemaxprocs=0

// Command schedd supervises one gateway process and everything about it that depends on
// time. Run `schedd --help` for the commands.
package main

import (
	"os"

	"github.com/schedd/schedd/internal/platform"
)

// The go:debug line above keeps the GOMAXPROCS chosen at start: otherwise the runtime
// re-reads the CPU quota every 30 s, a wake-up an idle supervisor has no use for.

func main() {
	platform.ListenExecMain() // a gateway start with gateway.sockets passes through here
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}
