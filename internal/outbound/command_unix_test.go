//go:build unix

package outbound

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestRunRealCommand runs real commands as exec targets and sinks are run: stdin fed, the
// SCHEDD_* variables on top of the daemon's environment (minus its service manager's), the
// exit code as is, a signal named, the timeout and a missing command told apart.
func TestRunRealCommand(t *testing.T) {
	environ := []string{"PATH=/usr/bin:/bin", "KEEP=1", "NOTIFY_SOCKET=/run/x", "SCHEDD_REASON=stale"}
	var run RunFunc // platform.RunCommand
	ctx := t.Context()
	r := run.Run(ctx, Command{
		Argv:  []string{"/bin/sh", "-c", `cat; echo " $SCHEDD_AGENT_ID $SCHEDD_REASON $KEEP ${NOTIFY_SOCKET:-unset}"; exit 75`},
		Env:   Environ(environ, "SCHEDD_AGENT_ID=main", "SCHEDD_REASON=manual"),
		Stdin: []byte(`{"agent_id":"main"}`),
	})
	if r.Err != nil || !r.Exit.Exited || r.Exit.Code != 75 || string(r.Stdout) != `{"agent_id":"main"} main manual 1 unset`+"\n" {
		t.Fatalf("run = %+v, %q, %v", r.Exit, r.Stdout, r.Err)
	}
	if r := run.Run(ctx, Command{Argv: []string{"/bin/sh", "-c", "kill -9 $$"}, Env: Environ(environ)}); r.Err != nil ||
		r.Exit.Exited || !strings.Contains(r.Exit.String(), "SIGKILL") || r.Verdict().Class != Transient {
		t.Errorf("killed command: %+v, %v, want an end naming SIGKILL", r.Exit, r.Err)
	}
	r = run.Run(ctx, Command{Argv: []string{"/bin/sh", "-c", "sleep 10"}, Env: Environ(environ), Timeout: 100 * time.Millisecond})
	if r.Fault != FaultTimeout || !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Errorf("hung command: %v, %v, want the deadline", r.Fault, r.Err)
	}
	if r := run.Run(ctx, Command{Argv: []string{"/nonexistent/target"}}); r.Fault != FaultStart || r.Err == nil {
		t.Errorf("a missing command ran: %+v", r)
	}
}
