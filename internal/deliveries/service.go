package deliveries

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/store"
)

// Errors of the service.
var (
	// ErrUnknownSink: the request names a sink that is not configured.
	ErrUnknownSink = errors.New("unknown sink")
	// ErrRunning: Run was called while the service already runs.
	ErrRunning = errors.New("delivery service already running")
)

// Service runs deliveries: it accepts enqueues, runs the recovery pass at start, then keeps
// every pending entry armed at its due time and sends it through its sink.
type Service struct {
	cfg   Config // as started: Workers applies from here
	pol   atomic.Pointer[policy]
	store store.Store
	log   *zap.Logger
	rand  func() float64
	obs   Observer
	rt    *scheduler

	mu       sync.Mutex
	running  bool
	epoch    int64
	last     *api.RecoverySummary
	enqueueE *api.StoreError
	fullAt   int             // with enqueueE a full queue: its bound (max_entries)
	counts   store.Counts    // read last by Status
	readE    *api.StoreError // Status cannot read the store since readE.At
	closed   bool            // the store is being closed: schedd is stopping
}

// policy is what Reconfigure can change while the service runs. Each attempt, pass and
// enqueue works with the one snapshot it loaded at its start.
type policy struct {
	cfg   Config
	sinks map[string]Sink
	cls   *Classifier
}

// newPolicy checks cfg (checked) and sinks.
func newPolicy(cfg Config, sinks map[string]Sink) (*policy, error) {
	cls, err := NewClassifier(cfg.PermanentPatterns)
	if err != nil {
		return nil, fmt.Errorf("delivery config: %w", err)
	}
	p := &policy{cfg: cfg, sinks: map[string]Sink{}, cls: cls}
	for name, sink := range sinks {
		if name == "" || sink == nil {
			return nil, fmt.Errorf("delivery config: sink %q is empty", name)
		}
		p.sinks[name] = sink
	}
	return p, nil
}

func (s *Service) policy() *policy { return s.pol.Load() }

// New builds the service. sinks maps sink names (as entries name them) to sinks.
func New(cfg Config, ds store.Store, sinks map[string]Sink, deps Deps) (*Service, error) {
	cfg, err := cfg.check()
	if err != nil {
		return nil, err
	}
	if ds == nil {
		return nil, errors.New("delivery service: no store")
	}
	pol, err := newPolicy(cfg, sinks)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, store: ds, log: deps.Log, rand: deps.Rand, obs: deps.Observe}
	s.pol.Store(pol)
	if s.log == nil {
		s.log = zap.NewNop()
	}
	s.log = s.log.Named("deliveries")
	if s.rand == nil {
		s.rand = rand.Float64
	}
	s.rt = newScheduler(s)
	return s, nil
}

// Reconfigure replaces the retry policy and the sinks while the service runs: attempts that
// start from now on use them. Workers keeps its value until the service is started
// again; restart names it when it changed. Entries of a sink that is no longer configured
// are dead-lettered (unknown_sink) when they are next due, as at a start.
func (s *Service) Reconfigure(cfg Config, sinks map[string]Sink) (restart []string, err error) {
	apply, err := s.PrepareReconfigure(cfg, sinks)
	if err != nil {
		return nil, err
	}
	return apply(), nil
}

// PrepareReconfigure checks cfg and sinks as Reconfigure does, and changes nothing: apply
// makes the change (it cannot fail), so a caller can prepare several parts before it
// changes any.
func (s *Service) PrepareReconfigure(cfg Config, sinks map[string]Sink) (apply func() (restart []string), err error) {
	cfg, err = cfg.check()
	if err != nil {
		return nil, err
	}
	pol, err := newPolicy(cfg, sinks)
	if err != nil {
		return nil, err
	}
	return func() []string {
		var restart []string
		if cfg.Workers != s.cfg.Workers {
			restart = append(restart, "workers")
		}
		old := s.pol.Swap(pol)
		for _, name := range slices.Sorted(maps.Keys(old.sinks)) {
			if _, ok := pol.sinks[name]; !ok {
				s.log.Warn("delivery sink removed: its entries are dead-lettered when next due", zap.String("sink", name))
			}
		}
		s.log.Info("delivery policy reconfigured", zap.Int("max_retries", cfg.MaxRetries),
			zap.Durations("schedule", cfg.Schedule), zap.Strings("sinks", slices.Sorted(maps.Keys(pol.sinks))))
		return restart
	}, nil
}

// Sinks returns the names of the configured sinks, sorted.
func (s *Service) Sinks() []string { return slices.Sorted(maps.Keys(s.policy().sinks)) }

// Run allocates the boot epoch, runs the recovery pass, then the runtime until ctx ends.
// It owns every goroutine it starts and returns after they exited; the end of ctx is not an
// error.
func (s *Service) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return ErrRunning
	}
	s.running = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running = false
		s.mu.Unlock()
	}()
	epoch, err := s.store.NewEpoch(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("delivery service: %w", err)
	}
	s.mu.Lock()
	s.epoch = epoch
	s.mu.Unlock()
	// The runtime takes arms from now on (what is enqueued during the pass), adopts what
	// the pass leaves pending, and its first read of what is near arms what the pass did
	// not read.
	s.rt.open(epoch)
	defer s.rt.close()
	sum, view, err := s.recoverPass(ctx, epoch, false, nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		// The pass could not read the store: the runtime's reads retry with backoff.
		s.log.Error("delivery recovery failed", zap.Error(err))
	} else {
		s.mu.Lock()
		s.last = &sum.RecoverySummary
		s.mu.Unlock()
		s.obs.pass(sum.RecoverySummary)
		s.rt.adopt(view)
	}
	if ctx.Err() != nil {
		return nil
	}
	s.rt.run(ctx, epoch)
	return nil
}

// Request is an enqueue request.
type Request struct {
	Sink string
	// Key is the idempotency key; one is generated when empty.
	Key      string
	Headers  map[string]string
	Payload  []byte
	Priority int
	// TTL overrides Config.TTL for this entry (0: the configured TTL).
	TTL time.Duration
}

// Enqueue stores a delivery durably and arms it. A key seen before returns the entry that
// holds it with created=false (P11), armed if it is pending.
func (s *Service) Enqueue(ctx context.Context, r Request) (store.Entry, bool, error) {
	n, err := s.policy().newEntry(r, time.Now())
	if err != nil {
		return store.Entry{}, false, err
	}
	e, created, err := s.store.Enqueue(ctx, n)
	s.noteStore(err)
	if err != nil {
		return store.Entry{}, false, err
	}
	s.armStored(e, created)
	return e, created, nil
}

// armStored arms an entry an enqueue returned: one it created, and a pending one that held
// the key already, which this process may never have armed (its enqueue's commit reply was
// lost, or another host enqueued it); arming an armed entry again changes nothing.
func (s *Service) armStored(e store.Entry, created bool) {
	switch {
	case created:
		s.enqueued(e)
	case e.State == store.StatePending:
		s.rt.armEntry(e)
	}
}

// EnqueueBatch stores several deliveries in one commit of the store and arms those it
// created (and the pending ones whose key it held already). Each request is checked and stored as Enqueue would (an unknown sink, say, keeps
// out that entry only); the results are in the order of rs. An error is the whole batch's:
// then nothing was stored.
func (s *Service) EnqueueBatch(ctx context.Context, rs []Request) ([]store.EnqueueResult, error) {
	p, now := s.policy(), time.Now()
	out := make([]store.EnqueueResult, len(rs))
	ns := make([]store.NewEntry, 0, len(rs))
	at := make([]int, 0, len(rs)) // the index in rs of each entry of ns
	for i, r := range rs {
		n, err := p.newEntry(r, now)
		if err != nil {
			out[i].Err = err
			continue
		}
		ns = append(ns, n)
		at = append(at, i)
	}
	if len(ns) > 0 {
		res, err := s.store.EnqueueBatch(ctx, ns)
		s.noteStore(fullIn(res, err))
		if err != nil {
			return nil, err
		}
		for j, r := range res {
			out[at[j]] = r
		}
	}
	for _, r := range out {
		if r.Err == nil {
			s.armStored(r.Entry, r.Created)
		}
	}
	return out, nil
}

// newEntry checks r against the policy and makes the entry to store.
func (p *policy) newEntry(r Request, now time.Time) (store.NewEntry, error) {
	if _, ok := p.sinks[r.Sink]; !ok {
		return store.NewEntry{}, fmt.Errorf("enqueue: %w: %q", ErrUnknownSink, r.Sink)
	}
	for k := range r.Headers {
		if http.CanonicalHeaderKey(k) == IdempotencyHeader {
			return store.NewEntry{}, fmt.Errorf("enqueue: %w: the %s header is set from the key",
				store.ErrInvalid, IdempotencyHeader)
		}
	}
	if p := api.KeyProblem(r.Key); p != "" {
		return store.NewEntry{}, fmt.Errorf("enqueue: %w: idempotency_key: %s", store.ErrInvalid, p)
	}
	key := r.Key
	if key == "" {
		key = newKey()
	}
	n := store.NewEntry{Sink: r.Sink, Key: key, Headers: r.Headers, Payload: r.Payload, Priority: r.Priority}
	ttl := r.TTL
	if ttl <= 0 {
		ttl = p.cfg.TTL
	}
	if ttl > 0 {
		n.ExpiresAt = now.Add(ttl)
	}
	return n, nil
}

// enqueued logs and arms an entry the store just created. The line is at debug level: the
// producer has the entry's id from the reply, and the log says at info what schedd does
// with it (sending, delivered, failed, dead), not every entry it was given.
func (s *Service) enqueued(e store.Entry) {
	if ce := s.log.Check(zap.DebugLevel, "delivery enqueued"); ce != nil {
		ce.Write(zap.Int64("id", e.ID), zap.String("sink", e.Sink), zap.String("idempotency_key", e.Key),
			zap.Int("priority", e.Priority), zap.Int("payload_size", e.PayloadSize))
	}
	s.rt.armEntry(e)
}

// noteStore records the outcome of an enqueue for the status: the store's own failures
// (a full disk, an I/O error, a damaged file) and a full queue (max_entries, R-DLV-06) are
// kept until an enqueue succeeds again.
func (s *Service) noteStore(err error) {
	switch {
	case err == nil:
		s.noteEnqueueError(nil)
	case errors.Is(err, store.ErrDiskFull), errors.Is(err, store.ErrStorage), errors.Is(err, store.ErrCorrupt),
		errors.Is(err, store.ErrQueueFull):
		s.noteEnqueueError(err)
	}
}

// fullIn is err, or else the queue-full error of an entry of a batch, for the status.
func fullIn(res []store.EnqueueResult, err error) error {
	for _, r := range res {
		if err == nil && errors.Is(r.Err, store.ErrQueueFull) {
			return r.Err
		}
	}
	return err
}

// noteEnqueueError keeps the last enqueue that the store failed (a full disk, an I/O error,
// a full queue) until an enqueue succeeds again, or, for a full queue, until it has room;
// it is logged once per episode.
func (s *Service) noteEnqueueError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fullAt = 0
	if be, ok := errors.AsType[*store.BoundError](err); ok && errors.Is(err, store.ErrQueueFull) {
		s.fullAt = be.Limit
	}
	if err == nil {
		if s.enqueueE != nil {
			s.log.Info("delivery enqueues work again", zap.Time("failing_since", s.enqueueE.At))
			s.enqueueE = nil
		}
		return
	}
	if s.enqueueE == nil {
		s.log.Error("delivery enqueue refused by the store", zap.Error(err))
		s.enqueueE = &api.StoreError{Message: err.Error(), At: time.Now()}
		return
	}
	s.enqueueE.Message = err.Error()
}

// newKey makes an idempotency key for a request that brought none.
func newKey() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return "schedd-" + hex.EncodeToString(b[:])
}

// Get returns one entry with its payload.
func (s *Service) Get(ctx context.Context, id int64) (store.Entry, error) {
	return s.store.Get(ctx, id)
}

// List returns entries (without payloads).
func (s *Service) List(ctx context.Context, f store.Filter) ([]store.Entry, error) {
	return s.store.List(ctx, f)
}

// Retry moves a dead letter back to pending, due now, and arms it.
func (s *Service) Retry(ctx context.Context, id int64) (store.Entry, error) {
	e, err := s.store.Retry(ctx, id)
	if err != nil {
		return store.Entry{}, err
	}
	s.entryLog(e).Info("delivery retried by operator")
	s.rt.armEntry(e)
	return e, nil
}

// Drop deletes a pending entry or a dead letter.
func (s *Service) Drop(ctx context.Context, id int64) error {
	if err := s.store.Drop(ctx, id); err != nil {
		return err
	}
	s.log.Info("delivery dropped by operator", zap.Int64("id", id))
	return nil
}

// Purge deletes dead letters (or delivered tombstones) that finished more than olderThan ago:
// all of them, or with limit above 0 at most limit (the oldest first).
func (s *Service) Purge(ctx context.Context, state store.State, olderThan time.Duration, limit int) (int, error) {
	n, err := s.store.Purge(ctx, store.PurgeFilter{State: state, OlderThan: time.Now().Add(-olderThan), Limit: limit})
	if err != nil {
		return 0, err
	}
	s.log.Info("deliveries purged", zap.String("state", string(state)), zap.Duration("older_than", olderThan), zap.Int("count", n))
	return n, nil
}

// StoreClosing tells the service that its store is being closed because schedd stops: a
// status read that fails from then on shows the counts read last, with no warning.
func (s *Service) StoreClosing() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// Status reads the queue's counts and the last recovery summary. A store that cannot be
// read (a database that is down) still gets its block, with its health, the counts read
// last and ReadError; the error is returned as well.
func (s *Service) Status(ctx context.Context) (api.Deliveries, error) {
	c, err := s.store.Counts(ctx)
	info := s.store.Info()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		if s.readE != nil {
			s.log.Info("delivery store readable again", zap.Time("failing_since", s.readE.At))
			s.readE = nil
		}
		s.counts = c
	case s.closed: // stopping: a read of the closed store is no news
	case s.readE == nil: // logged once per episode: status is polled
		s.log.Warn("delivery status: the store cannot be read; the status shows the counts read last", zap.Error(err))
		s.readE = &api.StoreError{Message: err.Error(), At: time.Now()}
	default:
		s.readE.Message = err.Error()
	}
	c = s.counts
	st := api.Deliveries{
		Pending: c.Pending, Sending: c.Sending, Failed: c.Dead, Delivered: c.Delivered, Quarantined: c.Quarantined,
		Store: info.Driver, Path: info.Path, Synchronous: info.Synchronous, DiskFull: info.DiskFull,
		HostID: info.HostID, Connected: info.Connected,
		Sinks: s.Sinks(), StoreState: api.StoreOpen,
	}
	if s.readE != nil {
		e := *s.readE
		st.ReadError = &e
	}
	if !info.Opened {
		st.StoreState = api.StoreNotOpened
	}
	if !c.OldestAt.IsZero() {
		t := c.OldestAt
		st.OldestPendingAt = &t
	}
	st.Epoch = s.epoch
	// A queue that was full and has room again is not shown as refusing enqueues.
	if s.enqueueE != nil && (s.fullAt == 0 || c.Pending+c.Sending >= s.fullAt) {
		e := *s.enqueueE
		st.EnqueueError = &e
	}
	if s.last != nil {
		l := *s.last
		st.LastRecovery = &l
	}
	if err != nil {
		return st, fmt.Errorf("delivery status: %w", err)
	}
	return st, nil
}

// LastRecovery returns the summary of the last recovery pass, if one ran.
func (s *Service) LastRecovery() (api.RecoverySummary, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		return api.RecoverySummary{}, false
	}
	return *s.last, true
}
