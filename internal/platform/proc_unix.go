//go:build unix

package platform

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Process is a started child: the leader of its own process group (pgid == pid).
type Process struct {
	pid    int
	group  pgroup // guarded by mu once Start has returned
	done   chan struct{}
	status ExitStatus // written before done is closed
	out    *drainers

	mu        sync.Mutex
	reaped    bool // the leader has been reaped
	groupGone bool // KillGroupAndWait saw the group empty: the pgid may be reused
}

// Start starts cmd in a new process group (Setpgid) with stdin from /dev/null and
// stdout/stderr on pipes drained into cmd.Output. On Linux the child also gets
// SIGKILL as its parent-death signal, as a second line of defence should schedd itself
// be killed: the fork happens on an OS thread locked to the goroutine that waits for the
// child, so the signal fires only when schedd dies, not when some runtime thread exits.
func Start(cmd Command) (*Process, error) {
	if len(cmd.Argv) == 0 {
		return nil, &SpawnError{Op: "lookpath", Err: errEmptyArgv}
	}
	path, err := resolveArgv0(cmd.Argv[0])
	if err != nil {
		return nil, err
	}
	if err := checkDir(cmd.Dir); err != nil {
		return nil, err
	}
	argv, env := cmd.Argv, envOrDefault(cmd.Env, os.Environ)
	if len(cmd.ListenNames) > 0 {
		if len(cmd.ListenNames) != len(cmd.ExtraFiles) {
			return nil, &SpawnError{Op: "exec", Path: path, Err: fmt.Errorf("%d listen names for %d files", len(cmd.ListenNames), len(cmd.ExtraFiles))}
		}
		if path, argv, err = listenExec(path, argv); err != nil {
			return nil, err
		}
		env = WithoutKeys(env, []string{"LISTEN_FDS", "LISTEN_FDNAMES", "LISTEN_PID"})
		for k, v := range ListenFDsEnv(cmd.ListenNames) {
			env = append(env, k+"="+v)
		}
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, &SpawnError{Op: "stdin", Path: os.DevNull, Err: underlyingErr(err)}
	}
	defer devnull.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, &SpawnError{Op: "pipe", Err: err}
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, &SpawnError{Op: "pipe", Err: err}
	}
	attr := &os.ProcAttr{
		Dir:   cmd.Dir,
		Env:   env,
		Files: append([]*os.File{devnull, outW, errW}, cmd.ExtraFiles...),
		Sys:   sysProcAttr(),
	}
	p := &Process{done: make(chan struct{})}
	started := make(chan error, 1)
	go p.supervise(path, argv, attr, started)
	err = <-started
	// The child holds its own copies of the write ends; ours must go so EOF can come.
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, &SpawnError{Op: "exec", Path: path, Err: underlyingErr(err)}
	}
	p.out = startDrainers(cmd.Output, outR, errR)
	return p, nil
}

// supervise forks the child and then waits for it on the same locked OS thread.
func (p *Process) supervise(path string, argv []string, attr *os.ProcAttr, started chan<- error) {
	unlock := lockSpawnThread()
	defer unlock()
	forked := forking()
	proc, err := os.StartProcess(path, argv, attr)
	if err != nil {
		forked(0)
		started <- err
		return
	}
	forked(proc.Pid)
	p.pid = proc.Pid
	p.group = openGroup(proc.Pid)
	// From here on the pid is waited for with wait4 directly, so that where the platform
	// allows it (Linux) the leader stays a zombie, pinning its pgid, until p.mu is held.
	_ = proc.Release()
	started <- nil

	var ws syscall.WaitStatus
	var err2 error
	if waitExited(p.pid) {
		p.mu.Lock()
		ws, err2 = reap(p.pid)
		p.reaped = true
		p.mu.Unlock()
	} else {
		ws, err2 = reap(p.pid)
		p.mu.Lock()
		p.reaped = true
		p.mu.Unlock()
	}
	waited(p.pid)
	if err2 != nil {
		p.status = unknownStatus
	} else {
		p.status = exitStatusOf(ws)
	}
	close(p.done)
}

// reap waits for pid with wait4, retrying on EINTR.
func reap(pid int) (syscall.WaitStatus, error) {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if err != syscall.EINTR {
			return ws, err
		}
	}
}

// PID returns the leader's pid, which is also the process group id.
func (p *Process) PID() int { return p.pid }

// Done is closed once the leader has been reaped. It does not wait for the output pipes:
// descendants may hold them open long after the leader is gone.
func (p *Process) Done() <-chan struct{} { return p.done }

// OutputClosed is closed once both output pipes reached EOF (every holder of the write
// ends closed them or died) or Release closed them, and every Output call has returned.
func (p *Process) OutputClosed() <-chan struct{} { return p.out.done }

// ExitStatus reports how the leader ended. Before Done is closed it returns a status
// with Code -1 and neither Exited nor Signaled set.
func (p *Process) ExitStatus() ExitStatus {
	select {
	case <-p.done:
		return p.status
	default:
		return unknownStatus
	}
}

// Signal sends sig to the whole process group. It returns os.ErrProcessDone when no
// member of the group is left, and never reaches a group that took over the number
// once ours is gone (see pgroup).
func (p *Process) Signal(sig os.Signal) error { return p.send(sig, false) }

// SignalLeader sends sig to the group's leader alone (its children are its own to stop).
// It returns os.ErrProcessDone once the leader has been reaped and, like Signal, never
// reaches a process that took over its pid.
func (p *Process) SignalLeader(sig os.Signal) error { return p.send(sig, true) }

func (p *Process) send(sig os.Signal, leaderOnly bool) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("signal %v: %w", sig, ErrNotSupported)
	}
	// kill(2) does not block; holding mu keeps the leader from being reaped (and its pid
	// from being freed) between the check and the kill.
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.groupGone {
		return os.ErrProcessDone
	}
	signal, what := p.group.signal, "process group"
	if leaderOnly {
		signal, what = p.group.signalLeader, "process"
	}
	if err := signal(s, p.reaped); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return os.ErrProcessDone
		}
		return fmt.Errorf("signal %s %d: %w", what, p.pid, err)
	}
	return nil
}

// Kill sends SIGKILL to the whole process group.
func (p *Process) Kill() error { return p.Signal(unix.SIGKILL) }

// killPollMax caps the pause between checks for a group that is still there.
const killPollMax = 50 * time.Millisecond

// KillGroupAndWait SIGKILLs whatever is left in the process group (descendants that
// outlived the leader) and waits, up to ctx, until no live member of the group remains.
// Called before Done, it kills the leader too and waits for it first. Members that are
// already dead but not yet reaped by their new parent (zombies) count as gone on Linux;
// when schedd is their subreaper (SetChildSubreaper) it reaps them here.
func (p *Process) KillGroupAndWait(ctx context.Context) error {
	select {
	case <-p.done:
	default:
		if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return err
		}
		select {
		case <-p.done:
		case <-ctx.Done():
			return fmt.Errorf("kill process group %d: %w", p.pid, ctx.Err())
		}
	}
	p.mu.Lock()
	gone := p.groupGone
	p.mu.Unlock()
	if gone {
		return nil
	}
	pgid := p.pid
	err := untilGone(ctx, func() (bool, error) {
		reapGroup(pgid)
		return p.groupAlive()
	}, func() {
		p.mu.Lock()
		_ = p.group.signal(unix.SIGKILL, p.reaped)
		p.mu.Unlock()
	}, time.Time{})
	if err != nil {
		return fmt.Errorf("kill process group %d: %w", pgid, err)
	}
	// Members seen as zombies a moment ago may be ours to reap by now.
	reapGroup(pgid)
	p.mu.Lock()
	p.groupGone = true
	p.group.close()
	p.mu.Unlock()
	return nil
}

// untilGone asks alive, with a pause that doubles from 1 ms to killPollMax, until it says
// the group is gone, and calls kill on every round from killAt on (members may still fork:
// once is not enough). It returns alive's error, or ctx's if ctx ends first.
func untilGone(ctx context.Context, alive func() (bool, error), kill func(), killAt time.Time) error {
	delay := time.Millisecond
	for {
		a, err := alive()
		if err != nil {
			return err
		}
		if !a {
			return nil
		}
		if !time.Now().Before(killAt) {
			kill()
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		delay = min(delay*2, killPollMax)
	}
}

// groupAlive reports whether the group still has a member that is not a zombie.
func (p *Process) groupAlive() (bool, error) {
	p.mu.Lock()
	err := p.group.signal(0, p.reaped)
	p.mu.Unlock()
	return groupLiveAfter(err, p.pid)
}

// groupLiveAfter is whether group pgid has a member that is not a zombie, given err of a
// signal 0 sent to it.
func groupLiveAfter(err error, pgid int) (bool, error) {
	switch {
	case errors.Is(err, unix.ESRCH):
		return false, nil
	case err != nil:
		// EPERM: members exist but none can be signalled by us.
		return true, err
	}
	return groupHasLiveMember(pgid), nil
}

// reapGroup reaps members of pgid that are our own children. The leader is reaped by
// supervise; others become our children only when we are their subreaper. It excludes
// the reaper, which may be signalling those same adopted children.
func reapGroup(pgid int) {
	children.fork.Lock()
	defer children.fork.Unlock()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-pgid, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
	}
}

// Release frees the pipes once the group is gone: it waits for the drainers to reach
// EOF (closing the read ends if a process outside the group still holds the write ends)
// and for them to exit. It fails while the leader is running.
func (p *Process) Release() error {
	select {
	case <-p.done:
	default:
		return errStillRunning
	}
	p.mu.Lock()
	p.group.close()
	p.mu.Unlock()
	p.out.release()
	return nil
}

// ProcessGroup returns the process group id of pid.
func ProcessGroup(pid int) (int, error) {
	pgid, err := unix.Getpgid(pid)
	if err != nil {
		return 0, fmt.Errorf("process group of %d: %w", pid, err)
	}
	return pgid, nil
}
