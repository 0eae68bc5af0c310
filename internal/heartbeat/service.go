package heartbeat

import (
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

const (
	// maxSleep caps every scheduler sleep so a wall-clock jump or a suspend is noticed
	// within it (P21): due times are wall-clock instants, timers run on the monotonic clock.
	maxSleep = 30 * time.Second
	// saveDelay batches state writes; SetEnabled and shutdown write at once.
	saveDelay = 5 * time.Second
	// saveBudget spaces timed state writes by this many times the last write's duration,
	// so that writing the state of many agents takes at most 0.05 % of a core. What a crash
	// loses is that much of the agents' last outcomes and run starts; their schedules are
	// epoch-aligned and never lost.
	saveBudget = 2000
	// pulseWorkers is how many pulses may be in flight across all agents. Workers start
	// when pulses wait for one and then live as long as Run, so a daemon whose agents never
	// pulse keeps none.
	pulseWorkers = 64
	// pulseQueue is how many started pulses may wait for a worker before the handler
	// hands further ones to short-lived goroutines.
	pulseQueue = 1024
	// clockStepBack is how far the wall clock may step back between two scheduler passes
	// before the schedule is rebased (R-ENV-01).
	clockStepBack = 2 * time.Second
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
	Run        RunFunc          // required for exec targets
	Host       *time.Location   // the host zone for active hours; nil: time.Local
	Now        func() time.Time // the wall clock; nil: time.Now
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
	dueIdx   int
	deferred *deferredWake
	deferIdx int

	inflight   bool
	attempt    int       // busy retries so far
	retrySched time.Time // scheduled_at carried across busy retries
	starts     []time.Time
	last       *LastRun
	event      *Event
}

// Service runs the heartbeats of all configured agents with one timer.
type Service struct {
	log   *zap.Logger
	disp  *Dispatcher
	gw    Gateway
	store StateStore
	httpc *http.Client
	run   RunFunc
	host  *time.Location
	now   func() time.Time
	kick  chan struct{}
	jobs  chan pulseJob

	ownClient bool // httpc is the service's: its idle connections close when Run ends

	saveMu sync.Mutex // serializes store writes; taken before mu, never inside it

	mu        sync.Mutex
	cfg       Config
	seed      string
	switchVal *bool // the persisted global switch, if ever set
	persisted map[string]AgentState
	order     []*agent
	agents    map[string]*agent
	due       dueHeap
	deferq    deferHeap
	awaiting  bool      // an interval wake is queued; don't re-request until it ran
	lastWall  time.Time // the wall clock at the last scheduler pass
	dirty     bool
	ran       bool
	stopping  bool
	runCtx    context.Context
	pulses    sync.WaitGroup
	workers   int          // pulse workers started
	busy      atomic.Int32 // workers running a pulse
	saveArmed bool         // Run's save timer is set: a state change needs no kick
}

// New builds the service from cfg and the persisted state in deps.Store. It starts
// nothing; call Run.
func New(cfg Config, deps Deps) (*Service, error) {
	s := &Service{
		log:   deps.Logger,
		disp:  NewDispatcher(),
		gw:    deps.Gateway,
		store: deps.Store,
		httpc: deps.HTTPClient,
		run:   deps.Run,
		host:  deps.Host,
		now:   deps.Now,
		kick:  make(chan struct{}, 1),
		jobs:  make(chan pulseJob, pulseQueue),
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
	if err := s.apply(cfg); err != nil {
		return err
	}
	s.poke()
	return nil
}

func (s *Service) apply(cfg Config) error {
	plans, err := cfg.plan(s.host)
	if err != nil {
		return err
	}
	pulsers := make([]pulser, len(plans))
	shared := make(map[string]pulser)
	for i, p := range plans {
		if !p.runs {
			continue
		}
		// Agents with the same target (typically the defaults') share one pulser.
		key := targetKey(p.cfg.Target)
		if pulsers[i] = shared[key]; pulsers[i] == nil {
			if pulsers[i], err = newPulser(p.cfg.Target, s.httpc, s.run); err != nil {
				return fmt.Errorf("heartbeat agent %s: %w", p.cfg.ID, err)
			}
			shared[key] = pulsers[i]
		}
	}
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
	return nil
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

// setSaveArmed records whether Run's save timer is set and reports whether that changed.
func (s *Service) setSaveArmed(on bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := s.saveArmed != on
	s.saveArmed = on
	return changed
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

func (s *Service) isDirty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dirty
}

// timerDelay is how long the scheduler may sleep: until the next deferred wake or due
// agent (unless an interval wake is already queued), at most maxSleep so that wall-clock
// steps are noticed. ok is false when no agent is scheduled and no wake is deferred:
// nothing is due, ever, until the config or the switch changes (which pokes Run).
func (s *Service) timerDelay() (d time.Duration, ok bool) {
	s.mu.Lock()
	idle := len(s.due) == 0 && len(s.deferq) == 0
	if idle {
		s.lastWall = time.Time{} // a step back while nothing runs needs no rebase
	}
	s.mu.Unlock()
	if idle {
		return 0, false
	}
	now := s.wall()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchClockLocked(now)
	d = maxSleep
	if len(s.deferq) > 0 {
		d = min(d, s.deferq[0].deferred.at.Sub(now))
	}
	if len(s.due) > 0 && !s.awaiting {
		d = min(d, s.due[0].a.nextDue.Sub(now))
	}
	return max(d, 0), true
}

// onTimer re-issues deferred wakes that are due and requests an interval wake when an
// agent is due. With heartbeats switched off, due agents just move to their next slot.
func (s *Service) onTimer() {
	now := s.wall()
	var wakes []Wake
	s.mu.Lock()
	s.watchClockLocked(now)
	for len(s.deferq) > 0 && !s.deferq[0].deferred.at.After(now) {
		a := heap.Pop(&s.deferq).(*agent)
		wakes = append(wakes, Wake{Reason: a.deferred.reason, AgentID: a.id, SessionKey: a.deferred.session})
		a.deferred = nil
	}
	interval := false
	if len(s.due) > 0 && !s.due[0].a.nextDue.After(now) {
		switch {
		case !s.enabledLocked():
			for len(s.due) > 0 && !s.due[0].a.nextDue.After(now) {
				a := s.due[0].a
				s.setDue(a, advanceDue(now, KindInterval, a.interval, a.phase, a.window.Within))
			}
			s.dirty = true
		case !s.awaiting:
			s.awaiting = true
			interval = true
		}
	}
	s.mu.Unlock()
	for _, w := range wakes {
		s.disp.Request(w, 0)
	}
	if interval {
		s.disp.Request(Wake{Reason: ReasonInterval}, 0)
	}
}

// watchClockLocked notices the wall clock stepping back. Due times are wall instants, so
// after a step back of an hour they would sit an hour too far out, and run starts recorded
// before it would lie in the future and hold the cooldown gate shut. The schedule is
// rebased: fresh slots, future run starts dropped, deferred wakes released.
func (s *Service) watchClockLocked(now time.Time) {
	prev := s.lastWall
	s.lastWall = now
	if prev.IsZero() || !now.Before(prev.Add(-clockStepBack)) {
		return
	}
	s.log.Warn("wall clock stepped back; heartbeat schedule rebased", zap.Duration("step", prev.Sub(now)))
	for _, a := range s.order {
		if !a.runs {
			continue
		}
		if i := slices.IndexFunc(a.starts, func(t time.Time) bool { return t.After(now) }); i >= 0 {
			a.starts = slices.Clone(a.starts[:i])
		}
		s.setDue(a, SeekActive(NextSlot(now, a.interval, a.phase), a.interval, a.window.Within))
		if a.deferred != nil && a.deferred.at.After(now) {
			a.deferred.at = now
			heap.Fix(&s.deferq, a.deferIdx)
		}
	}
	s.dirty = true
}

// note is a log line decided under the lock and written after it.
type note struct {
	agent, session string
	wake           Wake
	reason         string
	until          time.Time
}

func (s *Service) logNotes(notes []note) {
	for _, n := range notes {
		fields := []zap.Field{zap.String("agent", n.agent), zap.String("wake_reason", n.wake.Reason),
			zap.String("skip_reason", n.reason)}
		if n.session != "" {
			fields = append(fields, zap.String("session", n.session))
		}
		if !n.until.IsZero() {
			fields = append(fields, zap.Time("deferred_until", n.until))
		}
		s.log.Info("heartbeat skipped", fields...)
	}
}

// handle is the dispatcher's handler: it gates the wake and starts pulses. Pulses run on
// their own, so a slow target delays no other agent; a busy target re-queues its wake
// through the dispatcher's retry when it answers.
func (s *Service) handle(ctx context.Context, w Wake) (RunResult, error) {
	res := s.dispatch(ctx, w)
	if !(res.Status == StatusSkipped && IsBusyReason(res.Reason)) {
		s.mu.Lock()
		s.awaiting = false
		s.mu.Unlock()
	}
	s.poke()
	return res, nil
}

func skipped(reason string) RunResult { return RunResult{Status: StatusSkipped, Reason: reason} }

// dispatch applies the gates in upstream's order: disabled, quiet-hours, gateway busy
// (requests-in-flight), gateway-not-ready, alerts-disabled, cooldown.
func (s *Service) dispatch(ctx context.Context, w Wake) RunResult {
	now := s.wall()
	kind := KindOf(w.Reason)
	var notes []note
	defer func() { s.logNotes(notes) }()

	s.mu.Lock()
	if !s.enabledLocked() || s.stopping {
		s.mu.Unlock()
		notes = append(notes, note{agent: w.AgentID, wake: w, reason: SkipDisabled})
		return skipped(SkipDisabled)
	}
	var cands []*agent
	switch {
	case w.AgentID != "" || w.SessionKey != "":
		id := w.AgentID
		if id == "" {
			id = s.agentForSessionLocked(w.SessionKey)
		}
		a := s.agents[id]
		if a == nil || !a.runs {
			s.mu.Unlock()
			notes = append(notes, note{agent: id, session: w.SessionKey, wake: w, reason: SkipDisabled})
			return skipped(SkipDisabled)
		}
		cands = []*agent{a}
	case kind == KindInterval:
		cands = s.dueAgentsLocked(now)
		if len(cands) == 0 {
			s.mu.Unlock()
			return skipped(SkipNotDue)
		}
	default:
		for _, a := range s.order {
			if a.runs {
				cands = append(cands, a)
			}
		}
		if len(cands) == 0 {
			s.mu.Unlock()
			return skipped(SkipDisabled)
		}
	}
	open := cands[:0:0]
	for _, a := range cands {
		if !a.window.Within(now) {
			notes = append(notes, s.skipLocked(a, w, kind, SkipQuietHours, now, true))
			continue
		}
		open = append(open, a)
	}
	s.mu.Unlock()
	if len(open) == 0 {
		return skipped(SkipQuietHours)
	}

	busy, ready := false, true
	if s.gw != nil {
		n, known := s.gw.Inflight(ctx)
		busy = known && n > 0
		if !busy {
			ready = s.gw.Ready()
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.enabledLocked() || s.stopping {
		return skipped(SkipDisabled)
	}
	if busy {
		// Not advanced and not started: the dispatcher's retry runs these again in 1 s, so
		// repeated busy skips never push a schedule out.
		for _, a := range open {
			if s.agents[a.id] == a {
				notes = append(notes, s.skipLocked(a, w, kind, SkipRequestsInFlight, now, false))
			}
		}
		return skipped(SkipRequestsInFlight)
	}
	started, last := 0, ""
	for _, a := range open {
		if s.agents[a.id] != a || !a.runs {
			continue // replaced by a config reload meanwhile
		}
		reason := ""
		switch {
		case !ready:
			reason = SkipGatewayNotReady
		case !a.vis.Any():
			reason = SkipAlertsDisabled
		case a.inflight:
			reason = SkipInProgress
		}
		if reason != "" {
			notes = append(notes, s.skipLocked(a, w, kind, reason, now, true))
			last = reason
			continue
		}
		if until, why, deferred := cooldown(kind, a.starts, now); deferred {
			notes = append(notes, s.deferLocked(a, w, why, until))
			last = why
			continue
		}
		s.startPulseLocked(a, w, kind, now)
		started++
	}
	if started > 0 {
		return RunResult{Status: StatusRan}
	}
	return skipped(last)
}

// agentForSessionLocked reads "agent:<id>:..." keys; other keys belong to the first
// configured agent (upstream's default agent).
func (s *Service) agentForSessionLocked(key string) string {
	if rest, ok := strings.CutPrefix(key, "agent:"); ok {
		id, _, _ := strings.Cut(rest, ":")
		return id
	}
	if len(s.order) > 0 {
		return s.order[0].id
	}
	return ""
}

// skipLocked records a skip. An interval wake's skip consumes its slot, so the schedule
// advances (unless told otherwise, for busy skips the retry owns). Any other skipped wake
// leaves the schedule alone: nothing ran, so there is no fresh run to count from.
func (s *Service) skipLocked(a *agent, w Wake, kind ReasonKind, reason string, now time.Time, advance bool) note {
	a.last = &LastRun{Status: StatusSkipped, Reason: reason, At: now}
	if advance && kind == KindInterval {
		a.attempt, a.retrySched = 0, time.Time{}
		s.setDue(a, advanceDue(now, kind, a.interval, a.phase, a.window.Within))
	}
	s.dirty = true
	return note{agent: a.id, session: sessionFor(w, a), wake: w, reason: reason}
}

// deferLocked parks an event wake until the cooldown lets it run. A wake that could only
// run at or after the agent's next due time is dropped: that run covers it. A deferral is
// logged but is not an outcome, so the agent's last run stays what it was.
func (s *Service) deferLocked(a *agent, w Wake, why string, until time.Time) note {
	n := note{agent: a.id, session: sessionFor(w, a), wake: w, reason: why, until: until}
	if !until.Before(a.nextDue) {
		n.until = time.Time{}
		return n
	}
	d := &deferredWake{at: until, reason: w.Reason, session: w.SessionKey}
	if prev := a.deferred; prev != nil {
		if Priority(prev.reason) > Priority(d.reason) {
			d.reason, d.session = prev.reason, prev.session
		}
		if prev.at.Before(d.at) {
			d.at = prev.at
		}
	}
	a.deferred = d
	if a.deferIdx >= 0 {
		heap.Fix(&s.deferq, a.deferIdx)
	} else {
		heap.Push(&s.deferq, a)
	}
	return n
}

func sessionFor(w Wake, a *agent) string {
	if w.SessionKey != "" {
		return w.SessionKey
	}
	return a.session
}

// pulseJob is a started pulse waiting for a worker.
type pulseJob struct {
	a *agent
	t pulser // the agent's target when the pulse started: a reload may replace it
	p Pulse
}

func (s *Service) startPulseLocked(a *agent, w Wake, kind ReasonKind, now time.Time) {
	sched := now
	if kind == KindInterval && !a.nextDue.After(now) {
		sched = a.nextDue
	}
	if a.attempt > 0 && !a.retrySched.IsZero() {
		sched = a.retrySched
	}
	p := Pulse{
		AgentID:     a.id,
		SessionKey:  sessionFor(w, a),
		Reason:      w.Reason,
		ReasonKind:  kind,
		Visibility:  a.vis,
		ScheduledAt: sched.UTC(),
		Attempt:     a.attempt + 1,
	}
	s.setDue(a, advanceDue(now, kind, a.interval, a.phase, a.window.Within))
	a.inflight = true
	s.dirty = true
	s.enqueueLocked(pulseJob{a: a, t: a.target, p: p})
}

// enqueueLocked hands job to the pulse workers.
func (s *Service) enqueueLocked(job pulseJob) {
	select {
	case s.jobs <- job:
		// Start a worker when the idle ones cannot take every queued pulse.
		if s.workers < pulseWorkers && s.workers-int(s.busy.Load()) < len(s.jobs) {
			s.workers++
			ctx := s.runCtx
			s.pulses.Go(func() { s.worker(ctx) })
		}
	default:
		// The queue is full (a broadcast to many agents): wait for room off the lock.
		ctx := s.runCtx
		s.pulses.Go(func() {
			select {
			case s.jobs <- job:
			case <-ctx.Done():
				s.drop(job)
			}
		})
	}
}

// worker runs queued pulses until ctx ends.
func (s *Service) worker(ctx context.Context) {
	for {
		select {
		case job := <-s.jobs:
			s.busy.Add(1)
			startWall, start := s.wall(), time.Now()
			res := safePulse(ctx, job.t, job.p, s.log)
			s.finish(job.a, job.p, res, startWall, time.Since(start))
			s.busy.Add(-1)
		case <-ctx.Done():
			return
		}
	}
}

// dropQueued records pulses still queued at shutdown as stopped.
func (s *Service) dropQueued() {
	for {
		select {
		case job := <-s.jobs:
			s.drop(job)
		default:
			return
		}
	}
}

// drop records a pulse the service stopped before it ran.
func (s *Service) drop(job pulseJob) {
	s.finish(job.a, job.p, pulseResult{outcome: outcomeFailed, reason: reasonStopped}, s.wall(), 0)
}

func safePulse(ctx context.Context, t pulser, p Pulse, log *zap.Logger) (res pulseResult) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("heartbeat target panic", zap.String("agent", p.AgentID), zap.Any("panic", r), zap.Stack("stack"))
			res = pulseResult{outcome: outcomeFailed, reason: fmt.Sprintf("panic: %v", r)}
		}
	}()
	return t.pulse(ctx, p)
}

// finish records a pulse's outcome. A busy answer is retried through the dispatcher after
// RetryDelay with the same reason and target, and does not count as a run start.
func (s *Service) finish(a *agent, p Pulse, res pulseResult, startWall time.Time, took time.Duration) {
	last := &LastRun{DurationMS: took.Milliseconds(), At: startWall, Reason: res.reason}
	s.mu.Lock()
	a.inflight = false
	switch res.outcome {
	case outcomeRan:
		last.Status = StatusRan
	case outcomeBusy:
		last.Status = StatusSkipped
	case outcomeFailed:
		last.Status = StatusFailed
	}
	if res.outcome == outcomeBusy {
		a.attempt++
		a.retrySched = p.ScheduledAt
	} else {
		a.attempt, a.retrySched = 0, time.Time{}
		a.starts = recordStart(a.starts, startWall)
	}
	a.last = last
	if res.event != nil {
		ev := *res.event
		ev.At = startWall.Add(took)
		if a.vis.UseIndicator {
			ev.Indicator = indicatorFor(ev.Status)
		}
		a.event = &ev
	}
	s.dirty = true
	kick := !s.saveArmed // Run arms the save timer when it next looks
	s.mu.Unlock()

	s.logPulse(p, res, last.Status, startWall, took)
	if res.outcome == outcomeBusy {
		s.disp.retry(Wake{Reason: p.Reason, AgentID: p.AgentID, SessionKey: p.SessionKey})
	}
	if kick {
		s.poke()
	}
}

// logPulse writes the line of a pulse that finished.
func (s *Service) logPulse(p Pulse, res pulseResult, status RunStatus, startWall time.Time, took time.Duration) {
	fields := []zap.Field{
		zap.String("agent", p.AgentID), zap.String("reason", p.Reason), zap.String("reason_kind", string(p.ReasonKind)),
		zap.String("status", string(status)), zap.Duration("duration", took), zap.Int("attempt", p.Attempt),
		zap.Time("scheduled_at", p.ScheduledAt), zap.Duration("late", startWall.Sub(p.ScheduledAt)),
	}
	if p.SessionKey != "" {
		fields = append(fields, zap.String("session", p.SessionKey))
	}
	if res.reason != "" {
		fields = append(fields, zap.String("detail", res.reason))
	}
	if res.event != nil {
		fields = append(fields, zap.String("event", res.event.Status))
	}
	s.log.Info("heartbeat pulse", fields...)
}

// dueAgentsLocked lists the agents due at now, earliest first, walking only the part of
// the heap that is due.
func (s *Service) dueAgentsLocked(now time.Time) []*agent {
	var out []*agent
	nowNs := now.UnixNano()
	stack := []int{0}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(s.due) || s.due[i].ns > nowNs {
			continue
		}
		out = append(out, s.due[i].a)
		stack = append(stack, 2*i+1, 2*i+2)
	}
	slices.SortFunc(out, func(x, y *agent) int {
		if c := x.nextDue.Compare(y.nextDue); c != 0 {
			return c
		}
		return strings.Compare(x.id, y.id)
	})
	return out
}

func (s *Service) setDue(a *agent, t time.Time) {
	a.nextDue = t.UTC()
	ns := a.nextDue.UnixNano()
	if a.dueIdx >= 0 {
		s.due[a.dueIdx].ns = ns
		s.due.fix(a.dueIdx)
	} else {
		s.due.push(a, ns)
	}
}

func (s *Service) unschedule(a *agent) {
	if a.dueIdx >= 0 {
		s.due.remove(a.dueIdx)
	}
	if a.deferIdx >= 0 {
		heap.Remove(&s.deferq, a.deferIdx)
	}
	a.deferred = nil
}

// flush saves the state if it changed.
func (s *Service) flush() error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.mu.Lock()
	if !s.dirty {
		s.mu.Unlock()
		return nil
	}
	st := s.snapshotLocked()
	s.dirty = false
	s.mu.Unlock()
	if err := s.store.Save(st); err != nil {
		s.mu.Lock()
		s.dirty = true
		s.mu.Unlock()
		return fmt.Errorf("save heartbeat state: %w", err)
	}
	return nil
}

// snapshotLocked is what the state file keeps. It shares the agents' last run, event and
// run starts: those are replaced, never modified in place.
func (s *Service) snapshotLocked() State {
	st := State{Version: StateVersion, Seed: s.seed, Enabled: s.switchVal, Agents: make(map[string]AgentState, len(s.order))}
	for _, a := range s.order {
		as := AgentState{Last: a.last, Event: a.event, Starts: a.starts}
		if a.runs {
			as.IntervalMS, as.PhaseMS, as.NextDueAt = a.interval.Milliseconds(), a.phase.Milliseconds(), a.nextDue
		}
		st.Agents[a.id] = as
	}
	return st
}

// dueHeap orders running agents by due time. Each entry carries its key, so sifting
// compares integers in one array instead of following a pointer per comparison (10,000
// agents are 14 levels deep, and every pulse moves its agent).
type dueHeap []dueEntry

type dueEntry struct {
	ns int64 // the agent's nextDue in Unix ns
	a  *agent
}

func (h dueHeap) less(i, j int) bool { return h[i].ns < h[j].ns }

func (h dueHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].a.dueIdx, h[j].a.dueIdx = i, j
}

func (h dueHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h dueHeap) down(i int) bool {
	start, n := i, len(h)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h.less(r, c) {
			c = r
		}
		if !h.less(c, i) {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > start
}

func (h *dueHeap) push(a *agent, ns int64) {
	a.dueIdx = len(*h)
	*h = append(*h, dueEntry{ns, a})
	h.up(a.dueIdx)
}

// fix moves entry i to its place after its key changed.
func (h dueHeap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *dueHeap) remove(i int) {
	old := *h
	n := len(old) - 1
	a := old[i].a
	if i != n {
		old.swap(i, n)
	}
	old[n] = dueEntry{}
	*h = old[:n]
	if i != n {
		h.fix(i)
	}
	a.dueIdx = -1
}

type deferHeap []*agent

func (h deferHeap) Len() int           { return len(h) }
func (h deferHeap) Less(i, j int) bool { return h[i].deferred.at.Before(h[j].deferred.at) }
func (h deferHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].deferIdx, h[j].deferIdx = i, j
}
func (h *deferHeap) Push(x any) {
	a := x.(*agent)
	a.deferIdx = len(*h)
	*h = append(*h, a)
}
func (h *deferHeap) Pop() any {
	old := *h
	a := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	a.deferIdx = -1
	return a
}
