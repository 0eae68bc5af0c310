package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/control"
	"github.com/schedd/schedd/internal/heartbeat"
	"github.com/schedd/schedd/internal/platform"
	"github.com/schedd/schedd/internal/restart"
)

// setupHeartbeat builds the heartbeat component: the service runs heartbeat.* from the
// config, keeps its state in the state dir, runs exec targets as short child processes and
// asks the supervisor whether the gateway is ready and idle before each batch.
func (d *Daemon) setupHeartbeat() (*component, error) {
	c := d.config()
	log := d.log.Named("heartbeat")
	gw := &heartbeatGateway{status: d.sup.Status, log: log}
	gw.setProbe(d.heartbeatIdleProbe(c))
	svc, err := heartbeat.New(HeartbeatConfig(c.Heartbeat), heartbeat.Deps{
		Logger:  log,
		Gateway: gw,
		Store:   heartbeat.NewFileStore(d.opts.StateDir, log),
		Run:     platform.RunCommand,
		Environ: d.opts.Environ,
		Observe: d.heartbeatObserver(),
	})
	if err != nil {
		return nil, fmt.Errorf("heartbeat: %w", err)
	}
	d.heartbeats = svc
	endpoints := heartbeatAPI{svc: svc}
	return &component{
		name: "heartbeat",
		run:  svc.Run,
		status: func(_ context.Context, st *api.Status) {
			hs := svc.Status()
			st.Heartbeat = &hs
		},
		routes: endpoints.routes,
		prepare: func(next *config.Config) (func(), error) {
			apply, err := svc.PrepareUpdate(HeartbeatConfig(next.Heartbeat))
			if err != nil {
				return nil, err
			}
			idle, timeout := d.heartbeatIdleProbe(next)
			return func() {
				apply()
				gw.setProbe(idle, timeout)
			}, nil
		},
	}, nil
}

// HeartbeatConfig turns the heartbeat section of the config file into the heartbeat
// service's configuration.
func HeartbeatConfig(h config.Heartbeat) heartbeat.Config {
	out := heartbeat.Config{
		Enabled:      h.Enabled,
		UserTimezone: h.UserTimezone,
		Defaults:     heartbeatAgent(h.Defaults),
	}
	for _, a := range h.Agents {
		out.Agents = append(out.Agents, heartbeatAgent(a))
	}
	return out
}

func heartbeatAgent(a config.HeartbeatAgent) heartbeat.AgentConfig {
	out := heartbeat.AgentConfig{
		ID:         a.ID,
		Every:      a.Every,
		Session:    a.Session,
		Enabled:    a.Enabled,
		Channel:    a.Channel,
		Account:    a.Account,
		Visibility: heartbeatVisibility(a.Visibility),
	}
	if ah := a.ActiveHours; ah != nil {
		out.ActiveHours = &heartbeat.ActiveHours{Start: ah.Start, End: ah.End, Timezone: ah.Timezone}
	}
	if t := a.Target; t != nil {
		out.Target = &heartbeat.Target{}
		if h := t.HTTP; h != nil {
			out.Target.HTTP = &heartbeat.HTTPTarget{URL: h.URL, Method: h.Method, Headers: maps.Clone(h.Headers), Timeout: h.Timeout.D()}
		}
		if e := t.Exec; e != nil {
			out.Target.Exec = &heartbeat.ExecTarget{Command: slices.Clone(e.Command), Timeout: e.Timeout.D()}
		}
		if o := t.OpenClaw; o != nil {
			out.Target.OpenClaw = &heartbeat.OpenClawTarget{URL: o.URL, Token: o.HookToken(), Timeout: o.Timeout.D()}
		}
	}
	return out
}

func heartbeatVisibility(v *config.Visibility) *heartbeat.Visibility {
	if v == nil {
		return nil
	}
	out := &heartbeat.Visibility{ShowOK: v.ShowOK, ShowAlerts: v.ShowAlerts, UseIndicator: v.UseIndicator}
	if len(v.Channels) > 0 {
		out.Channels = make(map[string]heartbeat.ChannelVisibility, len(v.Channels))
	}
	for name, ch := range v.Channels {
		cv := heartbeat.ChannelVisibility{ShowOK: ch.ShowOK, ShowAlerts: ch.ShowAlerts, UseIndicator: ch.UseIndicator}
		if len(ch.Accounts) > 0 {
			cv.Accounts = make(map[string]heartbeat.Visibility, len(ch.Accounts))
		}
		for acct, av := range ch.Accounts {
			cv.Accounts[acct] = heartbeat.Visibility{ShowOK: av.ShowOK, ShowAlerts: av.ShowAlerts, UseIndicator: av.UseIndicator}
		}
		out.Channels[name] = cv
	}
	return out
}

// heartbeatIdleProbe is the idle probe the heartbeat busy check uses: the http or exec
// probe of restart.defer_until_idle.idle, built the way the restart coordinator builds it
// (whether or not restart deferral is switched on), and its timeout. nil means the busy
// check reads the gateway's X_SCHEDD_INFLIGHT.
func (d *Daemon) heartbeatIdleProbe(c *config.Config) (restart.Counter, time.Duration) {
	idle := c.Restart.DeferUntilIdle.Idle
	if idle == nil || (idle.HTTP == nil && idle.Exec == nil) {
		return nil, 0
	}
	cc := *c
	enabled := true
	cc.Restart.DeferUntilIdle.Enabled = &enabled
	rc, err := d.restartConfig(&cc)
	if err != nil || rc.Idle == nil {
		return nil, 0
	}
	return rc.Idle, rc.ProbeTimeout
}

// inflightTTL is how long an idle probe's answer is reused: the busy check runs once per
// dispatcher batch, and a burst of batches should not become a burst of probe requests.
// It is well below the one-second busy retry, so a retry always asks again.
const inflightTTL = 250 * time.Millisecond

// heartbeatGateway answers the heartbeat service's questions about the gateway.
type heartbeatGateway struct {
	status func() api.Gateway
	log    *zap.Logger

	mu      sync.Mutex
	probe   restart.Counter
	timeout time.Duration
	gen     uint64    // bumped by setProbe: an answer of a replaced probe is not cached
	n       int       // the cached answer
	at      time.Time // when it was cached; zero = none
}

var _ heartbeat.Gateway = (*heartbeatGateway)(nil)

func (g *heartbeatGateway) setProbe(p restart.Counter, timeout time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.probe, g.timeout = p, timeout
	g.gen++
	g.at = time.Time{}
}

// Ready reports whether the supervisor has the gateway ready.
func (g *heartbeatGateway) Ready() bool { return g.status().State == api.GatewayReady }

// Inflight reports the gateway's in-flight requests: the idle probe's answer (cached for
// inflightTTL; a failing or hung probe counts as busy), else the gateway's last
// X_SCHEDD_INFLIGHT, else unknown (idle).
func (g *heartbeatGateway) Inflight(ctx context.Context) (int, bool) {
	g.mu.Lock()
	p, timeout, gen := g.probe, g.timeout, g.gen
	if p != nil && !g.at.IsZero() && time.Since(g.at) < inflightTTL {
		n := g.n
		g.mu.Unlock()
		return n, true
	}
	g.mu.Unlock()
	if p == nil {
		st := g.status()
		if st.Inflight == nil {
			return 0, false
		}
		return *st.Inflight, true
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	n, err := p.Inflight(pctx)
	cancel()
	if err != nil {
		g.log.Debug("idle probe failed; the gateway counts as busy", zap.Error(err))
		n = max(n, 1)
	}
	g.mu.Lock()
	if g.gen == gen {
		g.n, g.at = n, time.Now()
	}
	g.mu.Unlock()
	return n, true
}

// Limits of the wake request's strings.
const (
	maxWakeReason  = 200
	maxWakeSession = 512
)

// heartbeatAPI serves the heartbeat endpoints of the control API.
type heartbeatAPI struct{ svc *heartbeat.Service }

func (h heartbeatAPI) routes(srv *control.Server) {
	srv.Handle("POST /v1/heartbeat/wake", h.wake)
	srv.Handle("PUT /v1/heartbeat/enabled", h.enabled)
}

func (h heartbeatAPI) wake(w http.ResponseWriter, r *http.Request) {
	var req api.HeartbeatWakeRequest
	if !control.DecodeJSON(w, r, &req) {
		return
	}
	bad := func(format string, args ...any) {
		control.WriteError(w, http.StatusBadRequest, api.CodeBadRequest, fmt.Sprintf(format, args...))
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
			control.WriteError(w, http.StatusNotFound, api.CodeNotFound,
				fmt.Sprintf("%s: unknown heartbeat agent %q (configured: %s)", field, id, heartbeatAgentList(st.Agents)))
			return
		}
		if a := st.Agents[i]; !a.Enabled {
			control.WriteError(w, http.StatusConflict, api.CodeConflict,
				fmt.Sprintf("%s: heartbeat agent %q does not run (%s)", field, id, a.DisabledReason))
			return
		}
	} else if !slices.ContainsFunc(st.Agents, func(a api.AgentStatus) bool { return a.Enabled }) {
		control.WriteError(w, http.StatusConflict, api.CodeConflict,
			"no heartbeat agent runs (give heartbeat.defaults or an agent a target; see `schedd heartbeat status`)")
		return
	}
	err := h.svc.Wake(heartbeat.WakeRequest{AgentID: req.Agent, SessionKey: req.Session, Reason: req.Reason})
	if errors.Is(err, heartbeat.ErrUnknownAgent) { // removed by a reload meanwhile
		control.WriteError(w, http.StatusNotFound, api.CodeNotFound, "agent: "+err.Error())
		return
	}
	if err != nil {
		control.WriteError(w, http.StatusInternalServerError, api.CodeInternal, err.Error())
		return
	}
	reason := heartbeat.NormalizeReason(req.Reason)
	control.WriteJSON(w, http.StatusAccepted, api.HeartbeatWakeReply{
		Agent: req.Agent, Session: req.Session, Reason: reason, ReasonKind: string(heartbeat.KindOf(reason)),
		CoalesceMS: heartbeat.DefaultCoalesce.Milliseconds(), Enabled: h.svc.Enabled(),
	})
}

func (h heartbeatAPI) enabled(w http.ResponseWriter, r *http.Request) {
	var req api.HeartbeatEnabledRequest
	if !control.DecodeJSON(w, r, &req) {
		return
	}
	if req.Enabled == nil {
		control.WriteError(w, http.StatusBadRequest, api.CodeBadRequest, `enabled: is required: {"enabled": true} or {"enabled": false}`)
		return
	}
	was := h.svc.Enabled()
	if err := h.svc.SetEnabled(*req.Enabled); err != nil {
		state := "off"
		if *req.Enabled {
			state = "on"
		}
		control.WriteError(w, http.StatusInternalServerError, api.CodeInternal,
			fmt.Sprintf("heartbeats switched %s, but the switch was not saved and a restart would undo it: %v", state, err))
		return
	}
	control.WriteJSON(w, http.StatusOK, api.HeartbeatEnabledReply{Enabled: *req.Enabled, Changed: was != *req.Enabled})
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
