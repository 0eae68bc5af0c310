package daemon

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/heartbeat"
	"github.com/schedd/schedd/internal/platform"
	"github.com/schedd/schedd/internal/restart"
	"github.com/schedd/schedd/internal/server"
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
	return &component{
		name: "heartbeat",
		run:  svc.Run,
		status: func(_ context.Context, st *api.Status) {
			hs := svc.Status()
			st.Heartbeat = &hs
		},
		routes: func(srv *server.Server) { srv.AddHeartbeat(svc) },
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
