package supervisor

import (
	"slices"

	"github.com/schedd/schedd/internal/api"
)

// trackHistory keeps st.History in step with a change of the status from before to st: a
// new StartedAt is a new run, and the pid, the readiness and the exit that follow belong to
// the last one. Only the last api.MaxGatewayHistory runs are kept. A changed run is a new
// value in a new slice when the slice is shared with a snapshot, so snapshots stay as taken.
func trackHistory(before api.Gateway, st *api.Gateway) {
	h := st.History
	if !st.StartedAt.IsZero() && !st.StartedAt.Equal(before.StartedAt) {
		if len(h) >= api.MaxGatewayHistory {
			h = h[len(h)-api.MaxGatewayHistory+1:]
		}
		h = append(slices.Clip(h), api.GatewayRun{StartedAt: st.StartedAt})
	}
	if len(h) == 0 {
		return
	}
	run := h[len(h)-1]
	changed := false
	if run.Exit == nil {
		if st.PID != 0 && run.PID == 0 {
			run.PID, changed = st.PID, true
		}
		if !st.ReadySince.IsZero() && run.ReadyAt == nil {
			at := st.ReadySince
			run.ReadyAt, changed = &at, true
		}
		if st.LastExit != nil && st.LastExit != before.LastExit {
			e := *st.LastExit
			e.Output = nil
			run.Exit, changed = &e, true
		}
	}
	if changed {
		h = slices.Clone(h)
		h[len(h)-1] = run
	}
	st.History = h
}
