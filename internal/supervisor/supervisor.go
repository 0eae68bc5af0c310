// Package supervisor owns the gateway child process: it starts it, waits for readiness,
// watches its liveness, stops it gracefully (the whole process group, SIGKILL after a
// timeout) and restarts it when it dies, with a backoff that resets after healthy uptime
// and a visible crash_looping state instead of a terminal give-up.
//
// One goroutine, Run, owns the child and every timer about it. Everything else talks to it
// through channels, so the state machine can be driven step by step in a synctest bubble
// with a fake Starter.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/platform"
)

// groupCleanupTimeout bounds the wait for a process group's stragglers after SIGKILL.
const groupCleanupTimeout = 5 * time.Second

// PortWait is how long a start waits for the gateway's ports (Config.Ports) to be free.
const PortWait = 10 * time.Second

// ErrNotRunning is returned by requests made after Run has returned.
var ErrNotRunning = errors.New("supervisor is not running")

// Supervisor runs one gateway. Create it with New, then call Run once.
type Supervisor struct {
	cfg      Config
	log      *zap.Logger
	starter  Starter
	groupOf  func(pid int) (int, error)
	portBusy func(addr string) bool
	rand     func() float64
	onState  func(api.Gateway)
	onDrain  func(time.Duration)
	ring     *OutputRing

	notifyc chan platform.NotifyMessage
	reqc    chan request
	wakec   chan struct{} // a Reconfigure: starts a failed gateway again
	done    chan struct{}

	mu     sync.Mutex // guards status and next; never held across anything that blocks
	status api.Gateway
	next   *Config // from Reconfigure, applied at the next start

	// Owned by the Run goroutine.
	failures  []time.Time // failure times within the crash-loop window
	crashLoop bool
	started   int        // processes started so far
	lastPID   int        // the pid of the previous gateway
	successor *successor // started by an overlapping restart: the next runOnce takes it
}

// Option changes how a Supervisor is built; tests use them to inject seams.
type Option func(*Supervisor)

// WithStarter replaces the process starter (default: real processes).
func WithStarter(s Starter) Option { return func(sv *Supervisor) { sv.starter = s } }

// WithLogger sets the logger (default: none).
func WithLogger(l *zap.Logger) Option { return func(sv *Supervisor) { sv.log = l } }

// WithRand sets the random source for backoff jitter; it must return values in [0, 1).
func WithRand(f func() float64) Option { return func(sv *Supervisor) { sv.rand = f } }

// WithGroupOf replaces the lookup of a notify sender's process group (default:
// platform.ProcessGroup).
func WithGroupOf(f func(pid int) (int, error)) Option { return func(sv *Supervisor) { sv.groupOf = f } }

// WithPortBusy replaces the check of whether the gateway's port is still held (default:
// a connect, then a bind).
func WithPortBusy(f func(addr string) bool) Option { return func(sv *Supervisor) { sv.portBusy = f } }

// OnStateChange registers f to be called, from the supervisor goroutine, with a snapshot
// after every state change. f must not block.
func OnStateChange(f func(api.Gateway)) Option { return func(sv *Supervisor) { sv.onState = f } }

// WithOutputRing keeps every gateway output line in r as well (`schedd logs`).
func WithOutputRing(r *OutputRing) Option { return func(sv *Supervisor) { sv.ring = r } }

// OnStopWait registers f to be called, from the supervisor goroutine, when a stop of the
// gateway begins and whenever the gateway extends it, with the longest the stop can still
// take (until SIGKILL, plus the wait for the group). schedd passes it on to its own
// service manager as EXTEND_TIMEOUT_USEC, so a long drain is not cut short there (R-CHILD-11).
// f must not block.
func OnStopWait(f func(time.Duration)) Option { return func(sv *Supervisor) { sv.onDrain = f } }

// New returns a supervisor for cfg. The config is taken as given (the daemon passes the
// config file's values, defaulted by internal/config); one it cannot run with is refused.
func New(cfg Config, opts ...Option) (*Supervisor, error) {
	if len(cfg.Argv) == 0 {
		return nil, errors.New("gateway command is empty")
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	s := &Supervisor{
		cfg:      cfg,
		log:      zap.NewNop(),
		starter:  PlatformStarter{},
		groupOf:  platform.ProcessGroup,
		portBusy: portInUse,
		rand:     rand.Float64,
		notifyc:  make(chan platform.NotifyMessage, 64),
		reqc:     make(chan request),
		wakec:    make(chan struct{}, 1),
		done:     make(chan struct{}),
		status:   api.Gateway{State: api.GatewayStopped},
	}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Check refuses a config the supervisor cannot run with (New and Reconfigure call it).
func (cfg Config) Check() error {
	var errs []error
	if cfg.StopSignal == nil {
		errs = append(errs, errors.New("gateway stop signal is not set"))
	}
	if cfg.StopTimeout < 0 || cfg.ResetAfter < 0 {
		errs = append(errs, fmt.Errorf("gateway stop timeout %v or reset after %v is negative", cfg.StopTimeout, cfg.ResetAfter))
	}
	if cfg.CrashLoopFailures < 1 || cfg.CrashLoopWindow <= 0 {
		errs = append(errs, fmt.Errorf("gateway crash loop: %d failures in %v", cfg.CrashLoopFailures, cfg.CrashLoopWindow))
	}
	if cfg.MaxLinesPerSecond < 1 {
		errs = append(errs, fmt.Errorf("gateway output: %d lines per second", cfg.MaxLinesPerSecond))
	}
	if l := cfg.Liveness; l.Probe != nil && (l.Every <= 0 || l.Timeout <= 0) {
		errs = append(errs, fmt.Errorf("gateway liveness probe: every %v, timeout %v", l.Every, l.Timeout))
	}
	if l := cfg.Liveness; (l.Probe != nil || l.Watchdog > 0) && l.Failures < 1 {
		errs = append(errs, fmt.Errorf("gateway liveness: %d failures", l.Failures))
	}
	return errors.Join(errs...)
}

// Status returns a snapshot of the gateway's state.
func (s *Supervisor) Status() api.Gateway {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	if st.LastExit != nil {
		e := *st.LastExit
		st.LastExit = &e
	}
	if st.Inflight != nil {
		n := *st.Inflight
		st.Inflight = &n
	}
	return st
}

// HandleNotify passes one message from the gateway's notify socket to the supervisor. It
// blocks until the supervisor takes it, ctx ends, or the supervisor has stopped.
func (s *Supervisor) HandleNotify(ctx context.Context, m platform.NotifyMessage) {
	select {
	case s.notifyc <- m:
	case <-ctx.Done():
	case <-s.done:
	}
}

// Kill escalates a stop in progress: the gateway's process group gets SIGKILL now instead
// of at the stop timeout (the second SIGTERM/SIGINT of an operator who means it).
func (s *Supervisor) Kill(ctx context.Context) error {
	_, err := s.do(ctx, request{kind: reqKill})
	return err
}

// Ping reports whether the supervision loop answers; the systemd watchdog is fed only
// while it does.
func (s *Supervisor) Ping(ctx context.Context) error {
	_, err := s.do(ctx, request{kind: reqPing})
	return err
}

// Restart stops the running gateway gracefully and starts a new one (a fresh PID), then
// waits until the new one is ready or has failed. Called during backoff it starts the
// gateway at once.
func (s *Supervisor) Restart(ctx context.Context) (RestartResult, error) {
	return s.await(ctx, request{kind: reqRestart})
}

// Reload restarts the gateway in process: it sends sig to the gateway's group and waits
// until it is ready again: RELOADING=1 then READY=1 with notify readiness, the readiness
// probe passing again otherwise (at once with readiness none). Not ready again within the
// readiness timeout is a failed start. A gateway that is not ready yet is restarted
// instead (a fresh PID).
func (s *Supervisor) Reload(ctx context.Context, sig os.Signal) (RestartResult, error) {
	return s.await(ctx, request{kind: reqReload, sig: sig})
}

// Reconfigure replaces the configuration; it takes effect at the next start of the gateway.
// A gateway left failed by a no-restart exit code is started again with it.
func (s *Supervisor) Reconfigure(cfg Config) error {
	n, err := New(cfg)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.next = &n.cfg
	s.mu.Unlock()
	select {
	case s.wakec <- struct{}{}:
	default:
	}
	return nil
}

// await sends a restart or reload request and waits for its result.
func (s *Supervisor) await(ctx context.Context, req request) (RestartResult, error) {
	r, err := s.do(ctx, req)
	if err != nil {
		return RestartResult{}, err
	}
	select {
	case res := <-r.result:
		return res, nil
	case <-ctx.Done():
		return RestartResult{}, ctx.Err()
	case <-s.done:
		return RestartResult{}, ErrNotRunning
	}
}

// RestartResult reports the outcome of one Restart.
type RestartResult struct {
	OK          bool
	PID         int // the new gateway's pid (0 when none started)
	PreviousPID int
	Error       string // why it failed, when !OK
}

type reqKind int

const (
	reqPing reqKind = iota
	reqKill
	reqRestart
	reqReload
)

type request struct {
	kind   reqKind
	sig    os.Signal          // reqReload
	result chan RestartResult // reqRestart, reqReload: receives the outcome once
	ack    chan struct{}
}

func (s *Supervisor) do(ctx context.Context, r request) (request, error) {
	r.ack = make(chan struct{})
	if r.kind == reqRestart || r.kind == reqReload {
		r.result = make(chan RestartResult, 1)
	}
	select {
	case s.reqc <- r:
	case <-ctx.Done():
		return r, ctx.Err()
	case <-s.done:
		return r, ErrNotRunning
	}
	select {
	case <-r.ack:
		return r, nil
	case <-ctx.Done():
		return r, ctx.Err()
	case <-s.done:
		return r, ErrNotRunning
	}
}

// Run supervises the gateway until ctx ends, then stops it gracefully and returns nil.
// It must be called once.
func (s *Supervisor) Run(ctx context.Context) error {
	defer close(s.done)
	s.stopStale(ctx)
	var pendingRestarts []request // restart requests waiting for the next ready (or failed) start
	for {
		if ctx.Err() != nil {
			s.stopped()
			failRestarts(pendingRestarts, "schedd is stopping")
			return nil
		}
		out := s.runOnce(ctx, pendingRestarts)
		pendingRestarts = out.pending
		if out.stopped {
			s.stopped()
			failRestarts(pendingRestarts, "schedd is stopping")
			return nil
		}
		if out.restart {
			continue
		}
		delay := waitFailed
		if !out.failed {
			delay = s.nextDelay(out.exit)
		}
		var ok bool
		ok, pendingRestarts = s.wait(ctx, delay, pendingRestarts)
		if !ok {
			s.stopped()
			failRestarts(pendingRestarts, "schedd is stopping")
			return nil
		}
	}
}

func failRestarts(rs []request, why string) {
	for _, r := range rs {
		r.result <- RestartResult{Error: why}
	}
}

// outcome is how one process lifetime ended.
type outcome struct {
	exit    api.Exit
	stopped bool      // ctx ended: do not start again
	restart bool      // stopped for a restart: start again at once, not a failure
	failed  bool      // exited with a no-restart code: wait for a request, not a timer
	pending []request // restart requests still waiting for a ready gateway
}

// runOnce starts one gateway and supervises it until it ends.
func (s *Supervisor) runOnce(ctx context.Context, pending []request) outcome {
	s.mu.Lock()
	if s.next != nil {
		s.cfg, s.next = *s.next, nil
		s.log.Info("new gateway settings in effect")
	}
	s.mu.Unlock()
	s.started++
	prev := s.lastPID
	if s.started > 1 {
		s.update(func(st *api.Gateway) { st.Restarts++ })
	}
	if next := s.successor; next != nil {
		s.successor = nil
		return s.adopt(ctx, next, prev, pending)
	}
	s.update(func(st *api.Gateway) {
		st.State = api.GatewayStarting
		st.PID = 0
		st.StartedAt = time.Now()
		st.ReadySince = time.Time{}
		st.NextStartAt = time.Time{}
		st.StatusText = ""
		st.Inflight = nil
	})
	out, pending, end := s.waitPortFree(ctx, pending)
	if end {
		out.pending = pending
		return out
	}
	proc, output, err := s.start()
	if err != nil {
		e := api.Exit{Reason: api.ExitSpawnFailed, At: time.Now(), Error: err.Error()}
		s.log.Error("gateway could not be started", zap.Strings("command", s.cfg.Argv), zap.Error(err))
		s.recordExit(e)
		failRestarts(pending, "spawn failed: "+err.Error())
		return outcome{exit: e}
	}
	pid := proc.PID()
	s.recordPID(proc)
	s.update(func(st *api.Gateway) { st.PID = pid; st.DownSince = time.Time{} })
	s.log.Info("gateway started", zap.Int("pid", pid), zap.Strings("command", s.cfg.Argv))

	l := &life{s: s, proc: proc, out: output, pid: pid, prevPID: prev, pending: pending}
	return l.run(ctx)
}

// adopt supervises the gateway an overlapping restart started, once its predecessor is
// gone: already ready when it said so before the predecessor was stopped.
func (s *Supervisor) adopt(ctx context.Context, next *successor, prev int, pending []request) outcome {
	pid := next.proc.PID()
	s.recordPID(next.proc)
	s.update(func(st *api.Gateway) {
		st.PID, st.DrainingPID, st.NextStartAt = pid, 0, time.Time{}
		if !next.ready {
			st.State, st.StartedAt, st.ReadySince, st.StatusText, st.Inflight = api.GatewayStarting, next.startedAt, time.Time{}, "", nil
		}
	})
	l := &life{s: s, proc: next.proc, out: next.out, pid: pid, prevPID: prev, pending: pending, preReady: next.ready}
	return l.run(ctx)
}

// start builds the command and starts it. Output lines are logged with the pid.
func (s *Supervisor) start() (Proc, *outputLogger, error) {
	set := make(map[string]string, len(s.cfg.Env)+3)
	for k, v := range s.cfg.Env {
		set[k] = v
	}
	if s.cfg.NotifySocket != "" {
		set["NOTIFY_SOCKET"] = s.cfg.NotifySocket
	}
	if s.cfg.ControlSocket != "" {
		set["SCHEDD_SOCKET"] = s.cfg.ControlSocket
	}
	if s.cfg.Liveness.Watchdog > 0 {
		set["WATCHDOG_USEC"] = strconv.FormatInt(s.cfg.Liveness.Watchdog.Microseconds(), 10)
	}
	out := newOutputLogger(s.log.Named("gateway"), s.cfg.MaxLinesPerSecond, s.ring)
	cmd := platform.Command{
		Argv:   s.cfg.Argv,
		Env:    platform.ChildEnv(platform.WithoutKeys(s.cfg.BaseEnv, s.cfg.Unset), set),
		Dir:    s.cfg.Dir,
		Output: out.line,
	}
	for _, sock := range s.cfg.Sockets {
		cmd.ExtraFiles = append(cmd.ExtraFiles, sock.File)
		cmd.ListenNames = append(cmd.ListenNames, sock.Name)
	}
	proc, err := s.starter.Start(cmd)
	if err != nil {
		out.started(0)
		return nil, nil, err
	}
	out.started(proc.PID())
	return proc, out, nil
}

// nextDelay decides how long to wait before the next start after e, and counts e toward
// the crash loop. The first failure after a healthy run restarts at once; backoff starts
// with the second consecutive failure. A spawn failure or a busy port always waits, so a
// missing binary or a stale listener never becomes a busy loop.
func (s *Supervisor) nextDelay(e api.Exit) time.Duration {
	if !failure(e) {
		return 0
	}
	now := time.Now()
	cut := now.Add(-s.cfg.CrashLoopWindow)
	kept := s.failures[:0]
	for _, t := range s.failures {
		if t.After(cut) {
			kept = append(kept, t)
		}
	}
	s.failures = append(kept, now)
	n := 0
	s.update(func(st *api.Gateway) { st.ConsecutiveFailures++; n = st.ConsecutiveFailures })
	if !s.crashLoop && len(s.failures) >= s.cfg.CrashLoopFailures {
		s.crashLoop = true
		s.log.Error("gateway is crash looping; schedd keeps restarting it with backoff up to the cap",
			zap.Int("failures", len(s.failures)), zap.Duration("window", s.cfg.CrashLoopWindow),
			zap.Duration("max_delay", s.cfg.Backoff.Max), zap.String("last_exit", string(e.Reason)))
	}
	switch {
	case e.Reason == api.ExitSpawnFailed || e.Reason == api.ExitPortInUse:
		return s.cfg.Backoff.Delay(n, s.rand())
	case n <= 1:
		return 0
	default:
		return s.cfg.Backoff.Delay(n-1, s.rand())
	}
}

// waitFailed is the delay of wait for a gateway left failed: until a request.
const waitFailed time.Duration = -1

// wait sleeps d in the backoff (or crash_looping) state, or with d = waitFailed in the
// failed state until a Reconfigure. A restart request ends the wait early. It returns
// false when ctx ends.
func (s *Supervisor) wait(ctx context.Context, d time.Duration, pending []request) (bool, []request) {
	if d == 0 {
		return ctx.Err() == nil, pending
	}
	var timer <-chan time.Time
	var wake <-chan struct{}
	if d == waitFailed {
		select { // a Reconfigure from before the failure is no reason to start again
		case <-s.wakec:
		default:
		}
		wake = s.wakec
		s.update(func(st *api.Gateway) { st.State = api.GatewayFailed; st.PID = 0; st.NextStartAt = time.Time{} })
	} else {
		state := api.GatewayBackoff
		if s.crashLoop {
			state = api.GatewayCrashLooping
		}
		next := time.Now().Add(d)
		s.update(func(st *api.Gateway) { st.State = state; st.PID = 0; st.NextStartAt = next })
		s.log.Info("gateway will be started again", zap.Duration("in", d),
			zap.Int("consecutive_failures", s.Status().ConsecutiveFailures), zap.String("state", string(state)))
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	for {
		select {
		case <-timer:
			return true, pending
		case <-wake:
			s.log.Info("config reloaded; starting the failed gateway again")
			return true, pending
		case <-ctx.Done():
			return false, pending
		case <-s.notifyc: // no gateway: nothing to hear from
		case r := <-s.reqc:
			close(r.ack)
			if r.kind == reqRestart || r.kind == reqReload {
				s.log.Info("restart requested while the gateway is down; starting it now")
				return true, append(pending, r)
			}
		}
	}
}

func (s *Supervisor) stopped() {
	now := time.Now()
	s.update(func(st *api.Gateway) {
		st.State = api.GatewayStopped
		st.PID = 0
		st.NextStartAt = time.Time{}
		st.ReadySince = time.Time{}
		if st.DownSince.IsZero() {
			st.DownSince = now
		}
	})
}

// update changes the status under the lock and reports a state change.
func (s *Supervisor) update(f func(*api.Gateway)) {
	s.mu.Lock()
	prev := s.status
	f(&s.status)
	trackHistory(prev, &s.status)
	snap := s.status
	s.mu.Unlock()
	if prev.State != snap.State && s.onState != nil {
		s.onState(snap)
	}
}

// recordExit records how a gateway process, or an attempt to start one, ended. Nothing
// runs now: what the process said of itself (its STATUS= text, its in-flight count) and
// its ready time go with it, and the gateway is down since its exit, or since the first
// attempt when no process ran since the last one.
func (s *Supervisor) recordExit(e api.Exit) {
	s.update(func(st *api.Gateway) {
		st.LastExit = &e
		st.ReadySince = time.Time{}
		st.StatusText = ""
		st.Inflight = nil
		if st.DownSince.IsZero() {
			st.DownSince = e.At
			if st.PID == 0 && !st.StartedAt.IsZero() { // no process: since this attempt began
				st.DownSince = st.StartedAt
			}
		}
	})
}

// healthy is called once the gateway has been ready for ResetAfter.
func (s *Supervisor) healthy() {
	if s.crashLoop {
		s.log.Info("gateway recovered from crash looping", zap.Duration("ready_for", s.cfg.ResetAfter))
	}
	s.crashLoop = false
	s.failures = s.failures[:0]
	s.update(func(st *api.Gateway) { st.ConsecutiveFailures = 0 })
}

// describeExit turns a platform exit status into an Exit with the given default reason.
func describeExit(ps platform.ExitStatus, pid int) api.Exit {
	e := api.Exit{At: time.Now(), PID: pid}
	switch {
	case ps.Signaled:
		e.Reason = api.ExitSignal
		e.Signal = ps.SignalName
		if e.Signal == "" {
			e.Signal = fmt.Sprintf("signal %d", ps.Signal)
		}
	default:
		e.Reason = api.ExitExited
		code := ps.Code
		e.Code = &code
	}
	return e
}
