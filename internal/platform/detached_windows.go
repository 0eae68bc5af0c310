package platform

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/windows"
)

// startDetached starts the process detached from our console in a new process group,
// and out of our Job object where the job allows it (a task's job may kill what is left
// in it when the task ends).
func startDetached(c DetachedCommand, files []*os.File) (*os.Process, error) {
	attr := func(flags uint32) *os.ProcAttr {
		return &os.ProcAttr{
			Dir:   c.Dir,
			Env:   c.Env,
			Files: files,
			Sys: &syscall.SysProcAttr{
				CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS | flags,
				HideWindow:    true,
			},
		}
	}
	p, err := os.StartProcess(c.Argv[0], c.Argv, attr(windows.CREATE_BREAKAWAY_FROM_JOB))
	if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
		p, err = os.StartProcess(c.Argv[0], c.Argv, attr(0))
	}
	return p, err
}

func waitExit(ctx context.Context, pid int) error {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return nil // no such process
	}
	defer windows.CloseHandle(h)
	slice := uint32(exitPollInterval / time.Millisecond)
	for {
		ev, err := windows.WaitForSingleObject(h, slice)
		if err != nil {
			return err
		}
		if ev == windows.WAIT_OBJECT_0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

func pidAlive(pid int) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 0)
	return err == nil && ev == uint32(windows.WAIT_TIMEOUT)
}
