package queue

import "time"

// DefaultCommitDelay is the default of Options.CommitDelay (measured in
// bench/deliveries/README.md).
const DefaultCommitDelay = 200 * time.Microsecond

// gathering is the commit delay of the group commit: what the leaders learnt of the recent
// batches, and the leader's wait for more operations to join the next one.
//
// From one client every batch carries one operation: the leader never waits. From many,
// a batch carries the operations that arrived during the commit before it; the leader that
// finds fewer waiting than the larger recent batches carried waits, CommitDelay at most,
// for that many, so that callers a few microseconds late share the commit (and its sync)
// instead of each leading one of their own.
type gathering struct {
	// owned by the leader: the larger recent batches; it follows a larger batch at once and
	// a smaller one slowly, and halves when a wait brought nobody.
	peak  float64
	timer *time.Timer

	// guarded by SQLite.mu
	want   int           // while the leader waits: how many waiting operations end the wait
	joined chan struct{} // signalled once want operations are waiting
}

func newGathering() gathering {
	return gathering{peak: 1, joined: make(chan struct{}, 1)}
}

// gatherBatch waits, before the leader takes its batch, for more operations to join it
// (see gathering). It reports whether it waited. The caller leads and holds s.mu, which is
// released during the wait.
func (s *SQLite) gatherBatch() bool {
	g := &s.gather
	want := min(int(g.peak+0.5), s.opts.MaxBatch)
	if s.opts.CommitDelay <= 0 || want < 2 || len(s.queue) >= want {
		return false
	}
	g.want = want
	s.mu.Unlock()
	if g.timer == nil {
		g.timer = time.NewTimer(s.opts.CommitDelay)
	} else {
		g.timer.Reset(s.opts.CommitDelay)
	}
	select {
	case <-g.joined:
	case <-g.timer.C:
	}
	g.timer.Stop()
	s.statsMu.Lock()
	s.stats.Delayed++
	s.statsMu.Unlock()
	s.mu.Lock()
	g.want = 0
	select {
	case <-g.joined: // sent as the timer fired
	default:
	}
	return true
}

// joined ends the leader's wait once enough operations are waiting; submit calls it with
// s.mu held after queueing its operation.
func (s *SQLite) joined() {
	if g := &s.gather; g.want > 0 && len(s.queue) >= g.want {
		g.want = 0
		select {
		case g.joined <- struct{}{}:
		default: // signalled already
		}
	}
}

// learn records the size of a batch the leader ran; waited: it waited for the batch.
func (g *gathering) learn(n int, waited bool) {
	x := float64(n)
	switch {
	case waited && n == 1:
		// Nobody came in CommitDelay: fewer callers than it seemed, or one alone, who
		// stops waiting after a few commits.
		g.peak = max(1, g.peak/2)
	case x >= g.peak:
		g.peak = x
	default:
		g.peak += (x - g.peak) / 16
	}
}
