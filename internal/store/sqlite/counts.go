package sqlite

import (
	"github.com/schedd/schedd/internal/store"
)

// The counts status reads (delivery_counts: rows per state and quarantine mark) are kept
// by the writer, once per group commit: each operation notes the rows it moves from one
// (state, mark) to another as it runs, and the batch writes the sum of the operations that
// stood into delivery_counts in its own transaction, just before COMMIT. So the counts
// commit with the rows they count, or not at all, and a batch costs a few statements
// whatever the number of its rows (schema step 6 says why the triggers that did this per
// row went).
//
// An operation knows the place of the rows it moves from its own WHERE: a claim moves a
// pending row, a completion a sending one. A live row is never marked quarantined (only a
// dead letter carries the mark; a retry clears it), so the moves of live rows are from
// and to unmarked places. A row read whose state or mark is not one the writer writes (a
// row damaged on disk or by hand, being quarantined) makes the batch count every row
// again instead (recount): one scan of the table, for a damage that is rare and logged.

// countKey is a place in delivery_counts.
type countKey struct {
	state       store.State
	quarantined bool
}

var (
	keyPending   = countKey{state: store.StatePending}
	keySending   = countKey{state: store.StateSending}
	keyDelivered = countKey{state: store.StateDelivered}
	keyDead      = countKey{state: store.StateDead}
	keyMarked    = countKey{state: store.StateDead, quarantined: true}
)

// live reports a place of live rows (pending or sending), those the bound counts.
func (k countKey) live() bool {
	return !k.quarantined && (k.state == store.StatePending || k.state == store.StateSending)
}

// countMove is n rows moved into k (out of it when n is negative).
type countMove struct {
	key countKey
	n   int
}

// move notes that the operation being run moved a row from one place to another.
func (b *batch) move(from, to countKey) {
	b.add(from, -1)
	b.add(to, 1)
}

// add notes that the operation being run put n rows in k (took them out when negative).
func (b *batch) add(k countKey, n int) {
	b.op = append(b.op, countMove{k, n})
	if k.live() {
		b.delta += n
	}
}

// rowKey is the place of a row as read (its state and mark as stored), or false when it
// is not one the writer writes.
func rowKey(state, quarantined any) (countKey, bool) {
	st, ok := asString(state)
	if !ok || !store.State(st).Valid() {
		return countKey{}, false
	}
	q, ok := asInt(quarantined)
	if !ok || q < 0 || q > 1 || (q == 1 && store.State(st) != store.StateDead) {
		return countKey{}, false
	}
	return countKey{store.State(st), q == 1}, true
}

// moveRow notes that the operation moved the row read as (state, quarantined) to to; a
// row whose place the writer does not write has the batch count every row again.
func (b *batch) moveRow(state, quarantined any, to countKey) {
	from, ok := rowKey(state, quarantined)
	if !ok {
		b.recount = true
		return
	}
	b.move(from, to)
}

// dropRow notes that the operation deleted the row read as (state, quarantined).
func (b *batch) dropRow(state, quarantined any) {
	k, ok := rowKey(state, quarantined)
	if !ok {
		b.recount = true
		return
	}
	b.add(k, -1)
}

// stand keeps the moves of the operation just run (it succeeded, or failed after writes
// that stay); drop forgets them (its savepoint was rolled back).
func (b *batch) stand() {
	for _, m := range b.op {
		b.counts[m.key] += m.n
	}
	b.live += b.delta
	b.drop()
}

func (b *batch) drop() {
	b.op = b.op[:0]
	b.delta = 0
}

// Statements writing the batch's counts: a sum added to its place, or every row counted
// again.
const (
	countsAddSQL = `INSERT INTO delivery_counts (state, quarantined, n) VALUES (?, ?, ?)
		ON CONFLICT (state, quarantined) DO UPDATE SET n = n + excluded.n`
	countsClearSQL = `DELETE FROM delivery_counts`
	countsFillSQL  = `INSERT INTO delivery_counts (state, quarantined, n)
		SELECT state, quarantined, count(*) FROM deliveries GROUP BY state, quarantined`
	liveCountSQL = `SELECT coalesce(sum(n), 0) FROM delivery_counts WHERE state IN ('pending', 'sending')`
)

// writeCounts writes the batch's counts in its transaction, and returns the live count
// once it commits.
func (b *batch) writeCounts(tx wtx) (int, error) {
	if b.recount {
		if _, err := tx.Exec(countsClearSQL); err != nil {
			return 0, err
		}
		if _, err := tx.Exec(countsFillSQL); err != nil {
			return 0, err
		}
		var live int
		err := tx.QueryRow(liveCountSQL).Scan(&live)
		return live, err
	}
	for k, n := range b.counts {
		if n == 0 {
			continue
		}
		var q int
		if k.quarantined {
			q = 1
		}
		if _, err := tx.Exec(countsAddSQL, string(k.state), q, n); err != nil {
			return 0, err
		}
	}
	return b.live, nil
}
