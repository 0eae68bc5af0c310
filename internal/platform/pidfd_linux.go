package platform

import (
	"errors"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// pidfdGroupUnsupported is set once the kernel has refused PIDFD_SIGNAL_PROCESS_GROUP
// (before Linux 6.9) or pidfds altogether (before 5.3).
var pidfdGroupUnsupported atomic.Bool

// openPidfd returns a pidfd for pid (close-on-exec), or -1 when the kernel has none.
func openPidfd(pid int) int {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1
	}
	return fd
}

// pidfdSignalGroup sends sig to the process group whose leader fd refers to. The kernel
// resolves the group through the pidfd, never through a number, so it reaches our group
// or nobody (ESRCH), even after the leader has been reaped.
func pidfdSignalGroup(fd int, sig unix.Signal) error {
	if pidfdGroupUnsupported.Load() {
		return errNoPidfdGroup
	}
	err := unix.PidfdSendSignal(fd, sig, nil, unix.PIDFD_SIGNAL_PROCESS_GROUP)
	// Signals are validated when the config is read, so EINVAL is the unknown flag.
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		pidfdGroupUnsupported.Store(true)
		return errNoPidfdGroup
	}
	return err
}

// pidfdSignalProcess sends sig to the process fd refers to, and to no other (Linux 5.1).
func pidfdSignalProcess(fd int, sig unix.Signal) error {
	err := unix.PidfdSendSignal(fd, sig, nil, 0)
	if errors.Is(err, unix.ENOSYS) {
		return errNoPidfdGroup
	}
	return err
}
