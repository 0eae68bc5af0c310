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

// runUntilPidfile runs script under sh with StopGrace grace and cancels ctx once the script
// has written its pid to $PIDFILE, which it does once its traps are set.
func runUntilPidfile(t *testing.T, script string, grace time.Duration) (RunResult, error, time.Duration, int) {
	t.Helper()
	pidfile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var cancelled time.Time
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if b, err := os.ReadFile(pidfile); err == nil && strings.HasSuffix(string(b), "\n") {
					cancelled = time.Now()
					cancel()
					return
				}
			}
		}
	}()
	res, err := RunCommand(ctx, RunSpec{
		Argv:      []string{"/bin/sh", "-c", script},
		Env:       ChildEnv(os.Environ(), map[string]string{"PIDFILE": pidfile}),
		StopGrace: grace,
	})
	b, _ := os.ReadFile(pidfile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return res, err, time.Since(cancelled), pid
}

// With StopGrace the end of ctx sends SIGTERM to the group first: a command that traps it
// cleans up and exits on its own, before the grace is over.
func TestRunCommandStopGraceTerm(t *testing.T) {
	script := `trap 'echo got-term; exit 3' TERM; echo $$ > "$PIDFILE"; while :; do sleep 0.05; done`
	res, _, took, _ := runUntilPidfile(t, script, 10*time.Second)
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
	script := `trap '' TERM; echo $$ > "$PIDFILE"; while :; do sleep 0.05; done`
	res, _, took, pid := runUntilPidfile(t, script, grace)
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
