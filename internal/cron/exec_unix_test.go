//go:build unix

package cron

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// runExec runs an exec action once, as a worker does, and returns the outcome.
func runExec(t *testing.T, a *Exec, timeout time.Duration) outcome {
	t.Helper()
	if err := a.Check(&Deps{}); err != nil {
		t.Fatal(err)
	}
	s := &Service{}
	info := RunInfo{TaskID: 9, Job: "j", Kind: api.KindScheduled, Slot: time.Date(2026, 3, 29, 2, 30, 0, 0, time.UTC),
		Attempt: 2, RunKey: "j@2026-03-29T02:30:00Z"}
	return s.runAction(context.Background(), a, info, timeout)
}

// Exit 0 succeeds with the output kept; 75 is transient; another code is permanent, with
// the end of stderr in the error; a missing binary is permanent.
func TestExecExitCodes(t *testing.T) {
	for _, tt := range []struct {
		code  string
		state api.TaskState
		class Class
	}{{"0", api.TaskSucceeded, Transient}, {"75", api.TaskFailed, Transient}, {"3", api.TaskFailed, Permanent}} {
		o := runExec(t, &Exec{Command: helperArgv("exit", tt.code), Env: helperVars}, time.Minute)
		if o.state != tt.state || o.class != tt.class || string(o.res.Output) != "out\n" ||
			o.res.ExitCode == nil || *o.res.ExitCode != atoi(tt.code) {
			t.Errorf("exit %s: %+v", tt.code, o)
		}
		if tt.code != "0" && !strings.HasSuffix(o.err, "exit status "+tt.code+": err") {
			t.Errorf("exit %s: error %q", tt.code, o.err)
		}
	}
	o := runExec(t, &Exec{Command: []string{"/nonexistent/cmd"}}, time.Minute)
	if o.state != api.TaskFailed || o.class != Permanent {
		t.Errorf("missing binary: %+v", o)
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// The command sees its task in SCHEDD_CRON_* and the action's env.
func TestExecEnv(t *testing.T) {
	env := map[string]string{"GREETING": "hi"}
	for k, v := range helperVars {
		env[k] = v
	}
	o := runExec(t, &Exec{Command: helperArgv("env", "GREETING", "SCHEDD_CRON_JOB", "SCHEDD_CRON_TASK_ID",
		"SCHEDD_CRON_KIND", "SCHEDD_CRON_ATTEMPT", "SCHEDD_CRON_RUN_KEY", "SCHEDD_CRON_SLOT"), Env: env}, time.Minute)
	want := "GREETING=hi\nSCHEDD_CRON_JOB=j\nSCHEDD_CRON_TASK_ID=9\nSCHEDD_CRON_KIND=scheduled\nSCHEDD_CRON_ATTEMPT=2\n" +
		"SCHEDD_CRON_RUN_KEY=j@2026-03-29T02:30:00Z\nSCHEDD_CRON_SLOT=2026-03-29T02:30:00Z\n"
	if o.state != api.TaskSucceeded || string(o.res.Output) != want {
		t.Fatalf("%+v\n%s", o, o.res.Output)
	}
}

// On a timeout the group gets SIGTERM first: a command that handles it ends in time and the
// task is timed out, not succeeded. One that ignores it is SIGKILLed after the grace.
func TestExecTimeoutStopsGracefully(t *testing.T) {
	o := runExec(t, &Exec{Command: helperArgv("trap-term"), Env: helperVars, Grace: 10 * time.Second}, 500*time.Millisecond)
	if o.state != api.TaskTimedOut || o.class != Transient || !strings.Contains(string(o.res.Output), "got SIGTERM") {
		t.Fatalf("trap-term: %+v %q", o, o.res.Output)
	}
	start := time.Now()
	o = runExec(t, &Exec{Command: helperArgv("ignore-term"), Env: helperVars, Grace: 300 * time.Millisecond}, 300*time.Millisecond)
	if o.state != api.TaskTimedOut || !strings.Contains(o.err, "SIGKILL") {
		t.Fatalf("ignore-term: %+v", o)
	}
	if d := time.Since(start); d < 600*time.Millisecond || d > 10*time.Second {
		t.Fatalf("ignore-term ended after %v, want the timeout plus the grace", d)
	}
}

// A cancelled run is stopped the same way and ends cancelled.
func TestExecCancel(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &Service{}
	a := &Exec{Command: helperArgv("trap-term"), Env: helperVars}
	go func() {
		time.Sleep(300 * time.Millisecond)
		cancel(errCancelled)
	}()
	o := s.runAction(ctx, a, RunInfo{Job: "j"}, time.Minute)
	if o.state != api.TaskCancelled || o.reason != api.ReasonRequested || !errors.Is(context.Cause(ctx), errCancelled) {
		t.Fatalf("%+v", o)
	}
}
