package restart

import (
	"context"
	"sync"
	"time"

	"github.com/schedd/schedd/internal/api"
	"go.uber.org/zap"
)

// Hooks let the daemon tell its service manager and the operator what happens. They are
// called from the coordinator goroutine and must not block.
type Hooks struct {
	OnPending func(api.RestartPending) // a pending restart changed (created, merged, deferring, probed)
	OnBegin   func(api.RestartPending) // a restart begins (send RELOADING=1)
	OnEnd     func(api.RestartResult)  // a restart ended (send READY=1 when OK)
}

// Coordinator owns restart requests. Create it with New and call Run once.
type Coordinator struct {
	cfg   Config
	r     Restarter
	log   *zap.Logger
	hooks Hooks

	reqc chan reqMsg
	cfgc chan Config
	done chan struct{}

	mu     sync.Mutex // guards status only
	status api.Restart
}

// New returns a coordinator that restarts through r; it refuses a cfg that fails Check.
func New(cfg Config, r Restarter, log *zap.Logger, hooks Hooks) (*Coordinator, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Coordinator{
		cfg:    cfg,
		r:      r,
		log:    log,
		hooks:  hooks,
		reqc:   make(chan reqMsg),
		cfgc:   make(chan Config),
		done:   make(chan struct{}),
		status: api.Restart{Requests: map[api.RestartSource]int64{}},
	}, nil
}

type reqMsg struct {
	req   Request
	reply chan Ticket
}

// Request asks for a restart and returns at once with the ticket of the restart it
// belongs to. After Run has returned, the ticket's Wait reports ErrStopping.
func (c *Coordinator) Request(req Request) Ticket {
	m := reqMsg{req: req, reply: make(chan Ticket, 1)}
	select {
	case c.reqc <- m:
		return <-m.reply
	case <-c.done:
		ch := make(chan outcome, 1)
		ch <- outcome{err: ErrStopping}
		return Ticket{done: ch}
	}
}

// Reconfigure replaces the configuration; a restart already pending keeps its due time. A
// cfg that fails Check is refused and the old one kept.
func (c *Coordinator) Reconfigure(cfg Config) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	select {
	case c.cfgc <- cfg:
		return nil
	case <-c.done:
		return ErrStopping
	}
}

// Status returns a snapshot for the status document.
func (c *Coordinator) Status() api.Restart {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.status
	if st.Pending != nil {
		p := *st.Pending
		st.Pending = &p
	}
	st.History = append([]api.RestartResult(nil), st.History...)
	st.Requests = make(map[api.RestartSource]int64, len(c.status.Requests))
	for k, v := range c.status.Requests {
		st.Requests[k] = v
	}
	return st
}

// pending is a restart waiting to run, owned by the Run goroutine.
type pending struct {
	reasons     []string            // of the last MaxReasons requests
	sources     []api.RestartSource // of the same requests
	requests    int                 // every request
	requestedAt time.Time
	now         bool          // a request asked to skip delay, cooldown and deferral
	method      Method        // a request's override of the configured method ("" = none)
	delay       time.Duration // the shortest requested delay
	maxWait     time.Duration // deferral ceiling for this restart
	cooldown    time.Duration // extra delay from the cooldown
	dueAt       time.Time
	waiters     []chan outcome

	deferring     bool
	deferredSince time.Time
	deadline      time.Time
	inflight      *int
	idleErr       string
	idleDetail    *api.IdleDetail
	fence         *fenceHold // once the idle probe said idle, with a fence configured
}

func (p *pending) snapshot(followUp bool) api.RestartPending {
	s := api.RestartPending{
		Reasons:     append([]string(nil), p.reasons...),
		Sources:     append([]api.RestartSource(nil), p.sources...),
		Requests:    p.requests,
		RequestedAt: p.requestedAt,
		DueAt:       p.dueAt,
		FollowUp:    followUp,
	}
	if p.deferring {
		since, dl := p.deferredSince, p.deadline
		s.DeferredSince, s.DeadlineAt = &since, &dl
	}
	if p.inflight != nil {
		n := *p.inflight
		s.Inflight = &n
	}
	s.IdleError, s.IdleDetail = p.idleErr, p.idleDetail
	if p.fence != nil {
		st := p.fence.state
		s.Fence = &st
	}
	return s
}

// run is the loop's state.
type run struct {
	c        *Coordinator
	ctx      context.Context
	pend     *pending // waiting (delay, cooldown or deferral)
	follow   *pending // arrived while a restart runs
	running  bool
	lastAt   time.Time // when the last restart began
	due      *time.Timer
	poll     *time.Ticker
	deadline *time.Timer
	probing  bool
	gen      int // deferral generation; a probe answer for an older one is ignored
	probes   chan probeResult
	fenced   chan fenceResult
	ran      chan runResult
	wg       sync.WaitGroup
}

type probeResult struct {
	gen    int
	n      int
	detail *api.IdleDetail
	err    error
}

type runResult struct {
	p     *pending
	res   api.RestartResult
	begun time.Time
}

func timerC(t *time.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C
}

// Run coordinates restarts until ctx ends. What is pending is then cancelled (its waiters
// get ErrStopping); a restart in progress is waited for (the restarter's own context ends
// with ctx, and the supervisor's stop wins over it).
func (c *Coordinator) Run(ctx context.Context) error {
	defer close(c.done)
	s := &run{c: c, ctx: ctx, probes: make(chan probeResult, 1), fenced: make(chan fenceResult, 1), ran: make(chan runResult, 1)}
	defer s.wg.Wait()
	defer s.stopTimers()
	for {
		var tick <-chan time.Time
		if s.poll != nil {
			tick = s.poll.C
		}
		select {
		case m := <-c.reqc:
			m.reply <- s.request(m.req)
		case cfg := <-c.cfgc:
			c.cfg = cfg
		case <-timerC(s.due):
			s.due = nil
			s.dueReached()
		case <-tick:
			if s.pend != nil && s.pend.fence != nil {
				s.fenceCall()
			} else {
				s.probe()
			}
		case pr := <-s.probes:
			s.probing = false
			s.probed(pr)
		case fr := <-s.fenced:
			s.probing = false
			s.fenceAnswered(fr)
		case <-timerC(s.deadline):
			s.deadline = nil
			if s.pend != nil && s.pend.deferring && !s.fenceBusy(true) {
				c.log.Warn("gateway still busy at max_wait; forcing the restart",
					zap.Duration("waited", time.Since(s.pend.deferredSince)), zap.Intp("inflight", s.pend.inflight))
				s.execute(true)
			}
		case rr := <-s.ran:
			s.finished(rr)
		case <-ctx.Done():
			s.cancelAll()
			if s.running {
				s.finished(<-s.ran)
			}
			return nil
		}
	}
}

func (s *run) stopTimers() {
	if s.due != nil {
		s.due.Stop()
		s.due = nil
	}
	if s.poll != nil {
		s.poll.Stop()
		s.poll = nil
	}
	if s.deadline != nil {
		s.deadline.Stop()
		s.deadline = nil
	}
}

// request merges req into the pending restart (or the follow-up of a running one), or
// makes a new pending restart.
func (s *run) request(req Request) Ticket {
	c := s.c
	now := time.Now()
	reason := cleanReason(req.Reason)
	if reason == "" {
		reason = string(req.Source)
	}
	delay := c.cfg.Delay
	if req.Delay != nil {
		delay = clampDelay(*req.Delay)
	}
	if req.Now {
		delay = 0
	}
	maxWait := c.cfg.MaxWait
	if req.MaxWait > 0 {
		maxWait = max(req.MaxWait, c.cfg.Poll)
	}
	c.mu.Lock()
	c.status.Requests[req.Source]++
	c.mu.Unlock()

	done := make(chan outcome, 1)
	target, followUp := &s.pend, false
	if s.running {
		target, followUp = &s.follow, true
	}
	p := *target
	coalesced := p != nil
	if p == nil {
		p = &pending{requestedAt: now, delay: delay, maxWait: maxWait}
		*target = p
	}
	p.reasons = keepLast(p.reasons, reason)
	p.sources = keepLast(p.sources, req.Source)
	p.requests++
	p.waiters = append(p.waiters, done)
	if coalesced && req.MaxWait > 0 {
		p.maxWait = min(p.maxWait, maxWait)
	}
	p.delay = min(p.delay, delay)
	p.now = p.now || req.Now
	if req.Method == MethodRespawn || (req.Method == MethodSignal && p.method == "") {
		p.method = req.Method
	}

	if !followUp {
		if !coalesced {
			c.log.Info("restart requested", zap.String("reason", reason), zap.String("source", string(req.Source)),
				zap.Bool("now", req.Now))
			s.schedule(p, now)
		} else {
			c.log.Info("restart request merged into the pending one", zap.String("reason", reason),
				zap.String("source", string(req.Source)), zap.Int("requests", p.requests))
			s.pullEarlier(p, now, delay, req.Now)
		}
	} else {
		c.log.Info("restart requested while one runs; it follows when that one is done",
			zap.String("reason", reason), zap.String("source", string(req.Source)), zap.Int("requests", p.requests))
	}
	snap := p.snapshot(followUp)
	s.publish()
	return Ticket{Coalesced: coalesced, Pending: snap, done: done}
}

// cooldownLeft is what remains of the cooldown since the last restart began.
func (s *run) cooldownLeft(now time.Time) time.Duration {
	if s.lastAt.IsZero() {
		return 0
	}
	return max(0, s.lastAt.Add(s.c.cfg.Cooldown).Sub(now))
}

// schedule arms p's due time from now: its delay plus the cooldown left (none for Now).
func (s *run) schedule(p *pending, now time.Time) {
	p.cooldown = 0
	if !p.now {
		p.cooldown = s.cooldownLeft(now)
	}
	p.dueAt = now.Add(p.delay + p.cooldown)
	if p.now {
		p.dueAt = now
	}
	s.armDue(p.dueAt.Sub(now))
}

func (s *run) armDue(d time.Duration) {
	if s.due != nil {
		s.due.Stop()
	}
	s.due = time.NewTimer(d)
}

// pullEarlier moves p's due time earlier when a merged request wants it sooner. A Now
// request ends a deferral at once.
func (s *run) pullEarlier(p *pending, now time.Time, delay time.Duration, reqNow bool) {
	if p.deferring {
		if reqNow && !s.fenceBusy(false) {
			s.c.log.Info("restart with --now ends the wait for idle")
			s.execute(false)
		}
		return
	}
	var due time.Time
	if reqNow {
		due = now
		p.cooldown = 0
	} else {
		due = now.Add(delay + s.cooldownLeft(now))
	}
	if due.Before(p.dueAt) {
		s.c.log.Info("restart pulled earlier", zap.Duration("in", due.Sub(now)))
		if !reqNow {
			p.cooldown = s.cooldownLeft(now)
		}
		p.dueAt = due
		s.armDue(due.Sub(now))
	}
}

// dueReached starts the deferral, or the restart itself.
func (s *run) dueReached() {
	p := s.pend
	if p == nil {
		return
	}
	if s.c.cfg.Idle == nil || p.now {
		s.execute(false)
		return
	}
	now := time.Now()
	s.gen++
	p.deferring = true
	p.deferredSince = now
	p.deadline = now.Add(p.maxWait)
	s.deadline = time.NewTimer(p.maxWait)
	s.poll = time.NewTicker(s.c.cfg.Poll)
	s.c.log.Info("restart waits for the gateway to be idle", zap.Duration("max_wait", p.maxWait),
		zap.Duration("poll", s.c.cfg.Poll))
	s.publish()
	s.probe()
}

// probe asks the idle counter, unless a check is still running (a hung check is not
// idle, and it counts toward max_wait).
func (s *run) probe() {
	if s.probing || s.pend == nil || !s.pend.deferring {
		return
	}
	s.probing = true
	ctx, idle, timeout, gen := s.ctx, s.c.cfg.Idle, s.c.cfg.ProbeTimeout, s.gen
	s.wg.Go(func() {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var n int
		var detail *api.IdleDetail
		var err error
		if dc, ok := idle.(DetailCounter); ok {
			n, detail, err = dc.InflightDetail(cctx)
		} else {
			n, err = idle.Inflight(cctx)
		}
		if err == nil && cctx.Err() != nil {
			err = cctx.Err()
		}
		s.probes <- probeResult{gen, n, detail, err}
	})
}

func (s *run) probed(pr probeResult) {
	p := s.pend
	if p == nil || !p.deferring || pr.gen != s.gen {
		return
	}
	if pr.err != nil {
		p.inflight, p.idleErr = nil, pr.err.Error()
		s.c.log.Info("idle check failed; the gateway counts as busy", zap.Error(pr.err))
		s.publish()
		return
	}
	n := pr.n
	p.inflight, p.idleErr, p.idleDetail = &n, "", pr.detail
	if n <= 0 {
		s.c.log.Info("gateway is idle", zap.Duration("after", time.Since(p.deferredSince)))
		if s.c.cfg.Fence != nil {
			s.startFence(p)
			s.publish()
			return
		}
		s.execute(false)
		return
	}
	s.publish()
}

// execute runs the pending restart now.
func (s *run) execute(forced bool) {
	p := s.pend
	if p == nil {
		return
	}
	s.pend = nil
	s.stopTimers()
	s.running = true
	begun := time.Now()
	s.lastAt = begun
	m := s.c.cfg.Method
	if p.method != "" {
		m = p.method
	}
	res := api.RestartResult{
		Reasons:           p.reasons,
		Reason:            JoinReasons(p.reasons, p.requests),
		Sources:           p.sources,
		Requests:          p.requests,
		Method:            string(m),
		DelayMs:           p.delay.Milliseconds(),
		Forced:            forced,
		Coalesced:         p.requests > 1,
		CooldownMsApplied: p.cooldown.Milliseconds(),
		At:                begun,
		Mode:              ModeScheduled,
	}
	switch {
	case p.now:
		res.Mode, res.DelayMs = ModeImmediate, 0
	case p.deferring:
		res.Mode = ModeDeferred
		res.DeferredMs = begun.Sub(p.deferredSince).Milliseconds()
	}
	s.c.log.Info("restarting the gateway", zap.String("reason", res.Reason), zap.String("mode", res.Mode), zap.String("method", res.Method),
		zap.Bool("forced", forced), zap.Int("requests", p.requests))
	if h := s.c.hooks.OnBegin; h != nil {
		h(p.snapshot(false))
	}
	s.publish()
	ctx, r := s.ctx, s.c.r
	s.wg.Go(func() {
		o, fr, err := s.restartFenced(ctx, r, m, p.fence)
		res.OK, res.PID, res.PreviousPID, res.Error, res.Fence = o.OK, o.PID, o.PreviousPID, o.Error, fr
		if err != nil {
			res.OK = false
			res.Error = err.Error()
		}
		res.DurationMs = time.Since(begun).Milliseconds()
		s.ran <- runResult{p: p, res: res, begun: begun}
	})
}

// finished records a restart's result, answers its waiters and promotes the follow-up.
func (s *run) finished(rr runResult) {
	c := s.c
	s.running = false
	res := rr.res
	switch {
	case res.OK:
		c.log.Info("restart done", zap.String("reason", res.Reason), zap.Int("pid", res.PID),
			zap.Int("previous_pid", res.PreviousPID), zap.Int64("duration_ms", res.DurationMs))
	case s.ctx.Err() != nil: // schedd stops: the stop ended the restart, nothing failed
		c.log.Info("restart ended by the stop", zap.String("reason", res.Reason), zap.String("detail", res.Error))
	default:
		c.log.Error("restart failed; the crash backoff takes over", zap.String("reason", res.Reason),
			zap.String("error", res.Error))
	}
	c.remember(res)
	for _, w := range rr.p.waiters {
		w <- outcome{res: res}
	}
	if h := c.hooks.OnEnd; h != nil {
		h(res)
	}
	if f := s.follow; f != nil && s.ctx.Err() == nil {
		s.follow = nil
		s.pend = f
		c.log.Info("the follow-up restart is scheduled", zap.Int("requests", f.requests))
		s.schedule(f, time.Now())
	}
	s.publish()
}

// remember makes res the last restart and adds it to the history.
func (c *Coordinator) remember(res api.RestartResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status.Last = &res
	c.status.History = append(c.status.History, res)
	if n := len(c.status.History); n > historyLen {
		c.status.History = append([]api.RestartResult(nil), c.status.History[n-historyLen:]...)
	}
}

// Recovered records the outcome of a restart that an earlier schedd began and died in
// (R-SUP-04); res.Mode should be ModeRecovered. It may be called before Run.
func (c *Coordinator) Recovered(res api.RestartResult) {
	c.log.Info("restart begun by an earlier schedd completed", zap.String("reason", res.Reason),
		zap.Bool("ok", res.OK), zap.Int("pid", res.PID), zap.Int("previous_pid", res.PreviousPID))
	c.remember(res)
}

// cancelAll answers every waiter of what has not run with ErrStopping.
func (s *run) cancelAll() {
	for _, p := range []*pending{s.pend, s.follow} {
		if p == nil {
			continue
		}
		s.c.log.Info("pending restart cancelled by the stop", zap.Strings("reasons", p.reasons), zap.Int("requests", p.requests))
		for _, w := range p.waiters {
			w <- outcome{err: ErrStopping}
		}
		if f := p.fence; f != nil && f.held {
			ctx, timeout, log, id := s.ctx, s.c.cfg.ProbeTimeout, s.c.log, f.state.SuspensionID
			s.wg.Go(func() { resumeFence(ctx, f.fence, timeout, id, log) })
		}
	}
	s.pend, s.follow = nil, nil
	s.stopTimers()
	s.publish()
}

// publish updates the status snapshot and tells the hook about the pending restart.
func (s *run) publish() {
	c := s.c
	var snap *api.RestartPending
	switch {
	case s.pend != nil:
		p := s.pend.snapshot(false)
		snap = &p
	case s.follow != nil:
		p := s.follow.snapshot(true)
		snap = &p
	}
	c.mu.Lock()
	c.status.Pending = snap
	c.status.InProgress = s.running
	c.mu.Unlock()
	if snap != nil && c.hooks.OnPending != nil {
		c.hooks.OnPending(*snap)
	}
}
