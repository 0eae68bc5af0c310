package deliveries

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/store"
)

// maxActions bounds the actions a dry run lists.
const maxActions = 1000

// RecoverDryRun reports what a recovery pass would do now, changing nothing: it sends
// nothing and writes nothing. The budget is estimated from the replay spacing alone.
// progress, when set, is called after each page of live entries read with the count so far.
func (s *Service) RecoverDryRun(ctx context.Context, progress func(scanned int)) (api.RecoveryReport, error) {
	s.mu.Lock()
	epoch := s.epoch
	s.mu.Unlock()
	rep, _, err := s.recoverPass(ctx, epoch, true, progress)
	return rep, err
}

// livePage is how many live entries are read at a time.
const livePage = 10_000

// eachLive passes every live entry's ref to f, a page at a time, in id (enqueue) order.
func (s *Service) eachLive(ctx context.Context, f func([]store.Ref)) error {
	var after int64
	for {
		refs, err := s.store.Live(ctx, after, livePage)
		if err != nil {
			return err
		}
		f(refs)
		if len(refs) < livePage {
			return nil
		}
		after = refs[len(refs)-1].ID
	}
}

// liveRef is a live entry as the recovery pass holds it until it gets to it: a compact
// store.Ref (the pass holds every entry live at its start, 100,000 or more).
type liveRef struct {
	id, epoch     int64
	next, expires int64 // unix ms; 0: none
	failures      int32
	prio          int32
	sink          uint32 // index in the pass's sink names
	sending       bool
	left          bool // the pass left it pending, due at next (for the runtime)
}

// liveSet holds the pass's entries in pages of livePage, in id order: no big slice that
// doubles (and leaves its halves as garbage) while 100,000 entries are read.
type liveSet struct {
	pages [][]liveRef
	n     int
}

func (l *liveSet) add(r liveRef) {
	if l.n%livePage == 0 {
		l.pages = append(l.pages, make([]liveRef, 0, livePage))
	}
	p := &l.pages[len(l.pages)-1]
	*p = append(*p, r)
	l.n++
}

// at returns the i-th entry.
func (l *liveSet) at(i int) *liveRef { return &l.pages[i/livePage][i%livePage] }

// sortByID puts the entries in id (enqueue) order, in place.
func (l *liveSet) sortByID() { sort.Sort(byID{l}) }

type byID struct{ *liveSet }

func (b byID) Len() int           { return b.n }
func (b byID) Less(i, j int) bool { return b.at(i).id < b.at(j).id }
func (b byID) Swap(i, j int)      { *b.at(i), *b.at(j) = *b.at(j), *b.at(i) }

func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromUnixMs(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// ref expands l again.
func (l liveRef) ref(sinks []string) store.Ref {
	r := store.Ref{ID: l.id, Sink: sinks[l.sink], Priority: int(l.prio), State: store.StatePending, Failures: int(l.failures),
		NextAttemptAt: fromUnixMs(l.next), ExpiresAt: fromUnixMs(l.expires), Epoch: l.epoch}
	if l.sending {
		r.State = store.StateSending
	}
	return r
}

// recoverPass handles once, in enqueue order, every entry it must act on at its start,
// within the time budget, spacing replays to the same sink. Replays run on up to Workers
// goroutines, so a backlog left by a long downtime is not sent one entry at a time.
//
// At a start it reads only those entries: the sending ones (interrupted) and the pending
// ones due now, from the store's indexes (store.Near); the others are pending and not
// due, so it would defer them all (deferred_backoff): it counts them from the store's
// counts without reading them, and the runtime arms them when its horizon reaches them.
// A dry run reads every live entry, to list each one's action.
//
// Besides its report it returns what it read, with the entries it leaves pending marked
// (left, due at next), for the runtime to arm (not after a dry run): the store may not
// say why (a claim whose reply was lost is this epoch's, as if in flight).
func (s *Service) recoverPass(ctx context.Context, epoch int64, dry bool, progress func(int)) (api.RecoveryReport, passView, error) {
	start := time.Now()
	p := s.policy()
	deadline := start.Add(p.cfg.RecoveryBudget)
	set := &liveSet{}
	var sinks []string
	index := map[string]uint32{}
	add := func(page []store.Ref) {
		for _, r := range page {
			if r.State == store.StateSending && r.Epoch == epoch {
				continue // in flight in this epoch, not left over
			}
			i, ok := index[r.Sink]
			if !ok {
				i = uint32(len(sinks))
				sinks = append(sinks, r.Sink)
				index[r.Sink] = i
			}
			set.add(liveRef{id: r.ID, epoch: r.Epoch, next: unixMs(r.NextAttemptAt), expires: unixMs(r.ExpiresAt),
				failures: int32(min(r.Failures, math.MaxInt32)), prio: int32(max(min(r.Priority, math.MaxInt32), math.MinInt32)),
				sink: i, sending: r.State == store.StateSending})
		}
		if progress != nil {
			progress(set.n)
		}
	}
	var err error
	notDue := 0 // live entries not read: pending, due later
	if dry {
		err = s.eachLive(ctx, add)
	} else {
		var c store.Counts
		if c, err = s.store.Counts(ctx); err == nil {
			// Near's bound is exclusive: what is due at start is read.
			if err = s.store.Near(ctx, start.Add(time.Millisecond), livePage, add); err == nil {
				set.sortByID()
				notDue = max(c.Pending+c.Sending-set.n, 0)
			}
		}
	}
	if err != nil {
		return api.RecoveryReport{}, passView{}, fmt.Errorf("recovery scan: %w", err)
	}
	rep := api.RecoveryReport{RecoverySummary: api.RecoverySummary{Scanned: set.n + notDue, DeferredBackoff: notDue, DryRun: dry}}
	if set.n > 0 && !dry {
		s.log.Info("delivery recovery starting", zap.Int("pending", set.n), zap.Int("not_due", notDue),
			zap.Duration("budget", p.cfg.RecoveryBudget))
	}
	act := func(r store.Ref, action, reason string) {
		if !dry {
			return
		}
		if len(rep.Actions) == maxActions {
			rep.Truncated = true
			return
		}
		a := api.RecoveryAction{ID: r.ID, Sink: r.Sink, Action: action, Reason: reason}
		if action == "defer_backoff" {
			a.DueAt = r.NextAttemptAt
		}
		rep.Actions = append(rep.Actions, a)
	}
	if dry {
		s.dryPass(ctx, p, epoch, set, sinks, &rep, deadline, act)
	} else {
		s.replayPass(ctx, p, epoch, set, sinks, &rep, deadline)
	}
	rep.At = time.Now()
	rep.DurationMS = rep.At.Sub(start).Milliseconds()
	if rep.Total() != rep.Scanned {
		// P5 is an invariant of the loop above; say so loudly if it ever breaks.
		s.log.Error("delivery recovery summary does not add up", zap.Int("scanned", rep.Scanned), zap.Int("total", rep.Total()))
	}
	if !dry {
		s.log.Info("delivery recovery complete",
			zap.Int("scanned", rep.Scanned), zap.Int("recovered", rep.Recovered), zap.Int("failed", rep.Failed),
			zap.Int("interrupted", rep.Interrupted), zap.Int("skipped_max_retries", rep.SkippedMaxRetries),
			zap.Int("expired", rep.Expired), zap.Int("deferred_backoff", rep.DeferredBackoff),
			zap.Int("deferred_not_ready", rep.DeferredNotReady), zap.Int("deferred_budget", rep.DeferredBudget),
			zap.Int("deferred_error", rep.DeferredError), zap.Int("already_gone", rep.AlreadyGone),
			zap.Int64("duration_ms", rep.DurationMS))
	}
	return rep, passView{set: set, sinks: sinks}, nil
}

// passView is what a recovery pass found: the entries and the names of their sinks.
type passView struct {
	set   *liveSet
	sinks []string
}

// count puts res in its bucket of rep.
func count(rep *api.RecoveryReport, res attemptResult) {
	switch res.out {
	case outDelivered:
		if res.interrupted {
			rep.Interrupted++
		} else {
			rep.Recovered++
		}
	case outFailed, outDead:
		if res.interrupted {
			rep.Interrupted++
		} else {
			rep.Failed++
		}
	case outUnknownSink:
		rep.Failed++
	case outMaxRetries:
		rep.SkippedMaxRetries++
	case outExpired:
		rep.Expired++
	case outNotDue:
		rep.DeferredBackoff++
	case outNotReady:
		rep.DeferredNotReady++
	case outBudget, outCanceled:
		rep.DeferredBudget++
	case outGone:
		rep.AlreadyGone++
	case outStoreError:
		rep.DeferredError++
	}
}

// replayPass attempts the due entries of set on up to Workers goroutines. Each replay is
// given its start when it is handed out, in enqueue order: at least ReplaySpacing after the
// previous one to its sink. A start past the deadline is not made (deferred_budget, nothing
// charged).
//
// It marks in set the entries it leaves pending, with when each is due.
func (s *Service) replayPass(ctx context.Context, p *policy, epoch int64, set *liveSet, sinks []string, rep *api.RecoveryReport,
	deadline time.Time) {
	spacing := max(p.cfg.ReplaySpacing, 0)
	var mu sync.Mutex // guards rep, warned and the marks in set
	warned := false
	leave := func(i int, due time.Time) {
		lr := set.at(i)
		lr.left, lr.next = true, due.UnixMilli()
	}
	deferBudget := func() {
		if !warned {
			s.log.Warn("delivery recovery budget exceeded: remaining entries deferred to the runtime, no retry charged")
			warned = true
		}
		rep.DeferredBudget++
	}
	type job struct {
		i  int       // in set
		at time.Time // its start
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range max(p.cfg.Workers, 1) {
		wg.Go(func() {
			for j := range jobs {
				wait := func(ctx context.Context, _ string) error {
					if d := time.Until(j.at); d > 0 {
						t := time.NewTimer(d)
						defer t.Stop()
						select {
						case <-ctx.Done():
							return errBudget
						case <-t.C:
						}
					}
					if !time.Now().Before(deadline) {
						return errBudget // it waited for a worker past the budget
					}
					return nil
				}
				mu.Lock()
				id := set.at(j.i).id
				mu.Unlock()
				res := s.attempt(ctx, epoch, id, attemptOpts{beforeSend: wait})
				mu.Lock()
				if res.out == outBudget || res.out == outCanceled {
					deferBudget()
				} else {
					count(rep, res)
				}
				switch now := time.Now(); res.out {
				case outFailed:
					leave(j.i, res.next)
				case outNotReady, outBudget, outCanceled:
					leave(j.i, now)
				case outNotDue:
					leave(j.i, now.Add(RearmFloor))
				case outStoreError:
					leave(j.i, now.Add(StoreRetry))
				}
				mu.Unlock()
			}
		})
	}
	nextStart := map[string]time.Time{} // per sink: the earliest start of its next replay
	count := func(f func()) {
		mu.Lock()
		f()
		mu.Unlock()
	}
	for i := range set.n {
		mu.Lock()
		lr := *set.at(i)
		mu.Unlock()
		r := lr.ref(sinks)
		now := time.Now()
		interrupted := r.State == store.StateSending
		expired := !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt)
		outOfRetries := r.Failures >= p.cfg.MaxRetries
		if ctx.Err() != nil || !now.Before(deadline) {
			count(func() { deferBudget(); leave(i, now) })
			continue
		}
		if !interrupted && !expired && !outOfRetries && r.NextAttemptAt.After(now) {
			count(func() { rep.DeferredBackoff++; leave(i, r.NextAttemptAt) })
			continue
		}
		at := now
		if sink, ok := p.sinks[r.Sink]; ok && !expired && !outOfRetries && !isNotReady(sink) {
			// It is to be sent: give it its start.
			if n := nextStart[r.Sink]; n.After(at) {
				at = n
			}
			if !at.Before(deadline) {
				count(func() { deferBudget(); leave(i, now) })
				continue
			}
			nextStart[r.Sink] = at.Add(spacing)
		}
		select {
		case jobs <- job{i: i, at: at}:
		case <-ctx.Done():
			count(func() { deferBudget(); leave(i, now) })
		}
	}
	close(jobs)
	wg.Wait()
}

// dryPass classifies set as a pass would, reading only, one entry after the other.
func (s *Service) dryPass(ctx context.Context, p *policy, epoch int64, set *liveSet, sinks []string, rep *api.RecoveryReport,
	deadline time.Time, act func(store.Ref, string, string)) {
	nextStart := map[string]time.Time{} // per sink: the earliest start of its next replay
	for i := range set.n {
		r := set.at(i).ref(sinks)
		now := time.Now()
		if ctx.Err() != nil || !now.Before(deadline) {
			rep.DeferredBudget++
			act(r, "defer_budget", "")
			continue
		}
		interrupted := r.State == store.StateSending
		expired := !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt)
		if !interrupted && !expired && r.Failures < p.cfg.MaxRetries && r.NextAttemptAt.After(now) {
			rep.DeferredBackoff++
			act(r, "defer_backoff", "")
			continue
		}
		s.dryDecide(ctx, p, epoch, r, rep, nextStart, deadline, act)
	}
}

// dryDecide classifies one entry as the pass would, reading only.
func (s *Service) dryDecide(ctx context.Context, p *policy, epoch int64, r store.Ref, rep *api.RecoveryReport,
	nextStart map[string]time.Time, deadline time.Time, act func(store.Ref, string, string)) {
	e, err := s.store.Get(ctx, r.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		rep.AlreadyGone++
		act(r, "gone", "")
		return
	case err != nil:
		rep.DeferredError++
		act(r, "error", err.Error())
		return
	}
	interrupted := e.Interrupted(epoch)
	now := time.Now()
	sink, ok := p.sinks[e.Sink]
	switch {
	case e.State != store.StatePending && !interrupted:
		rep.AlreadyGone++
		act(r, "gone", string(e.State))
	case !e.ExpiresAt.IsZero() && !now.Before(e.ExpiresAt):
		rep.Expired++
		act(r, "dead_letter", ReasonExpired)
	case e.Failures >= p.cfg.MaxRetries:
		rep.SkippedMaxRetries++
		act(r, "dead_letter", ReasonMaxRetries)
	case !ok:
		rep.Failed++
		act(r, "dead_letter", ReasonUnknownSink)
	case !interrupted && e.NextAttemptAt.After(now):
		rep.DeferredBackoff++
		act(r, "defer_backoff", "")
	case isNotReady(sink):
		rep.DeferredNotReady++
		act(r, "defer_not_ready", "")
	default:
		at := now
		if n := nextStart[e.Sink]; n.After(at) {
			at = n
		}
		if !at.Before(deadline) {
			rep.DeferredBudget++
			act(r, "defer_budget", "")
			return
		}
		nextStart[e.Sink] = at.Add(max(p.cfg.ReplaySpacing, 0))
		if interrupted {
			rep.Interrupted++
			act(r, "replay_interrupted", "")
		} else {
			rep.WouldReplay++
			act(r, "replay", "")
		}
	}
}

func isNotReady(sink Sink) bool {
	rd, ok := sink.(Readier)
	return ok && !rd.Ready()
}
