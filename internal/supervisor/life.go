package supervisor

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/platform"
)

// Readiness probes are polled from readinessPollMin, doubling to readinessPollMax; each
// check is bounded by readinessCheckTimeout.
const (
	readinessPollMin      = 50 * time.Millisecond
	readinessPollMax      = time.Second
	readinessCheckTimeout = 5 * time.Second
)

// life is one gateway process from start to exit. It runs on the Run goroutine.
type life struct {
	s       *Supervisor
	proc    Proc
	out     *outputLogger
	pid     int
	prevPID int
	pending []request

	startedAt time.Time
	ready     bool
	reloading bool // signalled to restart in process, waiting for RELOADING=1
	handover  int  // the pid of the ready successor this gateway is stopped for (overlap)
	preReady  bool // a successor that sent READY=1 before its predecessor was stopped

	readyTimer *time.Timer // readiness deadline
	readyc     chan struct{}
	downc      chan struct{} // a signal restart's probe failed, or did not within SignalDownWait
	lastProbe  chan error    // latest readiness probe failure, for the timeout message

	resetTimer *time.Timer // healthy uptime

	wdInterval time.Duration
	wdTimer    *time.Timer
	wdDue      time.Time // when wdTimer is set to fire
	wdMisses   int

	liveTicker   *time.Ticker
	liveResults  chan liveResult
	liveInFlight bool
	liveFails    int

	cancel context.CancelFunc // ends the probe goroutines
	wg     sync.WaitGroup
}

// chanOf returns t's channel, or nil (never ready) when t is nil.
func chanOf(t *time.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C
}

func (l *life) run(ctx context.Context) outcome {
	s := l.s
	l.startedAt = time.Now()
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel = cancel
	defer l.finish()

	rc := s.cfg.Readiness
	if l.preReady || !rc.Notify && rc.Probe == nil {
		l.becomeReady()
	} else {
		l.awaitReady(pctx, 0)
	}
	l.wdInterval = s.cfg.Liveness.Watchdog
	l.liveResults = make(chan liveResult, 1)

	for {
		var tick <-chan time.Time
		if l.liveTicker != nil {
			tick = l.liveTicker.C
		}
		select {
		case <-l.proc.Done():
			return l.exited()
		case m := <-s.notifyc:
			if !l.accept(m) {
				continue
			}
			if out, end := l.handleNotify(m); end {
				return out
			}
		case <-l.readyc:
			if !l.ready {
				l.becomeReady()
			}
		case <-l.downc:
			l.downSeen()
		case <-chanOf(l.readyTimer):
			detail := fmt.Sprintf("not ready within %s", rc.Timeout)
			select {
			case err := <-l.lastProbe:
				detail += ": " + err.Error()
			default:
			}
			s.log.Error("gateway did not become ready in time; stopping it", zap.Int("pid", l.pid),
				zap.Duration("timeout", rc.Timeout), zap.String("detail", detail))
			return l.stop(api.ExitReadinessTimeout, detail)
		case <-chanOf(l.resetTimer):
			l.resetTimer = nil
			s.healthy()
		case <-chanOf(l.wdTimer):
			if late := time.Since(l.wdDue); late > l.wdInterval {
				// More than a whole period late: schedd itself was not running (suspend,
				// a paused VM or cgroup), so the gateway could not be heard either (R-ENV-02).
				s.log.Warn("schedd was not running for a while; the missed watchdog period is not counted",
					zap.Int("pid", l.pid), zap.Duration("gap", late))
				l.rearmWatchdog()
				continue
			}
			l.wdMisses++
			missed := time.Duration(l.wdMisses) * l.wdInterval
			if l.wdMisses >= s.cfg.Liveness.Failures {
				detail := fmt.Sprintf("no WATCHDOG=1 for %s", missed)
				s.log.Error("gateway watchdog expired; stopping it", zap.Int("pid", l.pid), zap.String("detail", detail))
				return l.stop(api.ExitLivenessTimeout, detail)
			}
			s.log.Warn("gateway missed its watchdog ping", zap.Int("pid", l.pid),
				zap.Duration("silent_for", missed), zap.Int("misses", l.wdMisses),
				zap.Int("kill_after", s.cfg.Liveness.Failures))
			l.rearmWatchdog()
		case <-tick:
			if !l.liveInFlight && l.ready {
				l.liveInFlight = true
				l.wg.Go(func() { l.checkLiveness(pctx) })
			}
		case res := <-l.liveResults:
			l.liveInFlight = false
			if out, end := l.liveness(res); end {
				return out
			}
		case <-ctx.Done():
			return l.stop(api.ExitStop, "")
		case r := <-s.reqc:
			close(r.ack)
			switch {
			case r.kind == reqReload && l.ready:
				l.reload(pctx, r)
			case r.kind == reqRestart && l.canOverlap():
				if out, end := l.overlap(ctx, r); end {
					return out
				}
			case r.kind == reqRestart || r.kind == reqReload:
				l.pending = append(l.pending, r)
				return l.stop(api.ExitRestart, "")
			}
		}
	}
}

// finish stops the probe goroutines and timers of this life.
func (l *life) finish() {
	l.cancel()
	l.wg.Wait()
	for _, t := range []*time.Timer{l.readyTimer, l.resetTimer, l.wdTimer} {
		if t != nil {
			t.Stop()
		}
	}
	if l.liveTicker != nil {
		l.liveTicker.Stop()
	}
}

// accept reports whether m comes from this gateway or one of its descendants in its
// process group. A message without a known sender is accepted: the socket is private.
func (l *life) accept(m platform.NotifyMessage) bool {
	if m.PID == 0 || m.PID == l.pid {
		return true
	}
	if g, err := l.s.groupOf(m.PID); err == nil && g == l.pid {
		return true
	}
	l.s.log.Debug("ignored a notify message from outside the gateway's process group", zap.Int("sender", m.PID))
	return false
}

// handleNotify applies one sd_notify message. It returns end=true with the outcome when
// the message ends this life (WATCHDOG=trigger).
func (l *life) handleNotify(m platform.NotifyMessage) (outcome, bool) {
	s := l.s
	f := m.Fields
	if v, ok := f["STATUS"]; ok {
		s.update(func(st *api.Gateway) { st.StatusText = v })
	}
	if v, ok := f["X_SCHEDD_INFLIGHT"]; ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			s.update(func(st *api.Gateway) { st.Inflight = &n })
		}
	}
	if v, ok := f["EXTEND_TIMEOUT_USEC"]; ok && !l.ready && l.readyTimer != nil {
		if us, err := strconv.ParseInt(v, 10, 64); err == nil && us > 0 {
			l.readyTimer.Reset(time.Duration(us) * time.Microsecond)
			s.log.Info("gateway extended its start timeout", zap.Int("pid", l.pid), zap.Int64("usec", us))
		}
	}
	if v, ok := f["WATCHDOG_USEC"]; ok {
		if us, err := strconv.ParseInt(v, 10, 64); err == nil && us > 0 {
			l.wdInterval = time.Duration(us) * time.Microsecond
			l.armWatchdog()
		}
	}
	switch f["WATCHDOG"] {
	case "1":
		l.wdMisses = 0
		l.armWatchdog()
	case "trigger":
		s.log.Error("gateway asked to be killed (WATCHDOG=trigger)", zap.Int("pid", l.pid))
		return l.stop(api.ExitLivenessTimeout, "WATCHDOG=trigger"), true
	}
	if f["STOPPING"] == "1" {
		s.log.Info("gateway reports it is stopping", zap.Int("pid", l.pid))
	}
	if f["RELOADING"] == "1" {
		s.log.Info("gateway reports it is reloading", zap.Int("pid", l.pid))
		l.reloading = false
	}
	if f["READY"] == "1" && !l.ready && !l.reloading && s.cfg.Readiness.Notify {
		l.becomeReady()
	}
	return outcome{}, false
}

// armWatchdog (re)starts the watchdog timer once the gateway is ready.
func (l *life) armWatchdog() {
	if !l.ready || l.wdInterval <= 0 {
		return
	}
	if l.wdTimer == nil {
		l.wdDue = time.Now().Add(l.wdInterval)
		l.wdTimer = time.NewTimer(l.wdInterval)
		return
	}
	l.rearmWatchdog()
}

// rearmWatchdog sets the armed watchdog timer a full period from now.
func (l *life) rearmWatchdog() {
	l.wdDue = time.Now().Add(l.wdInterval)
	l.wdTimer.Reset(l.wdInterval)
}

func (l *life) becomeReady() {
	s := l.s
	l.ready = true
	now := time.Now()
	if l.readyTimer != nil {
		l.readyTimer.Stop()
		l.readyTimer = nil
	}
	l.readyc, l.downc = nil, nil
	s.update(func(st *api.Gateway) { st.State = api.GatewayReady; st.ReadySince = now })
	s.log.Info("gateway ready", zap.Int("pid", l.pid), zap.Duration("after", now.Sub(l.startedAt)))
	for _, r := range l.pending {
		prev := l.prevPID
		if r.kind == reqReload {
			prev = l.pid
		}
		r.result <- RestartResult{OK: true, PID: l.pid, PreviousPID: prev}
	}
	l.pending = nil
	if l.resetTimer != nil {
		l.resetTimer.Stop()
	}
	l.resetTimer = time.NewTimer(s.cfg.ResetAfter)
	l.armWatchdog()
	if s.cfg.Liveness.Probe != nil && l.liveTicker == nil {
		l.liveTicker = time.NewTicker(s.cfg.Liveness.Every)
	}
}

// reload signals a ready gateway to restart in process and waits, like a start, for it to
// be ready again (the readiness timeout applies). With a readiness probe, ready again means
// that the probe failed (within SignalDownWait) and then passed: a probe answered in the
// moment before the gateway begins its restart is not taken for the end of it.
func (l *life) reload(ctx context.Context, r request) {
	s := l.s
	s.log.Info("asking the gateway to restart in process", zap.Int("pid", l.pid),
		zap.String("signal", platform.SignalName(r.sig)))
	if err := l.signal(r.sig); err != nil {
		s.log.Warn("could not signal the gateway", zap.Int("pid", l.pid), zap.Error(err))
	}
	l.pending = append(l.pending, r)
	rc := s.cfg.Readiness
	if l.preReady || !rc.Notify && rc.Probe == nil {
		l.becomeReady()
		return
	}
	l.ready = false
	l.reloading = rc.Notify
	l.startedAt = time.Now()
	s.update(func(st *api.Gateway) { st.State = api.GatewayStarting; st.ReadySince = time.Time{} })
	l.awaitReady(ctx, s.cfg.SignalDownWait)
}

// awaitReady arms the wait for readiness: the readiness timeout and the probe's poller.
// With a probe and downWait > 0 the probe must first fail (waitDown), and the timeout
// starts only then (downSeen).
func (l *life) awaitReady(ctx context.Context, downWait time.Duration) {
	rc := l.s.cfg.Readiness
	if rc.Probe == nil {
		downWait = 0
	}
	if rc.Timeout > 0 && downWait == 0 {
		l.readyTimer = time.NewTimer(rc.Timeout)
	}
	if rc.Probe == nil {
		return
	}
	l.readyc = make(chan struct{}, 1)
	l.lastProbe = make(chan error, 1)
	if downWait > 0 {
		l.downc = make(chan struct{}, 1)
	}
	l.wg.Go(func() {
		if downWait > 0 {
			l.waitDown(ctx, downWait)
			l.downc <- struct{}{}
		}
		l.pollReadiness(ctx)
	})
}

// waitDown polls the readiness probe until it fails, for at most d. A probe that never
// fails means the gateway restarted too fast to be seen down, or did not restart at all:
// the restart is taken as done once the probe passes, with a warning.
func (l *life) waitDown(ctx context.Context, d time.Duration) {
	s := l.s
	dctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		cctx, ccancel := context.WithTimeout(dctx, readinessCheckTimeout)
		err := s.cfg.Readiness.Probe.Check(cctx)
		ccancel()
		if dctx.Err() != nil { // a check cut by the deadline says nothing of the gateway
			break
		}
		if err != nil {
			s.log.Info("gateway is restarting in process: its readiness probe fails", zap.Int("pid", l.pid), zap.Error(err))
			return
		}
		t := time.NewTimer(readinessPollMin)
		select {
		case <-t.C:
		case <-dctx.Done():
			t.Stop()
		}
		if dctx.Err() != nil {
			break
		}
	}
	if ctx.Err() == nil {
		s.log.Warn("the readiness probe did not fail after the restart signal; taking the restart as done once it passes",
			zap.Int("pid", l.pid), zap.Duration("signal_down_wait", d))
	}
}

// downSeen starts the readiness wait of a signal restart once its probe failed, or once
// SignalDownWait ran out without a failure.
func (l *life) downSeen() {
	l.downc = nil
	if rc := l.s.cfg.Readiness; !l.ready && rc.Timeout > 0 {
		l.readyTimer = time.NewTimer(rc.Timeout)
	}
}

func (l *life) pollReadiness(ctx context.Context) {
	delay := readinessPollMin
	for {
		cctx, cancel := context.WithTimeout(ctx, readinessCheckTimeout)
		err := l.s.cfg.Readiness.Probe.Check(cctx)
		cancel()
		if err == nil {
			l.readyc <- struct{}{}
			return
		}
		select { // keep only the latest failure
		case <-l.lastProbe:
		default:
		}
		l.lastProbe <- err
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		delay = min(2*delay, readinessPollMax)
	}
}

// liveResult is the outcome of one liveness check and how long it took.
type liveResult struct {
	err  error
	took time.Duration
}

func (l *life) checkLiveness(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, l.s.cfg.Liveness.Timeout)
	defer cancel()
	start := time.Now()
	err := l.s.cfg.Liveness.Probe.Check(cctx)
	select {
	case l.liveResults <- liveResult{err: err, took: time.Since(start)}:
	case <-ctx.Done():
	}
}

// liveness applies one liveness check result.
func (l *life) liveness(res liveResult) (outcome, bool) {
	s := l.s
	err := res.err
	if late := res.took - s.cfg.Liveness.Timeout; err != nil && late > s.cfg.Liveness.Every {
		// A check bounded by its timeout that ends a whole period past it was frozen with
		// schedd (suspend, a paused VM or cgroup): it says nothing of the gateway (R-ENV-02).
		s.log.Warn("schedd was not running for a while; the liveness check cut by the gap is not counted",
			zap.Int("pid", l.pid), zap.Duration("took", res.took), zap.Error(err))
		return outcome{}, false
	}
	if err == nil {
		if l.liveFails > 0 {
			s.log.Info("gateway liveness check passes again", zap.Int("pid", l.pid), zap.Int("after_failures", l.liveFails))
		}
		l.liveFails = 0
		return outcome{}, false
	}
	l.liveFails++
	if l.liveFails >= s.cfg.Liveness.Failures {
		detail := fmt.Sprintf("%d liveness checks failed in a row: %v", l.liveFails, err)
		s.log.Error("gateway is not alive; stopping it", zap.Int("pid", l.pid), zap.String("detail", detail))
		return l.stop(api.ExitLivenessTimeout, detail), true
	}
	s.log.Warn("gateway liveness check failed", zap.Int("pid", l.pid), zap.Int("failures", l.liveFails),
		zap.Int("kill_after", s.cfg.Liveness.Failures), zap.Error(err))
	return outcome{}, false
}

// exited handles a gateway that ended without being asked to.
func (l *life) exited() outcome {
	s := l.s
	e := describeExit(l.proc.ExitStatus(), l.pid)
	uptime := time.Since(l.startedAt)
	// First: once the output pipes are drained, the last lines are in (however many the
	// rate cap kept from the log) and the count of dropped ones is logged.
	l.cleanupGroup()
	last := l.out.lastLines()
	fields := []zap.Field{zap.Int("pid", l.pid), zap.String("reason", string(e.Reason)),
		zap.Duration("uptime", uptime), zap.Bool("was_ready", l.ready)}
	if len(last) > 0 {
		fields = append(fields, zap.Strings("last_lines", last))
	}
	switch {
	case e.Reason == api.ExitSignal:
		s.log.Warn("gateway was killed by a signal", append(fields, zap.String("signal", e.Signal))...)
	case e.Code != nil && *e.Code == 0:
		s.log.Warn("gateway exited cleanly without a stop request; restarting it", fields...)
	default:
		s.log.Warn("gateway exited", append(fields, zap.Intp("code", e.Code))...)
	}
	t := time.NewTimer(s.cfg.StopTimeout)
	defer t.Stop()
	later := l.adopted().wait(t.C, false)
	failed := e.Code != nil && slices.Contains(s.cfg.NoRestartExitCodes, *e.Code)
	if failed {
		e.Output = last
		s.log.Error("gateway exited with a code that means do not restart; it stays failed until schedd restart or a config reload",
			zap.Int("pid", l.pid), zap.Int("code", *e.Code))
	}
	s.recordExit(e)
	failRestarts(l.pending, "gateway exited before it was ready ("+exitText(e)+")")
	return outcome{exit: e, pending: later, failed: failed}
}

// stop stops the gateway gracefully: the stop signal to the whole group (or to its own
// pid with StopMain), SIGKILL to the whole group at the stop timeout (or at once when Kill escalates), then every straggler in the group.
func (l *life) stop(reason api.ExitReason, detail string) outcome {
	s := l.s
	if l.handover != 0 {
		// The new gateway serves already: it is the gateway now; this one drains.
		next, now := l.handover, time.Now()
		s.update(func(st *api.Gateway) {
			st.PID, st.NextPID, st.DrainingPID = next, 0, l.pid
			st.StartedAt, st.ReadySince, st.StatusText, st.Inflight = now, now, "", nil
		})
		if s.onState != nil { // ready throughout, yet a new gateway: a restart ended here
			s.onState(s.Status())
		}
	} else {
		s.update(func(st *api.Gateway) { st.State = api.GatewayStopping })
	}
	s.log.Info("stopping gateway", zap.Int("pid", l.pid), zap.String("reason", string(reason)),
		zap.String("signal", platform.SignalName(s.cfg.StopSignal)), zap.String("scope", l.scope()),
		zap.Duration("timeout", s.cfg.StopTimeout))
	if err := l.signal(s.cfg.StopSignal); err != nil {
		s.log.Warn("could not signal the gateway", zap.Int("pid", l.pid), zap.Error(err))
	}
	adopted := l.adopted()
	adopted.round(false)
	t := time.NewTimer(s.cfg.StopTimeout)
	defer t.Stop()
	s.stopWait(s.cfg.StopTimeout)
	timedOut, killed := false, false
	kill := func(why string) {
		if killed {
			return
		}
		killed = true
		s.log.Warn(why, zap.Int("pid", l.pid))
		if err := l.proc.Kill(); err != nil {
			s.log.Warn("could not kill the gateway's process group", zap.Int("pid", l.pid), zap.Error(err))
		}
	}
wait:
	for {
		select {
		case <-l.proc.Done():
			break wait
		case <-t.C:
			timedOut = true
			kill(fmt.Sprintf("gateway did not stop within %s; killing its process group", s.cfg.StopTimeout))
		case m := <-s.notifyc:
			if !l.accept(m) {
				continue
			}
			if v, ok := m.Fields["STATUS"]; ok {
				s.update(func(st *api.Gateway) { st.StatusText = v })
			}
			if v, ok := m.Fields["EXTEND_TIMEOUT_USEC"]; ok && !killed {
				if us, err := strconv.ParseInt(v, 10, 64); err == nil && us > 0 {
					t.Reset(time.Duration(us) * time.Microsecond)
					s.stopWait(time.Duration(us) * time.Microsecond)
					s.log.Info("gateway extended its stop timeout", zap.Int("pid", l.pid), zap.Int64("usec", us))
				}
			}
		case r := <-s.reqc:
			close(r.ack)
			switch r.kind {
			case reqKill:
				kill("stop escalated; killing the gateway's process group now")
			case reqRestart, reqReload:
				l.pending = append(l.pending, r)
			}
		}
	}
	e := describeExit(l.proc.ExitStatus(), l.pid)
	e.Reason, e.Error = reason, detail
	if timedOut && (reason == api.ExitStop || reason == api.ExitRestart) {
		e.Reason = api.ExitKilledAfterTimeout
	}
	s.log.Info("gateway stopped", zap.Int("pid", l.pid), zap.String("reason", string(e.Reason)),
		zap.String("status", exitText(e)))
	l.cleanupGroup()
	deadline := t.C
	if killed {
		deadline = nil
	}
	l.pending = append(l.pending, adopted.wait(deadline, killed)...)
	s.recordExit(e)
	out := outcome{exit: e}
	switch reason {
	case api.ExitStop:
		out.stopped = true
		failRestarts(l.pending, "schedd is stopping")
		l.pending = nil
	case api.ExitRestart:
		out.restart = true
	default:
		failRestarts(l.pending, "gateway failed: "+detail)
		l.pending = nil
	}
	out.pending = l.pending
	return out
}

// signal sends sig to the gateway's group, or to its own pid alone with StopMain.
func (l *life) signal(sig os.Signal) error {
	if l.s.cfg.StopMain {
		return l.proc.SignalLeader(sig)
	}
	return l.proc.Signal(sig)
}

// scope names where signal sends, for the logs.
func (l *life) scope() string {
	if l.s.cfg.StopMain {
		return "main"
	}
	return "group"
}

// stopWait reports that the gateway may take up to d more before SIGKILL.
func (s *Supervisor) stopWait(d time.Duration) {
	if s.onDrain != nil {
		s.onDrain(d + groupCleanupTimeout)
	}
}

// cleanupGroup makes sure no process of the gateway's group outlives it, so the next
// gateway never meets a stale one holding its port or lock.
func (l *life) cleanupGroup() {
	ctx, cancel := context.WithTimeout(context.Background(), groupCleanupTimeout)
	defer cancel()
	if err := l.proc.KillGroupAndWait(ctx); err != nil {
		l.s.log.Warn("processes of the gateway's group survived", zap.Int("pgid", l.pid), zap.Error(err))
	} else {
		l.s.forgetPID()
	}
	if err := l.proc.Release(); err != nil {
		l.s.log.Debug("release gateway process", zap.Int("pid", l.pid), zap.Error(err))
	}
	l.out.close() // the output has ended: log the count of lines dropped now
	l.s.lastPID = l.pid
}

func exitText(e api.Exit) string {
	switch {
	case e.Signal != "":
		return "signal " + e.Signal
	case e.Code != nil:
		return "exit code " + strconv.Itoa(*e.Code)
	}
	return string(e.Reason)
}
