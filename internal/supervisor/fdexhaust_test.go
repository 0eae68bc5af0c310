//go:build unix

package supervisor

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/testgateway"
)

// openFDs counts the descriptors the test process has open.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/dev/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents) - 1 // the directory's own
}

// R-SUP-09: schedd runs out of file descriptors while the gateway runs, and the gateway is
// killed. It is still reaped and its exit recorded; the restart cannot spawn (EMFILE),
// which is logged with the errno and retried on the backoff, not in a tight loop; once
// descriptors are free again a new gateway runs, and the failed spawns leaked none.
func TestFDExhaustion_RSUP09(t *testing.T) {
	h := runReal(t, realConfig(t), false)
	first := h.waitFor("ready", func(st api.Gateway) bool { return st.State == api.GatewayReady })
	before := openFDs(t)

	fds := testgateway.ExhaustFDs(t)
	if err := syscall.Kill(first.PID, syscall.SIGKILL); err != nil {
		fds.Release()
		t.Fatal(err)
	}
	h.waitFor("a failed spawn", func(st api.Gateway) bool {
		return st.LastExit != nil && st.LastExit.Reason == api.ExitSpawnFailed
	})
	time.Sleep(time.Second) // out of descriptors for a second
	killed := h.logs.FilterMessage("gateway was killed by a signal").Len()
	spawns := h.logs.FilterMessage("gateway could not be started").All()
	fds.Release()

	if killed != 1 {
		t.Errorf("the killed gateway's exit was logged %d times, want once", killed)
	}
	if err := syscall.Kill(first.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the killed gateway %d was not reaped: kill(0) = %v", first.PID, err)
	}
	// Backoff from 20 ms to 200 ms: about eight spawns in a second; a tight loop makes
	// thousands.
	if n := len(spawns); n < 2 || n > 20 {
		t.Errorf("%d spawn attempts in a second out of descriptors, want a handful", n)
	}
	for _, e := range spawns {
		if err := e.ContextMap()["error"]; !strings.Contains(err.(string), "too many open files") {
			t.Errorf("spawn failure logged as %v, want EMFILE", err)
			break
		}
	}
	next := h.waitFor("a new gateway", func(st api.Gateway) bool {
		return st.State == api.GatewayReady && st.PID != first.PID
	})
	if after := openFDs(t); after > before+2 {
		t.Errorf("%d descriptors open with the new gateway %d, %d with the first: the failed spawns leaked", after, next.PID, before)
	}
}
