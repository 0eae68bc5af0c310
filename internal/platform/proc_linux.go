//go:build linux

package platform

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// lockSpawnThread pins the calling goroutine to its OS thread. Pdeathsig fires when the
// thread that forked the child exits, not the process (golang/go#27505), so the thread
// must live as long as the child: the caller forks, waits and only then unlocks.
func lockSpawnThread() (unlock func()) {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}

// waitExited blocks until pid has terminated without reaping it, so the zombie keeps
// the pid and pgid reserved until the caller reaps it. It reports false if it could
// not wait that way; the caller then simply reaps.
func waitExited(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		return err == nil
	}
}

// groupHasLiveMember scans /proc for a member of pgid that is not a zombie. When /proc
// cannot be read it assumes there is one.
func groupHasLiveMember(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		state, group, ok := parseProcStat(stat)
		if ok && group == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// parseProcStat reads the state and pgrp fields of /proc/PID/stat:
// "pid (comm) state ppid pgrp ...", where comm may hold spaces and parentheses.
func parseProcStat(stat []byte) (state byte, pgrp int, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 3 || len(fields[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err := strconv.Atoi(string(fields[2]))
	if err != nil {
		return 0, 0, false
	}
	return fields[0][0], pgrp, true
}

// SetChildSubreaper makes schedd the reaper of orphaned descendants (PR_SET_CHILD_SUBREAPER),
// so a gateway's backgrounded grandchildren are reparented to schedd rather than to init
// and KillGroupAndWait reaps them itself. Linux only; ErrNotSupported elsewhere.
func SetChildSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}
