//go:build unix

package platform

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func startDetached(c DetachedCommand, files []*os.File) (*os.Process, error) {
	return os.StartProcess(c.Argv[0], c.Argv, &os.ProcAttr{
		Dir:   c.Dir,
		Env:   c.Env,
		Files: append(files, c.ExtraFiles...),
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
}

func waitExit(ctx context.Context, pid int) error {
	t := time.NewTicker(exitPollInterval)
	defer t.Stop()
	for pidAlive(pid) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := unix.Kill(pid, 0); err != nil && !errors.Is(err, unix.EPERM) {
		return false
	}
	return !isZombie(pid)
}
