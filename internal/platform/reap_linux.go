package platform

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// adopting is set while the reaper runs: only then can a child schedd did not start be
// an orphan it adopted.
var adopting atomic.Bool

// StartReaper makes schedd the reaper of its descendants' orphans: it sets
// PR_SET_CHILD_SUBREAPER (PID 1 is the reaper of its namespace anyway), so a process the
// gateway leaves behind is reparented to schedd, and reaps every such child as it exits
// (on SIGCHLD), so no zombie piles up even where init does not reap. Children that schedd
// started itself are left to their owners; children it already had (a shell's background
// jobs before `exec schedd`) are reaped but never taken for orphans of the gateway.
// onReap, if not nil, is called for each child reaped. stop ends the reaping and the
// subreaper role. Linux only; ErrNotSupported elsewhere.
func StartReaper(onReap func(pid int, st ExitStatus)) (stop func(), err error) {
	if !adopting.CompareAndSwap(false, true) {
		return nil, errors.New("start reaper: already running")
	}
	if err := SetChildSubreaper(); err != nil && os.Getpid() != 1 {
		adopting.Store(false)
		return nil, fmt.Errorf("start reaper: PR_SET_CHILD_SUBREAPER: %w", err)
	}
	children.fork.Lock()
	for _, pid := range listChildren() {
		if childKindOf(pid) == 0 {
			keep(pid)
		}
	}
	children.fork.Unlock()

	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGCHLD)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			reapOrphans(onReap) // also the ones that exited before Notify
			select {
			case <-sigc:
			case <-quit:
				return
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(sigc)
			close(quit)
			wg.Wait()
			_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
			adopting.Store(false)
			children.mu.Lock()
			for pid, k := range children.pids {
				if k == childKept {
					delete(children.pids, pid)
				}
			}
			children.mu.Unlock()
		})
	}, nil
}

// reapOrphans reaps every exited child that no code of schedd waits for. Children are
// reaped one by one by pid, never with wait(-1), which could take the exit status of the
// gateway or of a command os/exec waits for.
func reapOrphans(onReap func(int, ExitStatus)) {
	children.fork.Lock()
	defer children.fork.Unlock()
	for _, pid := range listChildren() {
		if childKindOf(pid) == childOwned {
			continue
		}
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if err != nil || got != pid {
			continue // still running, or gone meanwhile
		}
		waited(pid)
		if onReap != nil {
			onReap(pid, exitStatusOf(ws))
		}
	}
}

// Adopted lists the adopted processes that are still running (not zombies). It is empty
// unless the reaper runs (StartReaper).
func Adopted() []AdoptedProcess {
	if !adopting.Load() {
		return nil
	}
	children.fork.Lock()
	defer children.fork.Unlock()
	return adoptedLocked()
}

func adoptedLocked() []AdoptedProcess {
	self := os.Getpid()
	var out []AdoptedProcess
	for _, pid := range listChildren() {
		if childKindOf(pid) != 0 {
			continue
		}
		st, ok := readStat(pid)
		if !ok || st.ppid != self || st.state == 'Z' || st.state == 'X' {
			continue
		}
		out = append(out, AdoptedProcess{PID: pid, PGID: st.pgrp, Name: st.name, start: st.start})
	}
	return out
}

// SignalAdopted sends sig to each of procs that is still the same adopted process (same
// pid and start time, still our unreaped child) and returns the ones it signalled. While
// it runs no child is reaped, so none of the pids can be handed to another process.
func SignalAdopted(procs []AdoptedProcess, sig os.Signal) ([]AdoptedProcess, error) {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return nil, fmt.Errorf("signal %v: %w", sig, ErrNotSupported)
	}
	if !adopting.Load() || len(procs) == 0 {
		return nil, nil
	}
	children.fork.Lock()
	defer children.fork.Unlock()
	now := adoptedLocked()
	var sent []AdoptedProcess
	var errs []error
	for _, p := range procs {
		if !slices.Contains(now, p) {
			continue
		}
		if err := unix.Kill(p.PID, s); err != nil {
			errs = append(errs, fmt.Errorf("signal adopted process %d: %w", p.PID, err))
			continue
		}
		sent = append(sent, p)
	}
	return sent, errors.Join(errs...)
}

// listChildren returns the pids of schedd's children, from the children lists of its
// threads (an orphan is reparented to any live thread), or, on kernels built without
// those lists, from a scan of /proc.
func listChildren() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var pids []int
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "children"))
		if errors.Is(err, os.ErrNotExist) && len(pids) == 0 {
			if _, serr := os.Stat("/proc/self/task/" + t.Name()); serr == nil {
				return scanChildren() // no CONFIG_PROC_CHILDREN
			}
		}
		for _, f := range bytes.Fields(b) {
			if pid, err := strconv.Atoi(string(f)); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	slices.Sort(pids)
	return slices.Compact(pids)
}

// scanChildren finds schedd's children by reading the parent of every process.
func scanChildren() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok && st.ppid == self {
			pids = append(pids, pid)
		}
	}
	return pids
}
