//go:build unix

package platform

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// terminate sends SIGTERM to the whole group.
func (g *runGroup) terminate() error {
	if g.cmd.Process == nil {
		return nil
	}
	err := unix.Kill(-g.cmd.Process.Pid, unix.SIGTERM)
	if errors.Is(err, unix.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}
