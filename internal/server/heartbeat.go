package server

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/heartbeat"
)

// Limits of the wake request's strings.
const (
	maxWakeReason  = 200
	maxWakeSession = 512
)

// Heartbeats is what the heartbeat endpoints need of the heartbeat service
// (heartbeat.Service).
type Heartbeats interface {
	Status() api.Heartbeat
	Wake(req heartbeat.WakeRequest) error
	Enabled() bool
	SetEnabled(on bool) error
}

// AddHeartbeat adds the heartbeat endpoints, served by svc.
func (s *Server) AddHeartbeat(svc Heartbeats) { heartbeatAPI{svc: svc}.routes(s) }

// heartbeatAPI serves the heartbeat endpoints of the control API.
type heartbeatAPI struct{ svc Heartbeats }

func (h heartbeatAPI) routes(srv *Server) {
	srv.Handle("POST /v1/heartbeat/wake", h.wake)
	srv.Handle("PUT /v1/heartbeat/enabled", h.enabled)
}

func (h heartbeatAPI) wake(w http.ResponseWriter, r *http.Request) {
	var req api.HeartbeatWakeRequest
	if !DecodeJSON(w, r, &req) {
		return
	}
	bad := func(format string, args ...any) {
		WriteError(w, http.StatusBadRequest, api.CodeBadRequest, fmt.Sprintf(format, args...))
	}
	req.Agent = strings.TrimSpace(req.Agent)
	req.Session = strings.TrimSpace(req.Session)
	req.Reason = strings.TrimSpace(req.Reason)
	switch {
	case len(req.Reason) > maxWakeReason:
		bad("reason: at most %d bytes, got %d", maxWakeReason, len(req.Reason))
		return
	case strings.ContainsFunc(req.Reason, unicode.IsControl):
		bad("reason: control characters are not allowed")
		return
	case len(req.Session) > maxWakeSession:
		bad("session: at most %d bytes, got %d", maxWakeSession, len(req.Session))
		return
	case strings.ContainsFunc(req.Session, unicode.IsControl):
		bad("session: control characters are not allowed")
		return
	case strings.Contains(req.Agent, "::"):
		bad("agent: %q is not an agent id", req.Agent)
		return
	}
	st := h.svc.Status()
	field, id := "agent", req.Agent
	if id == "" && req.Session != "" {
		if rest, ok := strings.CutPrefix(req.Session, "agent:"); ok {
			field = "session"
			id, _, _ = strings.Cut(rest, ":")
		}
	}
	if id != "" {
		i := slices.IndexFunc(st.Agents, func(a api.AgentStatus) bool { return a.ID == id })
		if i < 0 {
			WriteError(w, http.StatusNotFound, api.CodeNotFound,
				fmt.Sprintf("%s: unknown heartbeat agent %q (configured: %s)", field, id, heartbeatAgentList(st.Agents)))
			return
		}
		if a := st.Agents[i]; !a.Enabled {
			WriteError(w, http.StatusConflict, api.CodeConflict,
				fmt.Sprintf("%s: heartbeat agent %q does not run (%s)", field, id, a.DisabledReason))
			return
		}
	} else if !slices.ContainsFunc(st.Agents, func(a api.AgentStatus) bool { return a.Enabled }) {
		WriteError(w, http.StatusConflict, api.CodeConflict,
			"no heartbeat agent runs (give heartbeat.defaults or an agent a target; see `schedd heartbeat status`)")
		return
	}
	err := h.svc.Wake(heartbeat.WakeRequest{AgentID: req.Agent, SessionKey: req.Session, Reason: req.Reason})
	if errors.Is(err, heartbeat.ErrUnknownAgent) { // removed by a reload meanwhile
		WriteError(w, http.StatusNotFound, api.CodeNotFound, "agent: "+err.Error())
		return
	}
	if err != nil {
		WriteError(w, http.StatusInternalServerError, api.CodeInternal, err.Error())
		return
	}
	reason := heartbeat.NormalizeReason(req.Reason)
	WriteJSON(w, http.StatusAccepted, api.HeartbeatWakeReply{
		Agent: req.Agent, Session: req.Session, Reason: reason, ReasonKind: string(heartbeat.KindOf(reason)),
		CoalesceMS: heartbeat.DefaultCoalesce.Milliseconds(), Enabled: h.svc.Enabled(),
	})
}

func (h heartbeatAPI) enabled(w http.ResponseWriter, r *http.Request) {
	var req api.HeartbeatEnabledRequest
	if !DecodeJSON(w, r, &req) {
		return
	}
	if req.Enabled == nil {
		WriteError(w, http.StatusBadRequest, api.CodeBadRequest, `enabled: is required: {"enabled": true} or {"enabled": false}`)
		return
	}
	was := h.svc.Enabled()
	if err := h.svc.SetEnabled(*req.Enabled); err != nil {
		state := "off"
		if *req.Enabled {
			state = "on"
		}
		WriteError(w, http.StatusInternalServerError, api.CodeInternal,
			fmt.Sprintf("heartbeats switched %s, but the switch was not saved and a restart would undo it: %v", state, err))
		return
	}
	WriteJSON(w, http.StatusOK, api.HeartbeatEnabledReply{Enabled: *req.Enabled, Changed: was != *req.Enabled})
}

// heartbeatAgentList names the configured agents for an error message, at most ten of them.
func heartbeatAgentList(agents []api.AgentStatus) string {
	if len(agents) == 0 {
		return "none"
	}
	const show = 10
	ids := make([]string, 0, min(len(agents), show))
	for _, a := range agents[:min(len(agents), show)] {
		ids = append(ids, a.ID)
	}
	s := strings.Join(ids, ", ")
	if len(agents) > show {
		s += fmt.Sprintf(" and %d more", len(agents)-show)
	}
	return s
}
