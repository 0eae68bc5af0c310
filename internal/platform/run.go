package platform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// RunSpec describes a short command run to completion (probes, exec targets, exec sinks).
type RunSpec struct {
	Argv []string
	Env  []string // nil means ChildEnv(os.Environ(), nil)
	Dir  string
	// Stdin is fed to the child; nil means /dev/null.
	Stdin []byte
	// MaxOutput caps each of Stdout and Stderr; <= 0 means 64 KiB. Output past the cap is
	// read and discarded, so the child never blocks on a full pipe.
	MaxOutput int
	// StopGrace, when > 0, makes the end of ctx stop the command as the gateway is stopped:
	// SIGTERM to the whole group, SIGKILL to the group StopGrace later if it is still there
	// (Windows: the Job is terminated at once). 0 keeps the immediate SIGKILL.
	StopGrace time.Duration
}

// RunResult is what a finished command left behind.
type RunResult struct {
	Status         ExitStatus
	Stdout, Stderr []byte
}

const defaultMaxOutput = 64 << 10

// runWaitDelay bounds how long RunCommand waits, once the leader has exited or ctx has
// ended, for descendants still holding the output pipes.
const runWaitDelay = time.Second

// RunCommand runs a short command to completion in its own process group (Windows: its
// own Job object), stdin from spec.Stdin, stdout/stderr captured up to MaxOutput bytes
// each. When ctx ends the whole group is killed and the error wraps ctx.Err(). Whatever
// is left in the group after the leader exits is killed too. A non-zero exit is NOT an
// error: look at Result.Status. A command that cannot be started returns *SpawnError.
func RunCommand(ctx context.Context, spec RunSpec) (RunResult, error) {
	res := RunResult{Status: unknownStatus}
	if len(spec.Argv) == 0 {
		return res, &SpawnError{Op: "lookpath", Err: errEmptyArgv}
	}
	name := spec.Argv[0]
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("run %s: %w", name, err)
	}
	path, err := resolveArgv0(name)
	if err != nil {
		return res, err
	}
	if err := checkDir(spec.Dir); err != nil {
		return res, err
	}
	limit := spec.MaxOutput
	if limit <= 0 {
		limit = defaultMaxOutput
	}
	stdout := &cappedBuffer{limit: limit}
	stderr := &cappedBuffer{limit: limit}

	cmd := exec.CommandContext(ctx, path, spec.Argv[1:]...)
	cmd.Args[0] = name
	cmd.Env = envOrDefault(spec.Env, os.Environ)
	cmd.Dir = spec.Dir
	if spec.Stdin != nil {
		cmd.Stdin = bytes.NewReader(spec.Stdin)
	}
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.WaitDelay = runWaitDelay
	group, err := newRunGroup(cmd)
	if err != nil {
		return res, err
	}
	defer group.close()
	stopGrace := group.graceful(spec.StopGrace)

	unlock := lockSpawnThread()
	defer unlock()
	forked := forking()
	if err := cmd.Start(); err != nil {
		forked(0)
		return res, &SpawnError{Op: "exec", Path: path, Err: underlyingErr(err)}
	}
	forked(cmd.Process.Pid)
	defer waited(cmd.Process.Pid)
	if err := group.started(); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return res, err
	}
	werr := cmd.Wait()
	stopGrace()
	group.killRest()
	if cmd.ProcessState != nil {
		res.Status = processStateStatus(cmd.ProcessState)
	}
	res.Stdout, res.Stderr = stdout.buf, stderr.buf
	if cerr := ctx.Err(); cerr != nil && werr != nil {
		return res, fmt.Errorf("run %s: %w", name, cerr)
	}
	var ee *exec.ExitError
	if werr == nil || errors.As(werr, &ee) || errors.Is(werr, exec.ErrWaitDelay) {
		return res, nil
	}
	return res, fmt.Errorf("run %s: %w", name, werr)
}

// cappedBuffer keeps the first limit bytes written and discards the rest, never
// failing a write so the copying goroutine keeps draining the pipe.
type cappedBuffer struct {
	limit int
	buf   []byte
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
