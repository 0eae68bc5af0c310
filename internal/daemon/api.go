package daemon

import (
	"context"
	"net/http"
	"time"

	"github.com/schedd/schedd/internal/control"
)

// routes adds the endpoints beyond status to the control API.
func (d *Daemon) routes(srv *control.Server) {
	srv.Handle("POST /v1/stop", d.apiStop)
	srv.Handle("POST /v1/restart", d.apiRestart)
}

// apiStop is `schedd stop`: the same as SIGTERM.
func (d *Daemon) apiStop(w http.ResponseWriter, r *http.Request) {
	select {
	case d.stopc <- "stop requested through the control API":
	default: // a stop is already on its way
	}
	control.WriteJSON(w, http.StatusAccepted, map[string]bool{"stopping": true})
}

// RestartRequest is the body of POST /v1/restart.
type RestartRequest struct {
	Reason  string `json:"reason,omitempty"`
	Now     bool   `json:"now,omitempty"`      // skip the delay, the cooldown and the idle deferral
	Wait    bool   `json:"wait,omitempty"`     // reply only when the restart has completed
	MaxWait string `json:"max_wait,omitempty"` // override restart.defer_until_idle.max_wait (Go duration)
	Daemon  bool   `json:"daemon,omitempty"`   // replace schedd itself with a fresh process
}

func (d *Daemon) apiRestart(w http.ResponseWriter, r *http.Request) {
	var req RestartRequest
	if !control.DecodeJSON(w, r, &req) {
		return
	}
	if req.MaxWait != "" {
		if _, err := time.ParseDuration(req.MaxWait); err != nil {
			control.WriteError(w, http.StatusBadRequest, control.CodeBadRequest, "max_wait: "+err.Error())
			return
		}
	}
	if req.Daemon {
		res, err := d.RestartDaemon(r.Context())
		if err != nil {
			control.WriteError(w, http.StatusConflict, control.CodeConflict, err.Error())
			return
		}
		control.WriteJSON(w, http.StatusAccepted, map[string]any{"daemon": res})
		return
	}
	d.apiRestartGateway(w, r, req)
}

// apiRestartGateway restarts the gateway at once and reports the result.
func (d *Daemon) apiRestartGateway(w http.ResponseWriter, r *http.Request, req RestartRequest) {
	ctx := r.Context()
	if !req.Wait {
		go d.restart(context.WithoutCancel(ctx), req.Reason)
		control.WriteJSON(w, http.StatusAccepted, map[string]bool{"accepted": true})
		return
	}
	res, err := d.sup.Restart(ctx)
	if err != nil {
		control.WriteError(w, http.StatusServiceUnavailable, control.CodeUnavailable, err.Error())
		return
	}
	control.WriteJSON(w, http.StatusOK, map[string]any{"result": res})
}
