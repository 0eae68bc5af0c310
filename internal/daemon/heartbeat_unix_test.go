//go:build unix

package daemon

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestTargetRunner runs real exec targets: the pulse on stdin, the SCHEDD_* variables on
// top of the daemon's environment (minus its service manager's), the exit code as is, and
// a signal or the timeout as an error.
func TestTargetRunner(t *testing.T) {
	run := targetRunner([]string{"PATH=/usr/bin:/bin", "KEEP=1", "NOTIFY_SOCKET=/run/x", "SCHEDD_REASON=stale"})
	ctx := t.Context()
	env := []string{"SCHEDD_AGENT_ID=main", "SCHEDD_REASON=manual"}
	code, out, err := run(ctx, []string{"/bin/sh", "-c", `cat; echo " $SCHEDD_AGENT_ID $SCHEDD_REASON $KEEP ${NOTIFY_SOCKET:-unset}"; exit 75`}, env, []byte(`{"agent_id":"main"}`))
	if err != nil || code != 75 || string(out) != `{"agent_id":"main"} main manual 1 unset`+"\n" {
		t.Fatalf("run = %d, %q, %v", code, out, err)
	}
	if _, _, err := run(ctx, []string{"/bin/sh", "-c", "kill -9 $$"}, nil, nil); err == nil || !strings.Contains(err.Error(), "SIGKILL") {
		t.Errorf("killed target: %v, want an error naming SIGKILL", err)
	}
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, _, err := run(tctx, []string{"/bin/sh", "-c", "sleep 10"}, nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hung target: %v, want the deadline", err)
	}
	if _, _, err := run(ctx, []string{"/nonexistent/target"}, nil, nil); err == nil {
		t.Error("a missing command ran")
	}
}
