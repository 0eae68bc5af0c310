//go:build windows

package platform

import (
	"context"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/windows"
)

// Process is a started child, the first process of its own Job object and console
// process group.
type Process struct {
	pid    int
	proc   *os.Process
	done   chan struct{}
	status ExitStatus // written before done is closed
	out    *drainers

	mu        sync.Mutex
	job       windows.Handle // 0 once released
	groupGone bool
}

// Start starts cmd in a new Job object (KILL_ON_JOB_CLOSE) and console process group
// (CREATE_NEW_PROCESS_GROUP). The process is created suspended and resumed only once it
// is in the job, so none of its descendants can start outside it. stdin is NUL.
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
	if len(cmd.ExtraFiles) > 0 || len(cmd.ListenNames) > 0 {
		return nil, &SpawnError{Op: "exec", Path: path, Err: fmt.Errorf("extra files: %w", ErrNotSupported)}
	}
	job, err := newJob()
	if err != nil {
		return nil, &SpawnError{Op: "job", Path: path, Err: err}
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		windows.CloseHandle(job)
		return nil, &SpawnError{Op: "stdin", Path: os.DevNull, Err: underlyingErr(err)}
	}
	defer devnull.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		windows.CloseHandle(job)
		return nil, &SpawnError{Op: "pipe", Err: err}
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		windows.CloseHandle(job)
		outR.Close()
		outW.Close()
		return nil, &SpawnError{Op: "pipe", Err: err}
	}
	attr := &os.ProcAttr{
		Dir:   cmd.Dir,
		Env:   envOrDefault(cmd.Env, os.Environ),
		Files: []*os.File{devnull, outW, errW},
		Sys: &syscall.SysProcAttr{
			CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_SUSPENDED,
		},
	}
	proc, err := os.StartProcess(path, cmd.Argv, attr)
	outW.Close()
	errW.Close()
	if err != nil {
		windows.CloseHandle(job)
		outR.Close()
		errR.Close()
		return nil, &SpawnError{Op: "exec", Path: path, Err: underlyingErr(err)}
	}
	if err := assignAndResume(job, proc.Pid); err != nil {
		_ = proc.Kill()
		_, _ = proc.Wait()
		windows.CloseHandle(job)
		outR.Close()
		errR.Close()
		return nil, &SpawnError{Op: "job", Path: path, Err: err}
	}
	p := &Process{pid: proc.Pid, proc: proc, job: job, done: make(chan struct{})}
	p.out = startDrainers(cmd.Output, outR, errR)
	go p.wait()
	return p, nil
}

func (p *Process) wait() {
	st, err := p.proc.Wait()
	if err != nil {
		p.status = unknownStatus
	} else {
		p.status = processStateStatus(st)
	}
	close(p.done)
}

// PID returns the first process's pid (also its console process group id).
func (p *Process) PID() int { return p.pid }

// Done is closed once the first process has exited (not waiting for output EOF).
func (p *Process) Done() <-chan struct{} { return p.done }

// OutputClosed is closed once both output pipes reached EOF or Release closed them,
// and every Output call has returned.
func (p *Process) OutputClosed() <-chan struct{} { return p.out.done }

// ExitStatus reports how the first process ended; before Done it has Code -1.
func (p *Process) ExitStatus() ExitStatus {
	select {
	case <-p.done:
		return p.status
	default:
		return unknownStatus
	}
}

// Signal terminates the whole job for os.Kill (syscall.SIGKILL); any other signal sends
// CTRL_BREAK_EVENT to the console process group, which reaches it only when the child
// shares schedd's console.
func (p *Process) Signal(sig os.Signal) error {
	if sig == os.Kill {
		return p.Kill()
	}
	select {
	case <-p.done:
		return os.ErrProcessDone
	default:
	}
	if err := windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(p.pid)); err != nil {
		return fmt.Errorf("signal process group %d: %w", p.pid, err)
	}
	return nil
}

// SignalLeader is not supported: a console control event reaches the whole console
// process group, never one process alone (gateway.stop.scope: main is refused here).
func (p *Process) SignalLeader(os.Signal) error { return ErrNotSupported }

// Kill terminates every process in the job.
func (p *Process) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.job == 0 || p.groupGone {
		return os.ErrProcessDone
	}
	if err := windows.TerminateJobObject(p.job, jobKillCode); err != nil {
		return fmt.Errorf("terminate job of %d: %w", p.pid, err)
	}
	return nil
}

const killPollMax = 50 * time.Millisecond

// KillGroupAndWait terminates whatever is left in the job and waits, up to ctx, until
// the job has no active process. Called before Done it waits for the first process too.
func (p *Process) KillGroupAndWait(ctx context.Context) error {
	p.mu.Lock()
	job, gone := p.job, p.groupGone
	p.mu.Unlock()
	if gone || job == 0 {
		return nil
	}
	delay := time.Millisecond
	for {
		_ = windows.TerminateJobObject(job, jobKillCode)
		n, err := activeProcesses(job)
		if err != nil {
			return fmt.Errorf("kill job of %d: %w", p.pid, err)
		}
		if n == 0 {
			select {
			case <-p.done:
				p.mu.Lock()
				p.groupGone = true
				p.mu.Unlock()
				return nil
			default:
			}
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("kill job of %d: %w", p.pid, ctx.Err())
		}
		delay = min(delay*2, killPollMax)
	}
}

// Release closes the job handle (killing anything still in it) and the pipes.
// It fails while the first process is running.
func (p *Process) Release() error {
	select {
	case <-p.done:
	default:
		return errStillRunning
	}
	p.mu.Lock()
	job := p.job
	p.job = 0
	p.mu.Unlock()
	var err error
	if job != 0 {
		err = windows.CloseHandle(job)
	}
	p.out.release()
	return err
}

// SetChildSubreaper is Linux only.
func SetChildSubreaper() error { return ErrNotSupported }

// lockSpawnThread is a no-op on Windows: there is no parent-death signal.
func lockSpawnThread() (unlock func()) { return func() {} }

// ProcessGroup returns ErrNotSupported on Windows.
func ProcessGroup(int) (int, error) { return 0, ErrNotSupported }
