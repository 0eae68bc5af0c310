package postgres

import (
	"context"
	"time"

	"github.com/schedd/schedd/internal/store"
)

// liveSQL counts the live entries (pending or sending) from the counts the store keeps as
// it writes (schedd_delivery_counts): a few rows, not a scan of every live entry. In a
// transaction it sees what the committed writes left, as a count of the rows would.
const liveSQL = `SELECT COALESCE(sum(pending + sending), 0) FROM schedd_delivery_counts`

// liveFresh is how long a count of the live entries stands in for a new one.
const liveFresh = time.Second

// liveCount is this host's view of how many entries are live (pending or sending): the
// last count, plus the entries this host created since. Counting them reads the kept counts
// (liveSQL), a round trip that each enqueue need not make: an enqueue counts them in its
// transaction (enqueueExact) only when this view, at most liveFresh old, says the live
// entries, with the new ones, come within a tenth of MaxEntries (liveSlack). Farther below,
// the bound cannot be passed by this host; the other hosts of a fleet could pass it only by
// enqueueing more than that tenth within the second since this host's count. The view
// counts no entry this host did not see leave, so it errs high: towards counting.
type liveCount struct {
	n        int
	at       time.Time // of the count; zero: none yet
	reserved int       // entries being inserted on room's word (see room and settle)
}

// liveSlack is the margin below MaxEntries under which an enqueue counts the live entries.
func (s *Store) liveSlack() int { return s.opts.MaxEntries / 10 }

// room reports whether k more entries leave the live ones at least liveSlack below
// MaxEntries, by this host's view, which it counts anew when it is older than liveFresh. If
// so it reserves their room: the caller settles it once they are inserted, or not.
func (s *Store) room(ctx context.Context, k int) (bool, error) {
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	if s.live.at.IsZero() || time.Since(s.live.at) > liveFresh {
		if err := s.usable(); err != nil {
			return false, err
		}
		at := time.Now()
		var n int
		err := s.pool.QueryRow(ctx, liveSQL).Scan(&n)
		if err != nil {
			return false, s.fail(err)
		}
		s.live.n, s.live.at = n, at
	}
	// While an enqueue counts (enqueueExact), the others count after it: it may be filling
	// the room left.
	if len(s.exact) > 0 || s.live.n+s.live.reserved+k+s.liveSlack() > s.opts.MaxEntries {
		return false, nil
	}
	s.live.reserved += k
	return true, nil
}

// settle ends the reservation of k entries, of which made were created.
func (s *Store) settle(k, made int) {
	s.liveMu.Lock()
	s.live.reserved -= k
	s.live.n += made
	s.liveMu.Unlock()
}

// reserved is the number of entries being inserted on room's word.
func (s *Store) reserved() int {
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	return s.live.reserved
}

// recount sets the view to n entries, counted at at. The entries being inserted on room's
// word stay reserved: if the count saw some of them, they count twice until the next one.
func (s *Store) recount(n int, at time.Time) {
	s.liveMu.Lock()
	s.live.n, s.live.at = n, at
	s.liveMu.Unlock()
}

// usable fails with ErrClosed once the store is closed, and with ErrUnavailable until the
// database was reached.
func (s *Store) usable() error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return s.ready()
}
