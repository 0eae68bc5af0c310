package cron

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/schedd/schedd/internal/outbound"
)

// Exec runs a command in its own process group (Windows: its own Job). On a timeout or a
// cancel the group gets SIGTERM, then SIGKILL after Grace, as the gateway is stopped; on
// Linux it also dies with schedd (parent-death signal), so a lost task is never still
// running when it is retried.
//
// Exit 0 succeeds. Exit 75 (EX_TEMPFAIL) and death by a signal are transient; any other exit
// code, and a command that cannot be started, are permanent. The command sees
// SCHEDD_CRON_JOB, SCHEDD_CRON_TASK_ID, SCHEDD_CRON_KIND, SCHEDD_CRON_ATTEMPT,
// SCHEDD_CRON_RUN_KEY and SCHEDD_CRON_SLOT (RFC 3339, empty for a manual run).
type Exec struct {
	Command []string
	Env     map[string]string
	Dir     string
	Timeout time.Duration // 0: the job's
	Grace   time.Duration // 0: DefaultGrace
}

// DefaultGrace is how long an exec action has after SIGTERM before SIGKILL.
const DefaultGrace = 10 * time.Second

// ExitTransient is the exit code that asks for a retry (EX_TEMPFAIL).
const ExitTransient = outbound.ExitTempFail

// Kind is "exec".
func (*Exec) Kind() string { return "exec" }

// Check needs a command.
func (a *Exec) Check(*Deps) error {
	if len(a.Command) == 0 || a.Command[0] == "" {
		return errors.New("empty command")
	}
	if a.Timeout < 0 || a.Grace < 0 {
		return errors.New("negative timeout or grace")
	}
	return nil
}

// Run runs the command to completion.
func (a *Exec) Run(ctx context.Context, d *Deps, r RunInfo) (Result, error) {
	slot := ""
	if !r.Slot.IsZero() {
		slot = r.Slot.UTC().Format(time.RFC3339Nano)
	}
	env := make([]string, 0, len(a.Env)+6)
	for k, v := range a.Env {
		env = append(env, k+"="+v)
	}
	env = append(env,
		"SCHEDD_CRON_JOB="+r.Job,
		"SCHEDD_CRON_TASK_ID="+strconv.FormatInt(r.TaskID, 10),
		"SCHEDD_CRON_KIND="+string(r.Kind),
		"SCHEDD_CRON_ATTEMPT="+strconv.Itoa(r.Attempt),
		"SCHEDD_CRON_RUN_KEY="+r.RunKey,
		"SCHEDD_CRON_SLOT="+slot,
	)
	grace := a.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	name := a.Command[0]
	ran := d.RunCommand.Run(ctx, outbound.Command{
		Argv: a.Command, Env: outbound.Environ(d.Environ, env...), Dir: a.Dir,
		MaxOutput: MaxOutput, StopGrace: grace,
	})
	out := Result{Output: ran.Stdout}
	switch ran.Fault {
	case outbound.FaultStart:
		return out, PermanentError(fmt.Errorf("exec %s: %w", name, ran.Err))
	case outbound.FaultTimeout, outbound.FaultCancelled:
		// Stopped by the timeout or a cancel, even if the command then exited 0.
		return out, fmt.Errorf("exec %s: stopped (%s): %w", name, ran.Exit, context.Cause(ctx))
	case outbound.FaultTransport:
		return out, TransientError(fmt.Errorf("exec %s: %w", name, ran.Err))
	}
	st := ran.Exit
	if st.Exited {
		code := st.Code
		out.ExitCode = &code
	} else {
		out.Signal = st.SignalName
	}
	switch outbound.ExitVerdict(st).Class {
	case outbound.Success:
		return out, nil
	case outbound.Permanent:
		return out, PermanentError(fmt.Errorf("exec %s: %s%s", name, st, outbound.Tail(ran.Stderr, stderrTail)))
	}
	return out, TransientError(fmt.Errorf("exec %s: %s%s", name, st, outbound.Tail(ran.Stderr, stderrTail)))
}

// stderrTail is how much of the end of a command's error output its task's error quotes.
const stderrTail = 512
