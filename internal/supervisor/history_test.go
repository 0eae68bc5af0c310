package supervisor

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// TestHistory: the status keeps the gateway's last starts, each with its pid, when it was
// ready and how it ended (without the output lines), at most api.MaxGatewayHistory of
// them, oldest first; a snapshot taken earlier does not change afterwards.
func TestHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStarter()
		h := start(t, testConfig(), fs)
		p := fs.next(t)
		st := h.sup.Status()
		if len(st.History) != 1 || st.History[0].PID != p.pid || st.History[0].ReadyAt == nil || st.History[0].Exit != nil ||
			!st.History[0].StartedAt.Equal(h.t0) {
			t.Fatalf("history of a running gateway = %+v, want one ready run of pid %d", st.History, p.pid)
		}
		first := st
		pids := []int{p.pid}
		for range api.MaxGatewayHistory + 2 {
			p.exitCode(3)
			synctest.Wait()
			if next := h.sup.Status().NextStartAt; !next.IsZero() {
				time.Sleep(time.Until(next))
				synctest.Wait()
			}
			p = fs.next(t)
			pids = append(pids, p.pid)
		}
		st = h.sup.Status()
		if len(st.History) != api.MaxGatewayHistory {
			t.Fatalf("%d runs kept, want %d", len(st.History), api.MaxGatewayHistory)
		}
		pids = pids[len(pids)-api.MaxGatewayHistory:]
		for i, r := range st.History {
			if r.PID != pids[i] {
				t.Errorf("run %d: pid %d, want %d", i, r.PID, pids[i])
			}
			if i > 0 && !r.StartedAt.After(st.History[i-1].StartedAt) {
				t.Errorf("run %d started at %v, not after the one before (%v)", i, r.StartedAt, st.History[i-1].StartedAt)
			}
			last := i == len(st.History)-1
			switch e := r.Exit; {
			case last && e != nil:
				t.Errorf("the running gateway has an exit: %+v", e)
			case !last && (e == nil || e.Reason != api.ExitExited || e.Code == nil || *e.Code != 3 || e.PID != r.PID):
				t.Errorf("run %d: exit %+v, want exit code 3 of pid %d", i, e, r.PID)
			}
		}
		if len(first.History) != 1 || first.History[0].Exit != nil {
			t.Errorf("an earlier snapshot changed: %+v", first.History)
		}
	})
}

// TestHistoryNoProcess: a start that spawned nothing is a run without a pid, ended with
// the reason; the exit's output lines stay in last_exit only.
func TestHistoryNoProcess(t *testing.T) {
	var st api.Gateway
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	step := func(f func(*api.Gateway)) {
		prev := st
		f(&st)
		trackHistory(prev, &st)
	}
	step(func(g *api.Gateway) { g.State, g.StartedAt = api.GatewayStarting, t0 })
	step(func(g *api.Gateway) {
		g.LastExit = &api.Exit{Reason: api.ExitSpawnFailed, At: t0, Error: "no such file", Output: []string{"x"}}
	})
	step(func(g *api.Gateway) { g.State = api.GatewayBackoff })
	if len(st.History) != 1 {
		t.Fatalf("history %+v, want one run", st.History)
	}
	r := st.History[0]
	if r.PID != 0 || r.ReadyAt != nil || r.Exit == nil || r.Exit.Reason != api.ExitSpawnFailed || r.Exit.Error != "no such file" || r.Exit.Output != nil {
		t.Errorf("run %+v (exit %+v), want spawn_failed without pid or output", r, r.Exit)
	}
	if len(st.LastExit.Output) != 1 {
		t.Errorf("last_exit lost its output: %+v", st.LastExit)
	}
}
