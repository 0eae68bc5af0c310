package respawn

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/platform"
)

// TestLongDrain_RCHILD11 is R-CHILD-11: a gateway that needs 40 s to drain, within a 30 s
// stop timeout it extends by 20 s, is never killed: it gets SIGTERM only, its exit is
// accepted as a stop, and schedd's own manager is asked for the time left at the start of
// the stop and again at the extension.
func TestLongDrain_RCHILD11(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		fs.ignoreTerm = true
		var waits []time.Duration
		h := start(t, testConfig(), fs, OnStopWait(func(d time.Duration) { waits = append(waits, d) }))
		p := fs.next(t)
		h.cancel()
		synctest.Wait()
		time.Sleep(25 * time.Second)
		h.sup.HandleNotify(context.Background(), platform.NotifyMessage{PID: p.pid,
			Fields: map[string]string{"EXTEND_TIMEOUT_USEC": "20000000", "STATUS": "draining"}})
		synctest.Wait()
		time.Sleep(15 * time.Second) // 40 s after SIGTERM: past the first timeout, inside the extension
		synctest.Wait()
		if sigs := p.sigs(); len(sigs) != 1 || sigs[0].sig != syscall.SIGTERM {
			t.Fatalf("signals %v during a drain within the timeout, want SIGTERM only", sigs)
		}
		p.exitCode(0)
		if err := <-h.done; err != nil {
			t.Fatal(err)
		}
		h.done <- nil // for the cleanup
		st := h.sup.Status()
		if st.LastExit == nil || st.LastExit.Reason != api.ExitStop || st.StatusText != "draining" {
			t.Fatalf("status %+v last_exit %+v, want an accepted stop", st, st.LastExit)
		}
		want := []time.Duration{30*time.Second + groupCleanupTimeout, 20*time.Second + groupCleanupTimeout}
		if !slices.Equal(waits, want) {
			t.Fatalf("asked the service manager for %v, want %v", waits, want)
		}
	})
}
