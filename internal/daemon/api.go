package daemon

import (
	"net/http"
	"time"

	"github.com/schedd/schedd/internal/control"
	"github.com/schedd/schedd/internal/restart"

	"github.com/schedd/schedd/internal/jsonenc"
)

// routes adds the endpoints beyond status to the control API.
func (d *Daemon) routes(srv *control.Server) {
	srv.Handle("POST /v1/stop", d.apiStop)
	srv.HandleLong("POST /v1/restart", d.apiRestart)
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
	Delay   string `json:"delay,omitempty"`    // override restart.delay (Go duration, 0s..60s)
	Source  string `json:"source,omitempty"`   // "cli" from `schedd restart`; default "api"
	Daemon  bool   `json:"daemon,omitempty"`   // replace schedd itself with a fresh process
}

// AppendJSON appends r as encoding/json encodes it: `schedd restart` sends it without
// reflection, whose first use costs a command more start-up than the rest of its request.
func (r RestartRequest) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	first := true
	field := func(name string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
	}
	str := func(name, v string) {
		if v != "" {
			field(name)
			b = jsonenc.AppendString(b, v)
		}
	}
	flag := func(name string, v bool) {
		if v {
			field(name)
			b = append(b, "true"...)
		}
	}
	str("reason", r.Reason)
	flag("now", r.Now)
	flag("wait", r.Wait)
	str("max_wait", r.MaxWait)
	str("delay", r.Delay)
	str("source", r.Source)
	flag("daemon", r.Daemon)
	return append(b, '}')
}

// RestartReply is the reply of POST /v1/restart. Without wait it is 202 with the pending
// restart the request joined; with wait it is 200 with the result too (whose ok says
// whether the restart worked).
type RestartReply struct {
	Coalesced bool               `json:"coalesced"`
	Pending   *restart.Pending   `json:"pending,omitempty"`
	Result    *restart.Result    `json:"result,omitempty"`
	Daemon    *SelfRespawnResult `json:"daemon,omitempty"`
}

func (d *Daemon) apiRestart(w http.ResponseWriter, r *http.Request) {
	var req RestartRequest
	if !control.DecodeJSON(w, r, &req) {
		return
	}
	if req.Daemon {
		res, err := d.RestartDaemon(r.Context())
		if err != nil {
			control.WriteError(w, http.StatusConflict, control.CodeConflict, err.Error())
			return
		}
		control.WriteJSON(w, http.StatusAccepted, RestartReply{Daemon: &res})
		return
	}
	rr := restart.Request{Reason: req.Reason, Source: restart.SourceAPI, Now: req.Now}
	if req.Source == string(restart.SourceCLI) {
		rr.Source = restart.SourceCLI
	}
	if req.MaxWait != "" {
		mw, err := time.ParseDuration(req.MaxWait)
		if err != nil || mw <= 0 {
			control.WriteError(w, http.StatusBadRequest, control.CodeBadRequest, "max_wait: want a positive Go duration like 30s or 5m, got "+req.MaxWait)
			return
		}
		rr.MaxWait = mw
	}
	if req.Delay != "" {
		dl, err := time.ParseDuration(req.Delay)
		if err != nil || dl < 0 || dl > restart.MaxDelay {
			control.WriteError(w, http.StatusBadRequest, control.CodeBadRequest, "delay: want a Go duration from 0s to 60s, got "+req.Delay)
			return
		}
		rr.Delay = &dl
	}
	tk := d.coord.Request(rr)
	reply := RestartReply{Coalesced: tk.Coalesced, Pending: &tk.Pending}
	if !req.Wait {
		control.WriteJSON(w, http.StatusAccepted, reply)
		return
	}
	res, err := tk.Wait(r.Context())
	if err != nil {
		control.WriteError(w, http.StatusServiceUnavailable, control.CodeUnavailable, err.Error())
		return
	}
	reply.Result = &res
	control.WriteJSON(w, http.StatusOK, reply)
}
