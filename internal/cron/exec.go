package cron

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/schedd/schedd/internal/platform"
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
const ExitTransient = 75

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
	set := maps.Clone(a.Env)
	if set == nil {
		set = map[string]string{}
	}
	slot := ""
	if !r.Slot.IsZero() {
		slot = r.Slot.UTC().Format(time.RFC3339Nano)
	}
	set["SCHEDD_CRON_JOB"] = r.Job
	set["SCHEDD_CRON_TASK_ID"] = strconv.FormatInt(r.TaskID, 10)
	set["SCHEDD_CRON_KIND"] = string(r.Kind)
	set["SCHEDD_CRON_ATTEMPT"] = strconv.Itoa(r.Attempt)
	set["SCHEDD_CRON_RUN_KEY"] = r.RunKey
	set["SCHEDD_CRON_SLOT"] = slot
	grace := a.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	name := a.Command[0]
	res, err := d.runCommand()(ctx, platform.RunSpec{
		Argv: a.Command, Env: platform.ChildEnv(d.environ(), set), Dir: a.Dir,
		MaxOutput: MaxOutput, StopGrace: grace,
	})
	out := Result{Output: res.Stdout}
	var se *platform.SpawnError
	switch {
	case errors.As(err, &se):
		return out, PermanentError(fmt.Errorf("exec %s: %w", name, err))
	case ctx.Err() != nil:
		// Stopped by the timeout or a cancel, even if the command then exited 0.
		return out, fmt.Errorf("exec %s: stopped (%s): %w", name, res.Status, context.Cause(ctx))
	case err != nil:
		return out, TransientError(fmt.Errorf("exec %s: %w", name, err))
	}
	st := res.Status
	if st.Exited {
		code := st.Code
		out.ExitCode = &code
	} else {
		out.Signal = st.SignalName
	}
	switch {
	case st.Exited && st.Code == 0:
		return out, nil
	case st.Exited && st.Code == ExitTransient:
		return out, TransientError(fmt.Errorf("exec %s: %s%s", name, st, stderrTail(res.Stderr)))
	case st.Exited:
		return out, PermanentError(fmt.Errorf("exec %s: %s%s", name, st, stderrTail(res.Stderr)))
	}
	return out, TransientError(fmt.Errorf("exec %s: %s%s", name, st, stderrTail(res.Stderr)))
}

// stderrTail is the end of a command's error output, on one line, for the task's error.
func stderrTail(b []byte) string {
	const n = 512
	if len(b) > n {
		b = b[len(b)-n:]
	}
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "")), " ")
	if s == "" {
		return ""
	}
	return ": " + s
}
