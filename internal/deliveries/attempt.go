package deliveries

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/store"
)

// outcome is what one attempt on an entry came to.
type outcome int

const (
	outDelivered   outcome = iota // sent and recorded delivered
	outFailed                     // sent, transient failure recorded, retry scheduled
	outDead                       // sent, dead-lettered (permanent, or the last allowed failure)
	outUnknownSink                // dead-lettered unsent: its sink is not configured
	outMaxRetries                 // dead-lettered unsent: failures already at max_retries
	outExpired                    // dead-lettered unsent: past its TTL
	outNotDue                     // still backing off
	outNotReady                   // sink not ready: nothing charged
	outBudget                     // the recovery budget ran out before it could be sent
	outGone                       // no longer pending (delivered, dead, dropped, claimed)
	outStoreError                 // the store could not be read or written
	outCanceled                   // shutdown mid-send: released to pending, nothing charged
)

// Dead-letter reasons.
const (
	ReasonMaxRetries  = "max_retries"
	ReasonExpired     = "expired"
	ReasonUnknownSink = "unknown_sink"
)

type attemptOpts struct {
	// beforeSend runs once the entry is known to be due and its sink ready, just before the
	// claim; an error (errBudget) stops the attempt with nothing written.
	beforeSend func(ctx context.Context, sink string) error
	// sent, when set, runs once the sink returned, before the outcome is recorded: the
	// runtime's worker slot is free then (the record is the store's work, not the sink's).
	sent func()
}

var errBudget = errors.New("recovery budget exhausted")

type attemptResult struct {
	out         outcome
	interrupted bool
	err         error
	next        time.Time // outFailed: when the entry is due again
	class       string    // the send error's class, when it failed
}

// attempt re-reads entry id (the store is the source of truth), applies the checks, and if
// the entry is due, claims it durably, sends it and records the outcome.
func (s *Service) attempt(ctx context.Context, epoch, id int64, o attemptOpts) attemptResult {
	e, err := s.store.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return attemptResult{out: outGone}
	}
	if err != nil {
		return attemptResult{out: outStoreError, err: err}
	}
	if e.State == store.StateSending && e.Epoch == epoch {
		// One worker at a time attempts an entry, so a claim of this epoch that no worker
		// holds is one whose MarkSending was stored but failed to say so (the database went
		// away before its reply): nothing was sent under it. Left alone it would stay
		// sending until its lease ran out; return it to pending and attempt it now.
		switch err := s.store.Release(ctx, id, epoch, time.Now()); {
		case errors.Is(err, store.ErrNotOwner), errors.Is(err, store.ErrNotFound):
			return attemptResult{out: outGone}
		case err != nil:
			return attemptResult{out: outStoreError, err: err}
		}
		s.entryLog(e).Warn("delivery found claimed by this process but not sent (the store failed after recording the claim): released")
		if e, err = s.store.Get(ctx, id); errors.Is(err, store.ErrNotFound) {
			return attemptResult{out: outGone}
		} else if err != nil {
			return attemptResult{out: outStoreError, err: err}
		}
	}
	interrupted := e.Interrupted(epoch)
	if e.State != store.StatePending && !interrupted {
		return attemptResult{out: outGone}
	}
	r := attemptResult{interrupted: interrupted}
	p := s.policy()
	log := s.entryLog(e)
	now := time.Now()
	if !e.ExpiresAt.IsZero() && !now.Before(e.ExpiresAt) {
		r.out = s.deadUnsent(ctx, log, e, epoch, ReasonExpired, outExpired)
		return r
	}
	if e.Failures >= p.cfg.MaxRetries {
		r.out = s.deadUnsent(ctx, log, e, epoch, ReasonMaxRetries, outMaxRetries)
		return r
	}
	sink, ok := p.sinks[e.Sink]
	if !ok {
		r.out = s.deadUnsent(ctx, log, e, epoch, ReasonUnknownSink, outUnknownSink)
		return r
	}
	if !interrupted && e.NextAttemptAt.After(now) {
		r.out = outNotDue
		return r
	}
	if rd, ok := sink.(Readier); ok && !rd.Ready() {
		log.Debug("delivery deferred: sink not ready")
		r.out = outNotReady
		return r
	}
	if o.beforeSend != nil {
		if err := o.beforeSend(ctx, e.Sink); err != nil {
			r.out, r.err = outBudget, err
			return r
		}
	}
	claimed, err := s.store.MarkSending(ctx, id, epoch, ClaimLease)
	if errors.Is(err, store.ErrNotClaimable) || errors.Is(err, store.ErrNotFound) {
		r.out = outGone
		return r
	}
	if err != nil {
		r.out, r.err = outStoreError, err
		return r
	}
	if interrupted {
		log.Warn("delivery interrupted by a crash, resending with the same idempotency key",
			zap.Int("attempt", claimed.Attempts), zap.Int64("interrupted_epoch", e.Epoch))
	}
	return s.send(ctx, epoch, p, sink, claimed, log, interrupted, o)
}

// attemptDue is attempt for an entry the runtime found due: its claim (ClaimIfDue) makes in
// the same statement the checks that attempt reads the entry for, so a due entry is claimed
// without that read. An entry that is not claimable so (not due, expired, out of retries,
// sending, gone), or whose sink is unknown or not ready, goes the way of attempt.
func (s *Service) attemptDue(ctx context.Context, epoch, id int64, sinkName string, o attemptOpts) attemptResult {
	p := s.policy()
	sink, ok := p.sinks[sinkName]
	if !ok || isNotReady(sink) || o.beforeSend != nil {
		return s.attempt(ctx, epoch, id, o)
	}
	claimed, err := s.store.ClaimIfDue(ctx, id, epoch, ClaimLease, p.cfg.MaxRetries)
	switch {
	case errors.Is(err, store.ErrNotClaimable), errors.Is(err, store.ErrNotFound):
		return s.attempt(ctx, epoch, id, o)
	case err != nil:
		return attemptResult{out: outStoreError, err: err}
	}
	return s.send(ctx, epoch, p, sink, claimed, s.entryLog(claimed), false, o)
}

// send sends an entry epoch claimed (interrupted: one a crash cut) and records the outcome.
func (s *Service) send(ctx context.Context, epoch int64, p *policy, sink Sink, claimed store.Entry, log *zap.Logger,
	interrupted bool, o attemptOpts) attemptResult {
	id := claimed.ID
	r := attemptResult{interrupted: interrupted}
	log = log.With(zap.Int("attempt", claimed.Attempts))
	defer func() { s.obs.attempt(claimed, r) }()
	log.Debug("delivery sending")
	sendErr := sink.Send(ctx, Delivery{
		ID: claimed.ID, Sink: claimed.Sink, Key: claimed.Key, Headers: claimed.Headers,
		Payload: claimed.Payload, Attempt: claimed.Attempts,
	})
	if o.sent != nil {
		o.sent()
	}
	if sendErr == nil {
		r.out = s.finalize(ctx, log, "complete", outDelivered, func(ctx context.Context) error {
			return s.store.Complete(ctx, id, epoch)
		})
		if r.out == outDelivered {
			log.Info("delivery delivered")
		}
		return r
	}
	if ctx.Err() != nil {
		// Shutting down mid-send: the outcome is unknown; return the entry to pending with
		// nothing charged. The next start resends it with the same key (at-least-once).
		r.out = s.finalize(ctx, log, "release", outCanceled, func(ctx context.Context) error {
			return s.store.Release(ctx, id, epoch, claimed.LastAttemptAt)
		})
		log.Info("delivery released at shutdown", zap.Error(sendErr))
		return r
	}
	v := p.cls.Classify(sendErr)
	r.class = v.Class.String()
	msg := sendErr.Error()
	switch {
	case v.Class == NotReady:
		r.out = s.finalize(ctx, log, "release", outNotReady, func(ctx context.Context) error {
			return s.store.Release(ctx, id, epoch, time.Now())
		})
		log.Info("delivery deferred: sink not ready", zap.String("error", msg))
	case v.Class == Permanent:
		r.out = s.finalize(ctx, log, "dead", outDead, func(ctx context.Context) error {
			return s.store.Dead(ctx, id, epoch, v.Reason, msg)
		})
		log.Warn("delivery dead-lettered", zap.String("reason", v.Reason), zap.String("error", msg))
	case claimed.Failures+1 >= p.cfg.MaxRetries:
		r.out = s.finalize(ctx, log, "fail", outDead, func(ctx context.Context) error {
			return s.store.Fail(ctx, id, epoch, store.Failure{Err: msg, DeadReason: ReasonMaxRetries})
		})
		log.Warn("delivery dead-lettered", zap.String("reason", ReasonMaxRetries),
			zap.Int("failures", claimed.Failures+1), zap.String("error", msg))
	default:
		failures := claimed.Failures + 1
		next := NextAttemptAt(p.cfg.Schedule, failures, claimed.LastAttemptAt, time.Now(), p.cfg.Jitter, s.rand(),
			v.RetryAfter, p.cfg.RetryAfterMax)
		r.out = s.finalize(ctx, log, "fail", outFailed, func(ctx context.Context) error {
			return s.store.Fail(ctx, id, epoch, store.Failure{Err: msg, NextAt: next})
		})
		r.next = next
		log.Info("delivery failed, retry scheduled", zap.Int("failures", failures),
			zap.Time("next_attempt_at", next), zap.Duration("retry_after", v.RetryAfter), zap.String("error", msg))
	}
	return r
}

// deadUnsent dead-letters an entry that is not sent (expired, out of retries, no sink).
func (s *Service) deadUnsent(ctx context.Context, log *zap.Logger, e store.Entry, epoch int64, reason string, out outcome) outcome {
	err := s.store.Dead(ctx, e.ID, epoch, reason, "")
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrWrongState), errors.Is(err, store.ErrNotOwner):
		return outGone
	case err != nil:
		log.Error("dead-letter delivery", zap.Error(err))
		return outStoreError
	}
	log.Warn("delivery dead-lettered", zap.String("reason", reason), zap.Int("failures", e.Failures))
	s.obs.dead(reason)
	return out
}

// finalize records an outcome, retrying every StoreRetry while the store fails: the send
// happened, so its result must not be dropped. Once ctx ends one last try is made with a
// short deadline; if even that fails, the entry stays sending under this epoch and the next
// start treats it as interrupted (resent with the same key).
func (s *Service) finalize(ctx context.Context, log *zap.Logger, op string, out outcome, fn func(context.Context) error) outcome {
	for {
		var err error
		if ctx.Err() == nil {
			err = fn(ctx)
		} else {
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			err = fn(last)
			cancel()
		}
		switch {
		case err == nil:
			return out
		case errors.Is(err, store.ErrNotOwner), errors.Is(err, store.ErrNotFound):
			log.Warn("delivery outcome not recorded: claim lost", zap.String("op", op), zap.Error(err))
			return outGone
		}
		log.Error("record delivery outcome", zap.String("op", op), zap.Error(err))
		if ctx.Err() != nil {
			return outStoreError
		}
		t := time.NewTimer(StoreRetry)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

func (s *Service) entryLog(e store.Entry) *zap.Logger {
	return s.log.With(zap.Int64("id", e.ID), zap.String("sink", e.Sink), zap.String("idempotency_key", e.Key))
}
