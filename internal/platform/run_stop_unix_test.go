//go:build unix

package platform

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cancelOnFile cancels ctx once path exists (it is written atomically), polling every 5 ms.
// The channel gets the instant of the cancel, or the zero time if ctx ended first.
func cancelOnFile(ctx context.Context, cancel context.CancelFunc, path string) <-chan time.Time {
	at := make(chan time.Time, 1)
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				at <- time.Time{}
				return
			case <-tick.C:
				if _, err := os.Stat(path); err == nil {
					at <- time.Now()
					cancel()
					return
				}
			}
		}
	}()
	return at
}

// runUntilPidfile runs script under sh with StopGrace grace and cancels ctx once the script
// has written its pid to $PIDFILE, which it does once its traps are set. It returns how long
// after the cancel the command ended, and the script's pid.
func runUntilPidfile(t *testing.T, script string, grace time.Duration) (RunResult, time.Duration, int) {
	t.Helper()
	pidfile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cancelled := cancelOnFile(ctx, cancel, pidfile)
	res, _ := RunCommand(ctx, RunSpec{
		Argv:      []string{"/bin/sh", "-c", script + `; while :; do sleep 0.05; done`},
		Env:       ChildEnv(os.Environ(), map[string]string{"PIDFILE": pidfile}),
		StopGrace: grace,
	})
	took := time.Since(<-cancelled)
	b, _ := os.ReadFile(pidfile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return res, took, pid
}

// writePid is the script's part that publishes its pid atomically.
const writePid = `echo $$ > "$PIDFILE.tmp"; mv "$PIDFILE.tmp" "$PIDFILE"`

// With StopGrace the end of ctx sends SIGTERM to the group first: a command that traps it
// cleans up and exits on its own, before the grace is over.
func TestRunCommandStopGraceTerm(t *testing.T) {
	res, took, _ := runUntilPidfile(t, `trap 'echo got-term; exit 3' TERM; `+writePid, 10*time.Second)
	if !strings.Contains(string(res.Stdout), "got-term") || res.Status != (ExitStatus{Exited: true, Code: 3}) {
		t.Fatalf("stdout %q, status %v: want the SIGTERM trap's exit 3", res.Stdout, res.Status)
	}
	if took > 5*time.Second {
		t.Errorf("took %v: the trap should end the command long before the grace", took)
	}
}

// A group that ignores SIGTERM is SIGKILLed once the grace is over, never left running.
func TestRunCommandStopGraceKill(t *testing.T) {
	const grace = 300 * time.Millisecond
	res, took, pid := runUntilPidfile(t, `trap '' TERM; `+writePid, grace)
	if res.Status.SignalName != "SIGKILL" {
		t.Fatalf("status %v, want SIGKILL after the grace", res.Status)
	}
	if took < grace {
		t.Errorf("killed after %v, before the %v grace", took, grace)
	}
	if took > grace+5*time.Second {
		t.Errorf("killed only after %v", took)
	}
	waitGone(t, pid)
}
