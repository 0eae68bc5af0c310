//go:build unix && !linux

package platform

import "golang.org/x/sys/unix"

// openPidfd: there are no pidfds here.
func openPidfd(int) int { return -1 }

func pidfdSignalGroup(int, unix.Signal) error { return errNoPidfdGroup }

func pidfdSignalProcess(int, unix.Signal) error { return errNoPidfdGroup }
