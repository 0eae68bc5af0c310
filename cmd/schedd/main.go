// Command schedd supervises one gateway process and everything about it that depends on
// time. Run `schedd --help` for the commands.
package main

import "os"

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}
