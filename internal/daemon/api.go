package daemon

import (
	"net/http"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/restart"
	"github.com/schedd/schedd/internal/server"
)

// routes adds the endpoints beyond status to the control API.
func (d *Daemon) routes(srv *server.Server) {
	srv.Handle("POST /v1/stop", d.apiStop)
	srv.HandleLong("POST /v1/restart", d.apiRestart)
	srv.HandleLong("GET /v1/logs", d.apiLogs)
}

// apiStop is `schedd stop`: the same as SIGTERM.
func (d *Daemon) apiStop(w http.ResponseWriter, r *http.Request) {
	select {
	case d.stopc <- "stop requested through the control API":
	default: // a stop is already on its way
	}
	server.WriteJSON(w, http.StatusAccepted, api.StopReply{Stopping: true})
}

func (d *Daemon) apiRestart(w http.ResponseWriter, r *http.Request) {
	var req api.RestartRequest
	if !server.DecodeJSON(w, r, &req) {
		return
	}
	if req.Daemon {
		res, err := d.RestartDaemon(r.Context())
		if err != nil {
			server.WriteError(w, http.StatusConflict, api.CodeConflict, err.Error())
			return
		}
		server.WriteJSON(w, http.StatusAccepted, api.RestartReply{Daemon: &res})
		return
	}
	rr := restart.Request{Reason: req.Reason, Source: api.SourceAPI, Now: req.Now}
	if req.Source == string(api.SourceCLI) {
		rr.Source = api.SourceCLI
	}
	if req.MaxWait != "" {
		mw, err := time.ParseDuration(req.MaxWait)
		if err != nil || mw <= 0 {
			server.WriteError(w, http.StatusBadRequest, api.CodeBadRequest, "max_wait: want a positive Go duration like 30s or 5m, got "+req.MaxWait)
			return
		}
		rr.MaxWait = mw
	}
	if req.Delay != "" {
		dl, err := time.ParseDuration(req.Delay)
		if err != nil || dl < 0 || dl > restart.MaxDelay {
			server.WriteError(w, http.StatusBadRequest, api.CodeBadRequest, "delay: want a Go duration from 0s to 60s, got "+req.Delay)
			return
		}
		rr.Delay = &dl
	}
	switch m := restart.Method(req.Method); m {
	case "", restart.MethodRespawn, restart.MethodSignal:
		rr.Method = m
	default:
		server.WriteError(w, http.StatusBadRequest, api.CodeBadRequest, "method: want respawn or signal, got "+req.Method)
		return
	}
	tk := d.coord.Request(rr)
	reply := api.RestartReply{Coalesced: tk.Coalesced, Pending: &tk.Pending}
	if !req.Wait {
		server.WriteJSON(w, http.StatusAccepted, reply)
		return
	}
	res, err := tk.Wait(r.Context())
	if err != nil {
		server.WriteError(w, http.StatusServiceUnavailable, api.CodeUnavailable, err.Error())
		return
	}
	reply.Result = &res
	server.WriteJSON(w, http.StatusOK, reply)
}
