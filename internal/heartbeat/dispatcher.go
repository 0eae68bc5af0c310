package heartbeat

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// Dispatcher timing (upstream heartbeat-wake.ts).
const (
	// DefaultCoalesce is how long a wake request waits for others to merge with it.
	DefaultCoalesce = 250 * time.Millisecond
	// RetryDelay is the cooldown before a busy or failed wake runs again. Sooner requests
	// cannot pre-empt it.
	RetryDelay = time.Second
)

// Skip reasons a run may report.
const (
	SkipDisabled         = "disabled"
	SkipNotDue           = "not-due"
	SkipQuietHours       = "quiet-hours"
	SkipRequestsInFlight = "requests-in-flight"
	SkipGatewayNotReady  = "gateway-not-ready"
	SkipAlertsDisabled   = "alerts-disabled"
	SkipMinSpacing       = "min-spacing"
	SkipFlood            = "flood"
	SkipInProgress       = "in-progress"
)

// IsBusyReason reports whether a skip reason means "busy, try again in a second". The
// dispatcher re-queues such wakes with RetryDelay.
func IsBusyReason(r string) bool {
	switch r {
	case SkipRequestsInFlight, "cron-in-progress", "lanes-busy":
		return true
	}
	return false
}

// Wake is one coalesced wake handed to the handler.
type Wake struct {
	Reason      string // normalized: never blank
	AgentID     string // "" = every agent
	SessionKey  string // "" = the agent's configured session
	RequestedAt time.Time
}

func (w Wake) key() string { return w.AgentID + "::" + w.SessionKey }

// RunResult is what a handler reports for one wake.
type RunResult struct {
	Status   api.RunStatus
	Reason   string // for skipped and failed
	Duration time.Duration
}

// WakeHandler runs one wake. A skipped result with a busy reason (IsBusyReason) re-queues
// that wake after RetryDelay; an error (or a panic) re-queues the whole batch after
// RetryDelay. ctx ends when the dispatcher closes.
type WakeHandler func(ctx context.Context, w Wake) (RunResult, error)

type timerKind uint8

const (
	timerNormal timerKind = iota
	timerRetry
)

type pendingWake struct {
	w        Wake
	priority int
}

// registration gives each SetHandler call an identity, so a stale disposer can tell that
// the handler it registered has been replaced.
type registration struct{ h WakeHandler }

// Dispatcher coalesces wake requests and calls one registered handler, one batch at a
// time. It reproduces upstream's wake state machine:
//
//   - requests are keyed by agent::session; a pending wake is replaced only by a request
//     of higher priority, or of equal priority made at the same time or later;
//   - a request arms the single timer after its coalescing delay; a sooner request
//     pre-empts a later normal timer, a later one never delays an earlier timer, and a
//     retry timer is never pre-empted;
//   - when the timer fires every pending wake is run, sequentially; a busy skip re-queues
//     its wake with its reason, a handler error re-queues the whole batch, both after
//     RetryDelay;
//   - a timer that fires while a batch runs is parked and fires at the next multiple of its
//     delay after the batch ends (upstream re-arms it while running; parking keeps those
//     instants without spinning on zero-delay timers);
//   - registering a handler clears any timer (including a stale retry cooldown) and the
//     running state of an interrupted lifecycle; a batch still running for an older
//     handler hands the wakes it has not finished to the new one and never touches the
//     new lifecycle's state.
//
// The zero value is not usable; call NewDispatcher. Close stops it.
type Dispatcher struct {
	mu        sync.Mutex
	reg       *registration
	gen       uint64
	pending   map[string]*pendingWake
	order     []string // insertion order of pending keys: batches run in request order
	scheduled bool
	running   bool

	armed   bool        // a timer exists, real or parked
	timer   *time.Timer // nil while parked
	timerID uint64      // invalidates callbacks of stopped timers
	dueAt   time.Time
	delay   time.Duration
	kind    timerKind

	closed bool
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// batches feeds a long-lived runner goroutine (started on the first batch), so batches
	// do not each pay for a fresh goroutine's stack growth.
	batches       chan batchJob
	runnerStarted bool
}

type batchJob struct {
	gen   uint64
	h     WakeHandler
	batch []Wake
	delay time.Duration
}

// NewDispatcher returns an idle dispatcher with no handler.
func NewDispatcher() *Dispatcher {
	ctx, cancel := context.WithCancel(context.Background())
	return &Dispatcher{pending: make(map[string]*pendingWake), ctx: ctx, cancel: cancel, batches: make(chan batchJob)}
}

// SetHandler registers h (nil clears) and returns a disposer that clears this
// registration only: once another handler was registered or cleared, the disposer does
// nothing. Registering a non-nil handler drops any armed timer and the running state of an
// interrupted lifecycle; pending wakes then run after DefaultCoalesce.
func (d *Dispatcher) SetHandler(h WakeHandler) (dispose func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	gen := d.gen
	var reg *registration
	if h != nil {
		reg = &registration{h: h}
	}
	d.reg = reg
	if reg != nil {
		d.disarm()
		d.running = false
		d.scheduled = false
	}
	if d.reg != nil && len(d.pending) > 0 {
		d.schedule(DefaultCoalesce, timerNormal)
	}
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.gen != gen || d.reg != reg {
			return
		}
		d.gen++
		d.reg = nil
	}
}

// Request queues w and arms the timer to fire after coalesce (negative means 0). The
// reason is normalized and agent and session are trimmed. With no handler registered the
// wake stays pending until one is.
func (d *Dispatcher) Request(w Wake, coalesce time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.queue(w)
	d.schedule(coalesce, timerNormal)
}

// retry queues w as a busy retry: it runs after RetryDelay unless a normal timer is due
// sooner (exactly what a busy skip inside a batch does).
func (d *Dispatcher) retry(w Wake) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	w.RequestedAt = time.Time{}
	d.queue(w)
	d.schedule(RetryDelay, timerRetry)
}

// HasHandler reports whether a handler is registered.
func (d *Dispatcher) HasHandler() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reg != nil
}

// HasPending reports whether wakes are pending, a timer is armed, or a run is scheduled.
func (d *Dispatcher) HasPending() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pending) > 0 || d.armed || d.scheduled
}

// Close stops the timer, cancels the context handlers run with, and waits for running
// batches to return. Later requests are dropped.
func (d *Dispatcher) Close() {
	d.mu.Lock()
	d.closed = true
	d.disarm()
	d.cancel()
	d.mu.Unlock()
	d.wg.Wait()
}

// queue merges w into the pending set. Caller holds mu.
func (d *Dispatcher) queue(w Wake) {
	w.Reason = NormalizeReason(w.Reason)
	w.AgentID = strings.TrimSpace(w.AgentID)
	w.SessionKey = strings.TrimSpace(w.SessionKey)
	if w.RequestedAt.IsZero() {
		w.RequestedAt = time.Now()
	}
	next := &pendingWake{w: w, priority: Priority(w.Reason)}
	k := w.key()
	prev, ok := d.pending[k]
	if !ok {
		d.pending[k] = next
		d.order = append(d.order, k)
		return
	}
	if next.priority > prev.priority ||
		(next.priority == prev.priority && !next.w.RequestedAt.Before(prev.w.RequestedAt)) {
		d.pending[k] = next
	}
}

// takePending empties the pending set and returns it in request order. Caller holds mu.
func (d *Dispatcher) takePending() []Wake {
	batch := make([]Wake, 0, len(d.order))
	for _, k := range d.order {
		batch = append(batch, d.pending[k].w)
	}
	clear(d.pending)
	d.order = d.order[:0]
	return batch
}

// schedule arms the timer for now+delay unless an armed timer wins. Caller holds mu.
func (d *Dispatcher) schedule(delay time.Duration, kind timerKind) {
	delay = max(delay, 0)
	now := time.Now()
	due := now.Add(delay)
	if d.armed {
		if d.kind == timerRetry {
			return // the retry cooldown is a hard minimum
		}
		if !d.effectiveDue(now).After(due) {
			return // the armed timer fires sooner or at the same time
		}
		d.disarm()
	}
	d.arm(now, delay, kind)
}

// effectiveDue is when the armed timer fires next. A parked timer ticks every d.delay
// from its first due time (upstream re-arms it on every tick while a batch runs).
func (d *Dispatcher) effectiveDue(now time.Time) time.Time {
	if d.timer != nil || !d.dueAt.Before(now) {
		return d.dueAt
	}
	if d.delay <= 0 {
		return now
	}
	n := (now.Sub(d.dueAt) + d.delay - 1) / d.delay
	return d.dueAt.Add(n * d.delay)
}

func (d *Dispatcher) arm(now time.Time, delay time.Duration, kind timerKind) {
	d.armed = true
	d.delay = delay
	d.kind = kind
	d.dueAt = now.Add(delay)
	d.startTimer(delay)
}

func (d *Dispatcher) startTimer(after time.Duration) {
	d.timerID++
	id := d.timerID
	d.timer = time.AfterFunc(after, func() { d.fire(id) })
}

// park records a timer that fired while a batch runs. Caller holds mu.
func (d *Dispatcher) park(now time.Time, delay time.Duration, kind timerKind) {
	d.armed = true
	d.timer = nil
	d.delay = delay
	d.kind = kind
	d.dueAt = now.Add(delay)
}

// unpark turns a parked timer into a real one at its next tick. Caller holds mu.
func (d *Dispatcher) unpark(now time.Time) {
	if !d.armed || d.timer != nil {
		return
	}
	due := d.effectiveDue(now)
	d.dueAt = due
	d.startTimer(due.Sub(now))
}

func (d *Dispatcher) disarm() {
	if d.timer != nil {
		d.timer.Stop()
	}
	d.timer = nil
	d.armed = false
	d.timerID++
}

func (d *Dispatcher) fire(id uint64) {
	d.mu.Lock()
	if d.closed || d.timer == nil || id != d.timerID {
		d.mu.Unlock()
		return
	}
	delay, kind := d.delay, d.kind
	d.timer = nil
	d.armed = false
	d.timerID++
	d.scheduled = false
	reg := d.reg
	if reg == nil {
		d.mu.Unlock() // pending wakes wait for a handler
		return
	}
	if d.running {
		d.scheduled = true
		d.park(time.Now(), delay, kind)
		d.mu.Unlock()
		return
	}
	job := batchJob{gen: d.gen, h: reg.h, batch: d.takePending(), delay: delay}
	d.running = true
	if !d.runnerStarted {
		d.runnerStarted = true
		d.wg.Add(1)
		go d.runner()
	}
	select {
	case d.batches <- job: // the runner is idle
		d.mu.Unlock()
	default:
		// The runner is still inside a batch of a replaced handler: run this one here.
		d.wg.Add(1)
		d.mu.Unlock()
		defer d.wg.Done()
		d.runBatch(d.ctx, job)
	}
}

// runner runs batches handed over by fire until Close.
func (d *Dispatcher) runner() {
	defer d.wg.Done()
	for {
		select {
		case job := <-d.batches:
			d.runBatch(d.ctx, job)
		case <-d.ctx.Done():
			return
		}
	}
}

func (d *Dispatcher) runBatch(ctx context.Context, job batchJob) {
	gen, h, batch, delay := job.gen, job.h, job.batch, job.delay
	for i, w := range batch {
		res, err := callHandler(ctx, h, w)
		busy := err == nil && res.Status == api.RunSkipped && IsBusyReason(res.Reason)
		d.mu.Lock()
		if d.gen != gen {
			// The handler was replaced or cleared while this call ran: hand what is not
			// finished to the current lifecycle and leave its state alone.
			rest := batch[i+1:]
			if err != nil || busy {
				rest = batch[i:]
			}
			for _, r := range rest {
				d.queue(requeued(r))
			}
			if d.reg != nil && len(d.pending) > 0 {
				d.schedule(DefaultCoalesce, timerNormal)
			}
			d.mu.Unlock()
			return
		}
		if err != nil {
			for _, r := range batch {
				d.queue(requeued(r))
			}
			d.schedule(RetryDelay, timerRetry)
			d.mu.Unlock()
			break
		}
		if busy {
			d.queue(requeued(w))
			d.schedule(RetryDelay, timerRetry)
		}
		d.mu.Unlock()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gen != gen {
		return
	}
	d.running = false
	d.unpark(time.Now())
	if len(d.pending) > 0 || d.scheduled {
		d.schedule(delay, timerNormal)
	}
}

// requeued is w as a retry queues it: same reason, agent and session, requested now.
func requeued(w Wake) Wake {
	w.RequestedAt = time.Time{}
	return w
}

func callHandler(ctx context.Context, h WakeHandler, w Wake) (res RunResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("heartbeat handler panic: %v", p)
		}
	}()
	return h(ctx, w)
}
