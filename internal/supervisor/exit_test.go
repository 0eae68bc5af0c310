package supervisor

import (
	"fmt"
	"testing"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/platform"
)

// TestExitClassification is R-CHILD-19: every exit code 0..255 and every fatal signal is
// classified by the table: a code is an `exit` with that code and no signal, a signal is a
// `signal` with its name and no code, and all of them count as failures.
func TestExitClassification(t *testing.T) {
	for code := 0; code <= 255; code++ {
		e := describeExit(platform.ExitStatus{Exited: true, Code: code}, 42)
		if e.Reason != api.ExitExited || e.Code == nil || *e.Code != code || e.Signal != "" || e.PID != 42 || !failure(e) {
			t.Fatalf("code %d: %+v", code, e)
		}
	}
	for sig := 1; sig <= 64; sig++ {
		name := fmt.Sprintf("SIG%d", sig)
		e := describeExit(platform.ExitStatus{Signaled: true, Signal: sig, SignalName: name, Code: -1}, 42)
		if e.Reason != api.ExitSignal || e.Code != nil || e.Signal != name || !failure(e) {
			t.Fatalf("signal %d: %+v", sig, e)
		}
		if e := describeExit(platform.ExitStatus{Signaled: true, Signal: sig, Code: -1}, 42); e.Signal != fmt.Sprintf("signal %d", sig) {
			t.Fatalf("unnamed signal %d: %+v", sig, e)
		}
	}
	for _, r := range []api.ExitReason{api.ExitRestart, api.ExitStop, api.ExitKilledAfterTimeout} {
		if failure(api.Exit{Reason: r}) {
			t.Errorf("%s counts as a failure", r)
		}
	}
	for _, r := range []api.ExitReason{api.ExitSpawnFailed, api.ExitReadinessTimeout, api.ExitLivenessTimeout} {
		if !failure(api.Exit{Reason: r}) {
			t.Errorf("%s does not count as a failure", r)
		}
	}
}
