//go:build unix && !linux

package platform

import (
	"errors"

	"golang.org/x/sys/unix"
)

// processAlive reports whether pid exists (zombies included: there is no /proc here).
func processAlive(pid int) bool {
	return !errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}
