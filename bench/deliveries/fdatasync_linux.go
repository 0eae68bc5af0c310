package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync flushes f's data (not its metadata) to the disk.
func fdatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
