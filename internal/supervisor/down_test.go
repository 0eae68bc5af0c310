package supervisor

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/platform"
)

// TestStatusWhileDown_RINPUT12 is R-INPUT-12 in the supervisor: once the gateway's
// process has exited nothing in the status claims it runs. ready_since, the gateway's
// STATUS= text and its in-flight count are cleared at the exit; down_since is the exit,
// kept through a failed start without a process (port_in_use, spawn_failed) and cleared
// by the next process. With no process ever, it is when schedd first tried.
func TestStatusWhileDown_RINPUT12(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		cfg := testConfig()
		cfg.Readiness = Readiness{Notify: true, Timeout: time.Minute}
		cfg.Ports = []string{"127.0.0.1:18789"}
		var busy atomic.Bool
		h := start(t, cfg, fs, WithPortBusy(func(string) bool { return busy.Load() }))
		p := fs.next(t)
		h.sup.HandleNotify(t.Context(), platform.NotifyMessage{PID: p.pid,
			Fields: map[string]string{"READY": "1", "STATUS": "serving 3 chats", "X_SCHEDD_INFLIGHT": "2"}})
		h.sleepTo(2 * time.Minute) // a healthy run: the first crash restarts at once
		p.exitCode(1)
		synctest.Wait()
		q := fs.next(t)
		if st := h.sup.Status(); st.State != api.GatewayStarting || !st.DownSince.IsZero() || st.StatusText != "" || st.Inflight != nil || !st.ReadySince.IsZero() {
			t.Fatalf("a new process is starting: %+v", st)
		}
		h.sup.HandleNotify(t.Context(), platform.NotifyMessage{PID: q.pid, Fields: map[string]string{"READY": "1", "STATUS": "serving"}})
		synctest.Wait()
		q.exitCode(1) // a second failure in a row: backoff
		synctest.Wait()
		exited := time.Now()
		st := h.sup.Status()
		if st.State != api.GatewayBackoff || !st.ReadySince.IsZero() || st.StatusText != "" || st.Inflight != nil ||
			!st.DownSince.Equal(exited) {
			t.Fatalf("in backoff: %+v, want no ready_since, no status text, down since %v", st, exited)
		}
		// The next start fails without a process: still down since the exit.
		busy.Store(true)
		h.sleepTo(h.at() + 12*time.Second)
		if st := h.sup.Status(); st.LastExit.Reason != api.ExitPortInUse || !st.DownSince.Equal(exited) {
			t.Fatalf("after port_in_use: %+v last_exit %+v, want down since %v", st, st.LastExit, exited)
		}
		h.cancel()
		synctest.Wait()
		if st := h.sup.Status(); st.State != api.GatewayStopped || !st.DownSince.Equal(exited) {
			t.Fatalf("stopped: %+v, want down since %v", st, exited)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		fs.spawnErr = errFakeSpawn
		h := start(t, testConfig(), fs)
		if st := h.sup.Status(); st.State != api.GatewayBackoff || !st.DownSince.Equal(h.t0) {
			t.Fatalf("no process ever: %+v, want down since %v", st, h.t0)
		}
	})
}
