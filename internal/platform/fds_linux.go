package platform

import "golang.org/x/sys/unix"

// CloseInheritedOnExec marks every descriptor from 3 up close-on-exec, so descriptors that
// schedd itself inherited (from a shell, a service manager or a predecessor) do not leak
// into the gateway. They stay usable in schedd.
func CloseInheritedOnExec() error {
	return unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
}
