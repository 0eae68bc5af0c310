package outbound

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/schedd/schedd/internal/platform"
)

// RunFunc runs one command to completion: platform.RunCommand is the real one, and a nil
// RunFunc stands for it. Tests inject their own.
type RunFunc func(ctx context.Context, spec platform.RunSpec) (platform.RunResult, error)

// Command is one command to run.
type Command struct {
	Argv []string
	// Env is the command's whole environment (nil: schedd's own, as a child gets it). Use
	// Environ to build it.
	Env   []string
	Dir   string
	Stdin []byte
	// Timeout bounds the run (0: ctx alone); a command still running is killed.
	Timeout time.Duration
	// MaxOutput caps each of the captured stdout and stderr (<= 0: 64 KiB).
	MaxOutput int
	// StopGrace, when > 0, stops the command at the end with SIGTERM and SIGKILL StopGrace
	// later, as the gateway is stopped (0: SIGKILL at once).
	StopGrace time.Duration
}

// Ran is how a command run went.
type Ran struct {
	// Exit is how the command ended (exit code or signal); meaningful when Fault is NoFault.
	Exit           platform.ExitStatus
	Stdout, Stderr []byte
	Elapsed        time.Duration
	// Fault says why the command did not run to its end: FaultStart (Err is a
	// *platform.SpawnError), FaultTimeout or FaultCancelled (the run's context ended, even
	// if the command then exited), or FaultTransport for any other error of the runner.
	Fault Fault
	Err   error
}

// Run runs c with f (platform.RunCommand when f is nil).
func (f RunFunc) Run(ctx context.Context, c Command) Ran {
	if f == nil {
		f = platform.RunCommand
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	start := time.Now()
	res, err := f(ctx, platform.RunSpec{Argv: c.Argv, Env: c.Env, Dir: c.Dir, Stdin: c.Stdin,
		MaxOutput: c.MaxOutput, StopGrace: c.StopGrace})
	r := Ran{Exit: res.Status, Stdout: res.Stdout, Stderr: res.Stderr, Elapsed: time.Since(start), Err: err}
	var se *platform.SpawnError
	switch {
	case errors.As(err, &se):
		r.Fault = FaultStart
	case ctx.Err() != nil:
		r.Fault = ctxFault(ctx, FaultCancelled)
	case err != nil:
		r.Fault = FaultTransport
	}
	return r
}

// Environ is the environment of a command: base as a child of schedd gets it (nil:
// os.Environ()), then the KEY=VALUE pairs of set, which override it.
func Environ(base []string, set ...string) []string {
	m := make(map[string]string, len(set))
	for _, kv := range set {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	if base == nil {
		base = os.Environ()
	}
	return platform.ChildEnv(base, m)
}
