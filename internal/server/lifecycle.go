package server

import (
	"context"
	"net/http"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/restart"
)

// Lifecycle is what the stop and restart endpoints need of the daemon.
type Lifecycle interface {
	// Stop asks the daemon to stop, as SIGTERM does; a stop already on its way is enough.
	Stop(why string)
	// RestartGateway hands a restart of the gateway to the restart coordinator.
	RestartGateway(r restart.Request) restart.Ticket
	// RestartDaemon replaces schedd itself with a fresh process.
	RestartDaemon(ctx context.Context) (api.SelfRespawn, error)
}

// AddLifecycle adds POST /v1/stop and POST /v1/restart, served by l.
func (s *Server) AddLifecycle(l Lifecycle) {
	a := lifecycleAPI{l}
	s.Handle("POST /v1/stop", a.stop)
	s.HandleLong("POST /v1/restart", a.restart)
}

// lifecycleAPI serves the stop and restart endpoints.
type lifecycleAPI struct{ l Lifecycle }

// stop is `schedd stop`: the same as SIGTERM.
func (a lifecycleAPI) stop(w http.ResponseWriter, r *http.Request) {
	a.l.Stop("stop requested through the control API")
	WriteJSON(w, http.StatusAccepted, api.StopReply{Stopping: true})
}

func (a lifecycleAPI) restart(w http.ResponseWriter, r *http.Request) {
	var req api.RestartRequest
	if !DecodeJSON(w, r, &req) {
		return
	}
	if req.Daemon {
		res, err := a.l.RestartDaemon(r.Context())
		if err != nil {
			WriteError(w, http.StatusConflict, api.CodeConflict, err.Error())
			return
		}
		WriteJSON(w, http.StatusAccepted, api.RestartReply{Daemon: &res})
		return
	}
	rr := restart.Request{Reason: req.Reason, Source: api.SourceAPI, Now: req.Now}
	if req.Source == string(api.SourceCLI) {
		rr.Source = api.SourceCLI
	}
	if req.MaxWait != "" {
		mw, err := time.ParseDuration(req.MaxWait)
		if err != nil || mw <= 0 {
			WriteError(w, http.StatusBadRequest, api.CodeBadRequest, "max_wait: want a positive Go duration like 30s or 5m, got "+req.MaxWait)
			return
		}
		rr.MaxWait = mw
	}
	if req.Delay != "" {
		dl, err := time.ParseDuration(req.Delay)
		if err != nil || dl < 0 || dl > restart.MaxDelay {
			WriteError(w, http.StatusBadRequest, api.CodeBadRequest, "delay: want a Go duration from 0s to 60s, got "+req.Delay)
			return
		}
		rr.Delay = &dl
	}
	switch m := restart.Method(req.Method); m {
	case "", restart.MethodRespawn, restart.MethodSignal:
		rr.Method = m
	default:
		WriteError(w, http.StatusBadRequest, api.CodeBadRequest, "method: want respawn or signal, got "+req.Method)
		return
	}
	tk := a.l.RestartGateway(rr)
	reply := api.RestartReply{Coalesced: tk.Coalesced, Pending: &tk.Pending}
	if !req.Wait {
		WriteJSON(w, http.StatusAccepted, reply)
		return
	}
	res, err := tk.Wait(r.Context())
	if err != nil {
		WriteError(w, http.StatusServiceUnavailable, api.CodeUnavailable, err.Error())
		return
	}
	reply.Result = &res
	WriteJSON(w, http.StatusOK, reply)
}
