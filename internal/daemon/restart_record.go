package daemon

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/restart"
)

// A restart in progress is written to restart.json in the state dir and removed when it
// ends. A schedd that dies in the middle (the old gateway stopped or stopping, the new one
// not started yet) leaves it behind; the next schedd starts a gateway anyway, so it
// completes that restart with its first start and records the outcome under the original
// reasons (R-SUP-04). A restart that was only pending needs nothing: the fresh start
// serves it as well.
const restartRecordFile = "restart.json"

// restartRecord is what restart.json holds: the restart's last reasons and their sources
// (restart.MaxReasons at most), and how many requests it serves.
type restartRecord struct {
	Reasons     []string            `json:"reasons"`
	Sources     []api.RestartSource `json:"sources"`
	Requests    int                 `json:"requests"`
	BeganAt     time.Time           `json:"began_at"`
	PreviousPID int                 `json:"previous_pid"`
}

func (d *Daemon) restartRecordPath() string {
	return filepath.Join(d.opts.StateDir, restartRecordFile)
}

// recordRestart writes the restart that begins now.
func (d *Daemon) recordRestart(p api.RestartPending) {
	b, err := json.Marshal(restartRecord{Reasons: p.Reasons, Sources: p.Sources, Requests: p.Requests,
		BeganAt: time.Now(), PreviousPID: d.sup.Status().PID})
	path := d.restartRecordPath()
	if err == nil {
		err = os.WriteFile(path+".tmp", b, 0o600)
	}
	if err == nil {
		err = os.Rename(path+".tmp", path)
	}
	if err != nil {
		d.log.Warn("could not record the restart in progress", zap.String("file", path), zap.Error(err))
	}
}

// restartEnds removes the record of a restart that ended (the coordinator's OnEnd).
func (d *Daemon) restartEnds(api.RestartResult) { d.forgetRestart() }

func (d *Daemon) forgetRestart() {
	if err := os.Remove(d.restartRecordPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.log.Warn("could not remove the restart record", zap.Error(err))
	}
}

// loadInterruptedRestart reads the restart an earlier schedd left unfinished, if any.
func (d *Daemon) loadInterruptedRestart() {
	b, err := os.ReadFile(d.restartRecordPath())
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var rec restartRecord
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err != nil {
		d.log.Warn("unreadable restart record; ignoring it", zap.String("file", d.restartRecordPath()), zap.Error(err))
		d.forgetRestart()
		return
	}
	// An older schedd kept every reason: bound them as a restart does.
	if len(rec.Sources) > restart.MaxReasons {
		rec.Sources = rec.Sources[len(rec.Sources)-restart.MaxReasons:]
	}
	rec.Reasons = restart.BoundReasons(rec.Reasons)
	rec.Requests = max(rec.Requests, len(rec.Reasons))
	d.log.Warn("schedd died during a restart of the gateway; the gateway it starts now completes it",
		zap.Strings("reasons", rec.Reasons), zap.Int("requests", rec.Requests), zap.Time("began_at", rec.BeganAt), zap.Int("previous_pid", rec.PreviousPID))
	d.interrupted.Store(&rec)
}

// completeInterrupted records the interrupted restart's outcome at the first start that
// ends (ready, or failed into backoff). Called from the supervisor's state changes.
func (d *Daemon) completeInterrupted(st api.Gateway) {
	var ok bool
	switch st.State {
	case api.GatewayReady:
		ok = true
	case api.GatewayBackoff, api.GatewayCrashLooping, api.GatewayFailed:
	default:
		return
	}
	rec := d.interrupted.Swap(nil)
	if rec == nil {
		return
	}
	res := api.RestartResult{OK: ok, PID: st.PID, PreviousPID: rec.PreviousPID,
		Reason: restart.JoinReasons(rec.Reasons, rec.Requests), Reasons: rec.Reasons, Sources: rec.Sources,
		Requests: rec.Requests, Mode: restart.ModeRecovered, Method: string(restart.MethodRespawn),
		At: rec.BeganAt, DurationMs: time.Since(rec.BeganAt).Milliseconds()}
	if !ok {
		res.PID = 0
		res.Error = "the gateway failed to start after schedd came back"
		if st.LastExit != nil {
			res.Error += " (" + string(st.LastExit.Reason) + ")"
		}
	}
	d.coord.Recovered(res)
	d.forgetRestart()
}
