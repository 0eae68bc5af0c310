package platform

import (
	"context"
	"errors"
	"os"
	"time"
)

// DetachedCommand is a process started to outlive schedd: the successor that replaces it,
// or the helper that relaunches its scheduled task once it has exited. It runs in a
// session (unix) or process group (Windows) of its own, so nothing aimed at schedd's
// group or console reaches it, and without a parent-death signal.
type DetachedCommand struct {
	Argv []string // Argv[0] must be a path
	Env  []string // the complete environment
	Dir  string   // "" = inherit
	// Stdout and Stderr are handed over as they are; nil means the null device.
	Stdout, Stderr *os.File
	// ExtraFiles become fd 3, 4, ... in the child (unix only; ignored on Windows).
	ExtraFiles []*os.File
}

// Detached is a started detached process. Either Release it (schedd is about to exit and
// leaves it behind on purpose) or Wait for it.
type Detached struct{ p *os.Process }

// PID returns the process id.
func (d *Detached) PID() int { return d.p.Pid }

// Release gives the process up: schedd will never wait for it. Should it exit while
// schedd still runs, the reaper (where there is one) reaps it; it is never stopped as an
// orphan of the gateway.
func (d *Detached) Release() error {
	keep(d.p.Pid)
	return d.p.Release()
}

// Wait reaps the process once it has exited.
func (d *Detached) Wait() (ExitStatus, error) {
	ps, err := d.p.Wait()
	waited(d.p.Pid)
	if err != nil {
		return unknownStatus, err
	}
	return processStateStatus(ps), nil
}

// Kill kills the process (not its descendants) and reaps it.
func (d *Detached) Kill() error {
	err := d.p.Kill()
	if errors.Is(err, os.ErrProcessDone) {
		err = nil
	}
	_, werr := d.p.Wait()
	waited(d.p.Pid)
	return errors.Join(err, werr)
}

// StartDetached starts c and returns without waiting for it.
func StartDetached(c DetachedCommand) (*Detached, error) {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return nil, &SpawnError{Op: "lookpath", Err: errEmptyArgv}
	}
	if err := checkDir(c.Dir); err != nil {
		return nil, err
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, &SpawnError{Op: "stdin", Path: os.DevNull, Err: underlyingErr(err)}
	}
	defer devnull.Close()
	or := func(f *os.File) *os.File {
		if f == nil {
			return devnull
		}
		return f
	}
	files := []*os.File{devnull, or(c.Stdout), or(c.Stderr)}
	forked := forking()
	p, err := startDetached(c, files)
	if err != nil {
		forked(0)
		return nil, &SpawnError{Op: "exec", Path: c.Argv[0], Err: underlyingErr(err)}
	}
	forked(p.Pid)
	return &Detached{p: p}, nil
}

// exitPollInterval is how often WaitExit looks where the OS offers no way to wait for a
// process that is not our child.
const exitPollInterval = 50 * time.Millisecond

// WaitExit blocks until process pid has exited (a zombie counts as exited) or ctx ends.
// A pid that does not exist has exited.
func WaitExit(ctx context.Context, pid int) error {
	return waitExit(ctx, pid)
}

// ProcessAlive reports whether process pid exists and has not exited (zombies are dead).
func ProcessAlive(pid int) bool { return pidAlive(pid) }
