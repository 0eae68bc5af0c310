package postgres

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
)

// notifyEvery is how often, at most, enqueues notify the fleet.
const notifyEvery = 50 * time.Millisecond

// notifyGate spaces the notifications of enqueues: each one wakes every listening host (and
// the database process serving its listener) for one look at the due entries, which finds
// everything committed by then. So an enqueue notifies only when the last notification is
// notifyEvery old; one that did not owes it, and the notification follows at the end of
// that interval, sent alone. Another host learns of an entry notifyEvery after its commit
// at worst, as River spaces its own.
type notifyGate struct {
	mu       sync.Mutex
	last     time.Time // of the last notification sent or about to be
	timer    *time.Timer
	owed     bool
	closed   bool
	flushing sync.WaitGroup // the timer's function
}

// notifyNow reports whether a statement about to enqueue should notify; if so it counts as
// the last notification.
func (s *Store) notifyNow() bool {
	g := &s.notify
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	if g.owed || now.Sub(g.last) < notifyEvery {
		return false
	}
	g.last = now
	return true
}

// owe records that an enqueue committed entries without notifying: the notification follows
// notifyEvery after the last one.
func (s *Store) owe() {
	g := &s.notify
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.owed || g.closed {
		return
	}
	g.owed = true
	g.flushing.Add(1)
	g.timer = time.AfterFunc(time.Until(g.last.Add(notifyEvery)), func() {
		defer g.flushing.Done()
		s.sendOwed(context.Background())
	})
}

// sendOwed sends the notification owed, if it still is.
func (s *Store) sendOwed(ctx context.Context) {
	g := &s.notify
	g.mu.Lock()
	if !g.owed {
		g.mu.Unlock()
		return
	}
	g.owed, g.last = false, time.Now()
	g.mu.Unlock()
	if _, err := s.pool.Exec(ctx, "SELECT pg_notify($1, $2)", Channel, s.opts.HostID); err != nil {
		// The other hosts find the entries at their next poll.
		s.opts.Log.Debug("postgres store: notify failed", zap.Error(redact(err)))
	}
}

// closeNotify sends the notification owed now, before the pool closes, and stops the timer.
func (s *Store) closeNotify() {
	g := &s.notify
	g.mu.Lock()
	g.closed = true
	stopped := g.timer != nil && g.timer.Stop()
	g.mu.Unlock()
	if stopped {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		s.sendOwed(ctx)
		cancel()
		g.flushing.Done()
	}
	g.flushing.Wait()
}
