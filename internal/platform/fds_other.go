//go:build unix && !linux

package platform

import "golang.org/x/sys/unix"

// CloseInheritedOnExec marks every descriptor from 3 up close-on-exec, so descriptors that
// schedd itself inherited do not leak into the gateway. They stay usable in schedd.
func CloseInheritedOnExec() error {
	var lim unix.Rlimit
	n := 1024
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Cur > 0 && lim.Cur < 1<<16 {
		n = int(lim.Cur)
	}
	for fd := 3; fd < n; fd++ {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue
		}
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC)
	}
	return nil
}
