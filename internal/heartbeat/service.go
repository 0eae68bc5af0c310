package heartbeat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/outbound"
	"go.uber.org/zap"
)

var (
	// ErrRunning is returned by a second call to Run.
	ErrRunning = errors.New("heartbeat service already ran")
	// ErrUnknownAgent is returned by Wake for an agent that is not configured.
	ErrUnknownAgent = errors.New("unknown heartbeat agent")
)

// Gateway is what the service asks the supervised gateway before a pulse.
type Gateway interface {
	// Inflight reports the gateway's in-flight requests; known is false when no idle
	// signal is configured, which counts as idle. An implementation should answer within
	// a short timeout and report a failing probe as busy.
	Inflight(ctx context.Context) (n int, known bool)
	// Ready reports whether the gateway is up and ready.
	Ready() bool
}

// Deps are the service's collaborators. Only what a configured target needs is required.
type Deps struct {
	Logger     *zap.Logger      // used as given (the daemon names it); nil: no logs
	Gateway    Gateway          // nil: always idle and ready
	Store      StateStore       // nil: state kept in memory only
	HTTPClient *http.Client     // nil: one of the service's own, shared by every http target
	Run        outbound.RunFunc // required for exec targets (the daemon gives platform.RunCommand)
	Environ    []string         // the environment exec targets start from; nil: schedd's own
	Host       *time.Location   // the host zone for active hours; nil: time.Local
	Now        func() time.Time // the wall clock; nil: time.Now
	Observe    Observer         // told of outcomes, for metrics
}

// WakeRequest asks for a heartbeat now (after DefaultCoalesce). An empty AgentID with an
// empty SessionKey wakes every agent; a SessionKey "agent:<id>:..." names its agent.
type WakeRequest struct {
	AgentID    string
	SessionKey string
	Reason     string // "" = "requested"; "manual" bypasses the cooldown gate
}

type deferredWake struct {
	at      time.Time
	reason  string
	session string
}

// agent is one configured agent's schedule and history.
type agent struct {
	id       string
	runs     bool
	why      string
	interval time.Duration
	phase    time.Duration
	window   Window
	vis      ResolvedVisibility
	target   pulser
	session  string

	nextDue  time.Time
	dueIdx   int // in Service.due; -1: not scheduled
	deferred *deferredWake
	deferIdx int // in Service.deferq; -1: no wake deferred

	inflight   bool
	attempt    int       // busy retries so far
	retrySched time.Time // scheduled_at carried across busy retries
	starts     []time.Time
	last       *api.HeartbeatRun
	event      *api.HeartbeatEvent
	targetKey  string
	configErr  string    // the target's last refusal, until a pulse is accepted
	notBefore  time.Time // a target's Retry-After: no pulse before it
}

// Service runs the heartbeats of all configured agents with one timer.
type Service struct {
	log       *zap.Logger
	disp      *Dispatcher
	gw        Gateway
	store     StateStore
	httpc     *http.Client
	ownClient bool // httpc is the service's: its idle connections close when Run ends
	run       outbound.RunFunc
	environ   []string
	host      *time.Location
	now       func() time.Time
	obs       Observer
	kick      chan struct{}
	jobs      chan pulseJob

	saveMu sync.Mutex // serializes store writes; taken before mu, never inside it

	mu        sync.Mutex
	cfg       Config
	seed      string
	switchVal *bool // the persisted global switch, if ever set
	persisted map[string]AgentState
	order     []*agent
	agents    map[string]*agent
	due       agentHeap // running agents by next due time
	deferq    agentHeap // agents with a deferred wake, by its time
	awaiting  bool      // an interval wake is queued; don't re-request until it ran
	lastWall  time.Time // the wall clock at the last scheduler pass
	dirty     bool
	ran       bool
	stopping  bool
	runCtx    context.Context
	pulses    sync.WaitGroup
	workers   int          // pulse workers started
	idle      atomic.Int32 // workers waiting for a pulse that no queued pulse counts on
	saveArmed bool         // Run's save timer is set: a state change needs no kick
}

// New builds the service from cfg and the persisted state in deps.Store. It starts
// nothing; call Run.
func New(cfg Config, deps Deps) (*Service, error) {
	s := &Service{
		log:     deps.Logger,
		disp:    NewDispatcher(),
		gw:      deps.Gateway,
		store:   deps.Store,
		httpc:   deps.HTTPClient,
		run:     deps.Run,
		environ: deps.Environ,
		host:    deps.Host,
		now:     deps.Now,
		obs:     deps.Observe,
		kick:    make(chan struct{}, 1),
		jobs:    make(chan pulseJob, pulseQueue),
		due:     newDueHeap(),
		deferq:  newDeferHeap(),
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.store == nil {
		s.store = &memStore{}
	}
	if s.httpc == nil {
		s.httpc, s.ownClient = newHTTPClient(), true
	}
	if s.host == nil {
		s.host = time.Local
	}
	if s.now == nil {
		s.now = time.Now
	}
	st, err := s.store.Load()
	if err != nil {
		return nil, fmt.Errorf("load heartbeat state: %w", err)
	}
	s.seed = cfg.Seed
	if s.seed == "" {
		s.seed = st.Seed
	}
	if s.seed == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		s.seed = hex.EncodeToString(b[:])
	}
	s.switchVal = st.Enabled
	s.persisted = st.Agents
	if err := s.apply(cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// UpdateConfig applies a new config without a restart. An agent whose interval and phase
// are unchanged keeps its future due time; history is kept per agent id. An invalid
// config is rejected and the old one stays.
func (s *Service) UpdateConfig(cfg Config) error {
	apply, err := s.PrepareUpdate(cfg)
	if err != nil {
		return err
	}
	apply()
	return nil
}

// PrepareUpdate checks cfg as UpdateConfig does, and changes nothing: apply makes the change
// (it cannot fail), so a caller can prepare several parts before it changes any.
func (s *Service) PrepareUpdate(cfg Config) (apply func(), err error) {
	commit, err := s.prepare(cfg)
	if err != nil {
		return nil, err
	}
	return func() {
		commit()
		s.poke()
	}, nil
}

func (s *Service) apply(cfg Config) error {
	commit, err := s.prepare(cfg)
	if err != nil {
		return err
	}
	commit()
	return nil
}

// prepare builds what cfg needs (plans, targets); commit puts it in place.
func (s *Service) prepare(cfg Config) (commit func(), err error) {
	plans, err := cfg.plan(s.host)
	if err != nil {
		return nil, err
	}
	pulsers := make([]pulser, len(plans))
	keys := make([]string, len(plans))
	shared := make(map[string]pulser)
	for i, p := range plans {
		if !p.runs {
			continue
		}
		// Agents with the same target (typically the defaults') share one pulser.
		key := targetKey(p.cfg.Target)
		keys[i] = key
		if pulsers[i] = shared[key]; pulsers[i] == nil {
			if pulsers[i], err = newPulser(p.cfg.Target, s.httpc, s.run, s.environ); err != nil {
				return nil, fmt.Errorf("heartbeat agent %s: %w", p.cfg.ID, err)
			}
			shared[key] = pulsers[i]
		}
	}
	return func() {
		now := s.wall()
		var warns []configWarning
		s.mu.Lock()
		s.cfg = cfg
		old := s.agents
		s.agents = make(map[string]*agent, len(plans))
		s.order = make([]*agent, 0, len(plans))
		running, minInterval := 0, time.Duration(0)
		for i, p := range plans {
			id := p.cfg.ID
			a, existed := old[id]
			var prev *Slot
			switch {
			case existed && a.runs:
				prev = &Slot{Interval: a.interval, Phase: a.phase, NextDue: a.nextDue}
			case !existed:
				a = &agent{id: id, dueIdx: -1, deferIdx: -1}
				if ps, ok := s.persisted[id]; ok {
					prev = &Slot{Interval: time.Duration(ps.IntervalMS) * time.Millisecond,
						Phase: time.Duration(ps.PhaseMS) * time.Millisecond, NextDue: ps.NextDueAt}
					a.last, a.event, a.starts = ps.Last, ps.Event, ps.Starts
				}
			}
			delete(old, id)
			a.runs, a.why = p.runs, p.why
			a.interval, a.window, a.vis = p.interval, p.window, p.vis
			a.target, a.session = pulsers[i], p.cfg.Session
			if a.targetKey != keys[i] {
				// A new target: what the old one refused or asked for no longer holds.
				a.targetKey, a.configErr, a.notBefore = keys[i], "", time.Time{}
			}
			if p.everyErr != nil {
				warns = append(warns, configWarning{id, "every: " + p.everyErr.Error() + "; heartbeat disabled"})
			}
			if !p.cfg.ActiveHours.Valid() {
				warns = append(warns, configWarning{id, "active_hours: invalid start or end; always active"})
			}
			if a.runs {
				a.phase = Phase(s.seed, id, a.interval)
				s.setDue(a, SeekActive(ResolveNextDue(now, a.interval, a.phase, prev), a.interval, a.window.Within))
				running++
				if minInterval == 0 || a.interval < minInterval {
					minInterval = a.interval
				}
			} else {
				s.unschedule(a)
			}
			s.agents[id] = a
			s.order = append(s.order, a)
		}
		for _, a := range old {
			s.unschedule(a)
		}
		// The state file changes when an agent runs or a persisted one goes; with neither
		// there is nothing to write, and an idle daemon is not woken to write it.
		if running > 0 || len(s.persisted) > 0 {
			s.dirty = true
		}
		s.persisted = nil
		s.mu.Unlock()
		for _, w := range warns {
			s.log.Warn("heartbeat agent config problem", zap.String("agent", w.agent), zap.String("problem", w.problem))
		}
		if running == 0 {
			s.log.Info("heartbeat schedule: no agent runs")
		} else {
			s.log.Info("heartbeat schedule", zap.Int("agents", running), zap.Duration("min_interval", minInterval))
		}
	}, nil
}

type configWarning struct{ agent, problem string }

// Run schedules and pulses until ctx ends, then waits for in-flight pulses and saves the
// state. It may be called once. It returns nil on a clean stop.
func (s *Service) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.ran {
		s.mu.Unlock()
		return ErrRunning
	}
	s.ran = true
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.runCtx = ctx
	s.mu.Unlock()

	dispose := s.disp.SetHandler(s.handle)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// With no agent scheduled and no wake deferred there is nothing to wait for: the timer
	// stays stopped and an idle daemon is never woken by heartbeats.
	arm := func() {
		if d, ok := s.timerDelay(); ok {
			timer.Reset(d)
		} else {
			timer.Stop()
		}
	}
	arm()
	// The save timer runs only while there is something to save, gap after it was armed.
	saveTimer := time.NewTimer(time.Hour)
	saveTimer.Stop()
	defer saveTimer.Stop()
	gap := saveDelay
	armSave := func() {
		if s.isDirty() && s.setSaveArmed(true) {
			saveTimer.Reset(gap)
		}
	}
	armSave()
	for {
		select {
		case <-ctx.Done():
			dispose()
			s.mu.Lock()
			s.stopping = true
			s.mu.Unlock()
			s.disp.Close()
			s.pulses.Wait()
			s.dropQueued()
			if s.ownClient {
				s.httpc.CloseIdleConnections()
			}
			return s.flush()
		case <-timer.C:
			s.onTimer()
		case <-s.kick:
		case <-saveTimer.C:
			s.setSaveArmed(false)
			start := time.Now()
			if err := s.flush(); err != nil {
				s.log.Error("heartbeat state not saved", zap.Error(err))
			}
			gap = max(saveDelay, time.Since(start)*saveBudget)
		}
		arm()
		armSave()
	}
}

// Wake asks for a heartbeat after DefaultCoalesce. Requests within that window merge.
func (s *Service) Wake(req WakeRequest) error {
	id := strings.TrimSpace(req.AgentID)
	if id != "" {
		s.mu.Lock()
		_, ok := s.agents[id]
		s.mu.Unlock()
		if !ok {
			return fmt.Errorf("%w: %q", ErrUnknownAgent, id)
		}
	}
	s.disp.Request(Wake{Reason: req.Reason, AgentID: id, SessionKey: req.SessionKey}, DefaultCoalesce)
	return nil
}

// SetEnabled switches every heartbeat on or off and persists the switch before returning.
func (s *Service) SetEnabled(on bool) error {
	s.mu.Lock()
	s.switchVal = &on
	s.dirty = true
	s.mu.Unlock()
	err := s.flush()
	s.poke()
	s.log.Info("heartbeat switch", zap.Bool("enabled", on))
	return err
}

// Enabled reports the global switch.
func (s *Service) Enabled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enabledLocked()
}

func (s *Service) enabledLocked() bool {
	switch {
	case s.switchVal != nil:
		return *s.switchVal
	case s.cfg.Enabled != nil:
		return *s.cfg.Enabled
	}
	return true
}

// wall is the current wall-clock time without a monotonic reading: due times are wall
// instants (persisted, epoch-aligned), so comparisons must use the wall clock.
func (s *Service) wall() time.Time { return s.now().UTC() }

func (s *Service) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}
