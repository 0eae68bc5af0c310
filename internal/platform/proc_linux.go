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

// parseProcStat reads the state and pgrp fields of /proc/PID/stat.
func parseProcStat(stat []byte) (state byte, pgrp int, ok bool) {
	st, ok := parseStat(stat)
	return st.state, st.pgrp, ok
}

// procStat is what schedd reads of /proc/PID/stat.
type procStat struct {
	name       string // comm, at most 15 bytes
	state      byte
	ppid, pgrp int
	start      uint64 // start time in clock ticks after boot: with the pid, an identity
}

// parseStat parses "pid (comm) state ppid pgrp ... starttime ...", where comm may hold
// spaces and parentheses.
func parseStat(stat []byte) (procStat, bool) {
	open, i := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || i < open {
		return procStat{}, false
	}
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 3 || len(fields[0]) != 1 {
		return procStat{}, false
	}
	st := procStat{name: string(stat[open+1 : i]), state: fields[0][0]}
	var err error
	if st.ppid, err = strconv.Atoi(string(fields[1])); err != nil {
		return procStat{}, false
	}
	if st.pgrp, err = strconv.Atoi(string(fields[2])); err != nil {
		return procStat{}, false
	}
	if len(fields) > 19 { // starttime is field 22 of the line, the 20th after comm
		st.start, _ = strconv.ParseUint(string(fields[19]), 10, 64)
	}
	return st, true
}

// readStat reads /proc/PID/stat.
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	return parseStat(b)
}

// SetChildSubreaper makes schedd the reaper of orphaned descendants (PR_SET_CHILD_SUBREAPER),
// so a gateway's backgrounded grandchildren are reparented to schedd rather than to init
// and KillGroupAndWait reaps them itself. Linux only; ErrNotSupported elsewhere.
func SetChildSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}
