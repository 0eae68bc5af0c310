package supervisor

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/platform"
)

// TestNoRestartExitCode: an exit with a no-restart code leaves the gateway failed, with
// the code and its last 20 output lines in the status, and nothing starts it again (no
// timer either) until a restart request or a Reconfigure; a Reconfigure made while it
// still ran does not count. Other codes are restarted as ever.
func TestNoRestartExitCode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		cfg := testConfig()
		cfg.NoRestartExitCodes = []int{78}
		h := start(t, cfg, fs)
		p := fs.next(t)
		cmd := <-fs.cmds
		var want []string
		for i := range 25 {
			line := fmt.Sprintf("line %d", i)
			cmd.Output(platform.Stderr, []byte(line), 0)
			if i >= 5 {
				want = append(want, line)
			}
		}
		if err := h.sup.Reconfigure(cfg); err != nil { // before the failure: no wake-up
			t.Fatal(err)
		}
		p.exitCode(78)
		synctest.Wait()
		st := h.sup.Status()
		if st.State != api.GatewayFailed || st.PID != 0 || !st.NextStartAt.IsZero() || st.LastExit == nil ||
			st.LastExit.Code == nil || *st.LastExit.Code != 78 || !slices.Equal(st.LastExit.Output, want) {
			t.Fatalf("status %+v last_exit %+v", st, st.LastExit)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		fs.none(t)

		res, err := h.sup.Restart(context.Background())
		p2 := fs.next(t)
		if err != nil || !res.OK || res.PID != p2.pid || res.PreviousPID != p.pid {
			t.Fatalf("restart of a failed gateway: %+v %v", res, err)
		}
		<-fs.cmds
		p2.exitCode(78)
		synctest.Wait()
		if s := h.state(); s != api.GatewayFailed {
			t.Fatalf("state %s after the second exit 78", s)
		}
		if err := h.sup.Reconfigure(cfg); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		p3 := fs.next(t)
		<-fs.cmds
		if s := h.state(); s != api.GatewayReady {
			t.Fatalf("state %s after a reload of a failed gateway", s)
		}
		p3.exitCode(1) // not a no-restart code: restarted at once
		synctest.Wait()
		fs.next(t)
		if st := h.sup.Status(); st.LastExit.Output != nil {
			t.Fatalf("an ordinary exit kept output lines: %+v", st.LastExit)
		}
	})
}
