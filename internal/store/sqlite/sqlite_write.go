package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/store"
)

// writeOp is one operation for the writer. run executes inside the batch's transaction
// (within its own savepoint, unless it is alone or atomic) and notes in b the rows it
// moves between the places delivery_counts counts (counts.go).
type writeOp struct {
	name string
	run  func(tx wtx, b *batch) error
}

// Names of the enqueue operations (as the FaultHook sees them).
const (
	opEnqueue      = "enqueue"
	opEnqueueBatch = "enqueue_batch"
)

// enqueues reports an operation that stores new entries: refused while the disk is full.
func (op *writeOp) enqueues() bool { return op.name == opEnqueue || op.name == opEnqueueBatch }

// atomic reports an operation that needs no savepoint: its logical errors come before its
// one write, or after writes worth keeping (an enqueue quarantines a damaged row holding
// its key before it reports the key taken). A batch's operation fails only as a whole
// (its entries' own errors are results, not its error).
func (op *writeOp) atomic() bool { return op.enqueues() }

// batch is the state of one group-commit transaction.
type batch struct {
	live    int              // committed live count plus the changes of the operations so far
	delta   int              // change of the live count by the operation being run
	op      []countMove      // the moves of the operation being run
	counts  map[countKey]int // the moves of the operations that stood, summed
	recount bool             // a row of a place the writer does not write was moved
}

// submit runs an operation in the next group commit and returns its own result, which
// comes only after the transaction carrying it committed (or failed). An operation whose
// ctx ends while it waits for a batch is taken back (never run); once its batch runs, the
// result is awaited even if ctx ends, so the answer is always the truth about the store.
//
// The group commit (package group) has no writer goroutine: a caller that finds no batch
// running runs the batch on its own goroutine, so a lone caller pays no hand-off to
// another goroutine. Callers that come while a batch runs (while its fsync is in flight)
// queue up; when the batch is over the first of them runs the next one for them all.
func (s *SQLite) submit(ctx context.Context, name string, run func(tx wtx, b *batch) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.ErrClosed
	}
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()
	res, err := s.writer.Do(ctx, &writeOp{name: name, run: run})
	if err != nil {
		return err
	}
	return res
}

// runBatch runs ops in one transaction and returns each one's result: its own, or the
// storage error that failed the transaction. Operations already accepted run to
// completion whatever their callers' contexts: they wait for the answer.
func (s *SQLite) runBatch(ops []*writeOp) []error {
	began := time.Now()
	results, err := s.tryBatch(ops, false)
	if errors.Is(err, store.ErrDiskFull) && s.res.enterFull() {
		s.log.Warn("delivery store disk full: enqueues are refused until space returns; stored deliveries go on in the space reserve",
			zap.String("path", s.path), zap.Error(err))
		// Run the batch again at once: its enqueues are refused now, and the rest (the
		// transitions of stored entries) fits in the space the reserve gave back.
		results, err = s.tryBatch(ops, true)
	}
	s.closeSpare()
	s.statsMu.Lock()
	if err != nil {
		s.stats.Failed++
	} else {
		s.stats.Commits++
		s.stats.Ops += int64(len(ops))
	}
	s.statsMu.Unlock()
	if s.opts.OnCommit != nil {
		s.opts.OnCommit(time.Since(began), err)
	}
	if err != nil {
		for i := range results {
			if results[i] == nil || !logical(results[i]) {
				results[i] = err
			}
		}
		s.log.Error("delivery store commit failed", zap.Int("ops", len(ops)), zap.Error(err))
	}
	return results
}

// runOp runs op; a panic in it fails the batch (rolled back) instead of the caller that
// runs the batch, which would leave the callers waiting for it without an answer.
func runOp(op *writeOp, tx wtx, b *batch) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: panic in %s: %v", store.ErrStorage, op.name, r)
		}
	}()
	return op.run(tx, b)
}

// closeSpare closes the statements prepared past maxStmts, once their batch is over.
func (s *SQLite) closeSpare() {
	for _, st := range s.spare {
		_ = st.Close()
	}
	clear(s.spare)
	s.spare = s.spare[:0]
}

// wtx runs the writer's statements in its transaction, on the connection the writer keeps
// for itself (wconn): the transaction is BEGIN IMMEDIATE ... COMMIT on that connection, and
// each statement stays prepared on it for the life of the store.
type wtx struct{ s *SQLite }

// maxStmts bounds the prepared statements (the writer's queries are a fixed set).
const maxStmts = 64

// stmt returns the prepared statement for q, preparing it on first use.
func (w wtx) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := w.s.stmts[q]; ok {
		return st, nil
	}
	st, err := w.s.wconn.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if len(w.s.stmts) < maxStmts {
		w.s.stmts[q] = st
	} else {
		w.s.spare = append(w.s.spare, st) // closed after the batch
	}
	return st, nil
}

func (w wtx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	st, err := w.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// row is the first row of a query, as *sql.Row; or the error that kept it from running.
type row interface{ Scan(dest ...any) error }

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

func (w wtx) QueryRowContext(ctx context.Context, q string, args ...any) row {
	st, err := w.stmt(ctx, q)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

func (w wtx) Query(q string, args ...any) (*sql.Rows, error) {
	st, err := w.stmt(context.Background(), q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(context.Background(), args...)
}

func (w wtx) Exec(q string, args ...any) (sql.Result, error) {
	return w.ExecContext(context.Background(), q, args...)
}

func (w wtx) QueryRow(q string, args ...any) row {
	return w.QueryRowContext(context.Background(), q, args...)
}

// errRefusedFull is the answer to an enqueue while the disk is full.
var errRefusedFull = fmt.Errorf("%w: no space left for new entries (those already stored are still delivered)", store.ErrDiskFull)

// tryBatch runs ops in one transaction on the writer's connection and commits it. It
// returns each operation's own result and, when the transaction failed, the storage error
// that failed all of them (then nothing of the batch was stored). With refuseEnqueues
// every enqueue is refused unrun.
func (s *SQLite) tryBatch(ops []*writeOp, refuseEnqueues bool) ([]error, error) {
	// Operations already accepted run to completion: their callers wait for the answer.
	ctx := context.Background()
	results := make([]error, len(ops))
	b := &batch{live: s.live, counts: map[countKey]int{}}
	tx := wtx{s}
	if _, err := tx.Exec("BEGIN IMMEDIATE"); err != nil {
		return results, storageError(err)
	}
	rollback := func(err error) ([]error, error) {
		_, _ = tx.Exec("ROLLBACK")
		return results, storageError(err)
	}
	// A lone operation needs no savepoint: its own failure rolls back the transaction.
	single := len(ops) == 1
	for i, op := range ops {
		if op.enqueues() && (refuseEnqueues || s.res.refuse()) {
			results[i] = errRefusedFull
			continue
		}
		savepoint := !single && !op.atomic()
		if savepoint {
			if _, err := tx.ExecContext(ctx, "SAVEPOINT op"); err != nil {
				return rollback(err)
			}
		}
		b.drop()
		err := s.hook(op.name)
		if err == nil {
			err = runOp(op, tx, b)
		}
		switch {
		case err == nil:
			b.stand()
		case logical(err) && single:
			results[i] = err
			if _, err := tx.Exec("ROLLBACK"); err != nil {
				return results, storageError(err)
			}
			return results, nil
		case logical(err):
			results[i] = err
			if !savepoint {
				b.stand() // what it wrote stays
			} else if _, err := tx.ExecContext(ctx, "ROLLBACK TO op"); err != nil {
				return rollback(err)
			} else {
				b.drop()
			}
		default:
			return rollback(err)
		}
		if savepoint {
			if _, err := tx.ExecContext(ctx, "RELEASE op"); err != nil {
				return rollback(err)
			}
		}
	}
	live, err := b.writeCounts(tx)
	if err != nil {
		return rollback(err)
	}
	if s.opts.beforeCommit != nil {
		s.opts.beforeCommit(len(ops))
	}
	if err := s.hook("commit"); err != nil {
		return rollback(err)
	}
	if _, err := tx.Exec("COMMIT"); err != nil {
		// A failed COMMIT can leave the transaction open on the connection: end it.
		_, _ = tx.Exec("ROLLBACK")
		return results, storageError(err)
	}
	s.live = live
	if b.recount {
		s.log.Warn("delivery counts counted again from the rows: the batch moved a row whose state schedd does not write",
			zap.String("path", s.path), zap.Int("live", live))
	}
	return results, nil
}

func (s *SQLite) hook(op string) error {
	if s.opts.FaultHook == nil {
		return nil
	}
	return s.opts.FaultHook(op)
}

// getTx reads one entry inside the writer's transaction.
func getTx(tx wtx, where string, arg any, withPayload bool) (store.Entry, error) {
	var r rawRow
	q := "SELECT " + entryCols
	if withPayload {
		q += ", payload"
	}
	err := tx.QueryRow(q+" FROM deliveries WHERE "+where, arg).Scan(r.dest(withPayload)...)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Entry{}, store.ErrNotFound
	}
	if err != nil {
		return store.Entry{}, err
	}
	return r.decode()
}

// getTxQuarantining reads an entry in the transaction, quarantining it if it is damaged.
func (s *SQLite) getTxQuarantining(tx wtx, b *batch, id int64, withPayload bool) (store.Entry, error) {
	e, err := getTx(tx, "id = ?", id, withPayload)
	var d *damagedError
	if errors.As(err, &d) {
		if err := quarantineTx(context.Background(), tx, b, id, store.ReasonQuarantined+": "+d.reason, s.now()); err != nil {
			return store.Entry{}, err
		}
		s.log.Warn("delivery quarantined", zap.Int64("id", id), zap.String("reason", d.reason))
		return getTx(tx, "id = ?", id, withPayload)
	}
	return e, err
}

// NewEpoch allocates the next boot epoch.
func (s *SQLite) NewEpoch(ctx context.Context) (int64, error) {
	var epoch int64
	err := s.submit(ctx, "epoch", func(tx wtx, _ *batch) error {
		return tx.QueryRow("UPDATE meta SET value = value + 1 WHERE key = 'epoch' RETURNING value").Scan(&epoch)
	})
	if err != nil {
		return 0, fmt.Errorf("new epoch: %w", err)
	}
	return epoch, nil
}

// MarkSending claims one entry for epoch.
func (s *SQLite) MarkSending(ctx context.Context, id, epoch int64, lease time.Duration) (store.Entry, error) {
	e, err := s.claimOne(ctx, id, epoch, lease, true, func(ms int64) (string, []any) {
		return "(state = 'pending' OR (state = 'sending' AND (owner_epoch IS NOT ? OR lease_until <= ?)))", []any{epoch, ms}
	})
	if err != nil {
		return store.Entry{}, fmt.Errorf("mark delivery %d sending: %w", id, err)
	}
	return e, nil
}

// ClaimIfDue claims one pending entry that is due, not expired and under maxFailures.
func (s *SQLite) ClaimIfDue(ctx context.Context, id, epoch int64, lease time.Duration, maxFailures int) (store.Entry, error) {
	e, err := s.claimOne(ctx, id, epoch, lease, false, func(ms int64) (string, []any) {
		return "state = 'pending' AND next_attempt_at <= ? AND (expires_at IS NULL OR expires_at > ?) AND failures < ?",
			[]any{ms, ms, maxFailures}
	})
	if err != nil {
		return store.Entry{}, fmt.Errorf("claim delivery %d: %w", id, err)
	}
	return e, nil
}

// claimOne claims entry id for epoch when the condition that cond makes (for the time in
// unix ms) holds: state sending, attempts+1, the lease from now. ErrNotClaimable when it
// does not hold (or the row is damaged: then it is quarantined), ErrNotFound without it.
// The condition takes pending entries, and sending ones too when resending is set.
func (s *SQLite) claimOne(ctx context.Context, id, epoch int64, lease time.Duration, resending bool, cond func(ms int64) (string, []any)) (store.Entry, error) {
	var out store.Entry
	err := s.submit(ctx, "mark_sending", func(tx wtx, b *batch) error {
		now := s.now()
		ms := now.UnixMilli()
		where, args := cond(ms)
		wasSending := false // the row claimed was sending already: it moves in no count
		if resending {
			var st any
			if err := tx.QueryRow("SELECT state FROM deliveries WHERE id = ?", id).Scan(&st); err == nil {
				str, _ := asString(st)
				wasSending = str == string(store.StateSending)
			}
		}
		var r rawRow
		err := tx.QueryRow(`UPDATE deliveries SET state = 'sending', owner_epoch = ?, lease_until = ?,
			attempts = attempts + 1, last_attempt_at = ?, updated_at = ?
			WHERE id = ? AND `+where+`
			RETURNING `+entryCols+", payload",
			append([]any{epoch, now.Add(lease).UnixMilli(), ms, ms, id}, args...)...).Scan(r.dest(true)...)
		if errors.Is(err, sql.ErrNoRows) {
			if _, err := s.getTxQuarantining(tx, b, id, false); err != nil {
				return err
			}
			return store.ErrNotClaimable
		}
		if err != nil {
			return err
		}
		if !wasSending {
			b.move(keyPending, keySending)
		}
		e, err := r.decode()
		var d *damagedError
		if errors.As(err, &d) {
			if err := quarantineTx(context.Background(), tx, b, id, store.ReasonQuarantined+": "+d.reason, now); err != nil {
				return err
			}
			return fmt.Errorf("%w: %s", store.ErrNotClaimable, d.reason)
		}
		out = e
		return err
	})
	return out, err
}

// ownedUpdate runs an UPDATE on an entry sending under epoch, telling apart a missing entry
// from one not owned.
func ownedUpdate(tx wtx, id, epoch int64, set string, args ...any) error {
	res, err := tx.Exec("UPDATE deliveries SET "+set+" WHERE id = ? AND state = 'sending' AND owner_epoch = ?",
		append(args, id, epoch)...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	var one int
	if err := tx.QueryRow("SELECT 1 FROM deliveries WHERE id = ?", id).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	} else if err != nil {
		return err
	}
	return store.ErrNotOwner
}

// Complete makes a sending entry a delivered tombstone. The payload is dropped (its hash and
// size stay, so the idempotency key keeps deduplicating).
func (s *SQLite) Complete(ctx context.Context, id, epoch int64) error {
	err := s.submit(ctx, "complete", func(tx wtx, b *batch) error {
		now := s.now().UnixMilli()
		if err := ownedUpdate(tx, id, epoch, `state = 'delivered', payload = x'', finished_at = ?, updated_at = ?,
			lease_until = NULL`, now, now); err != nil {
			return err
		}
		b.move(keySending, keyDelivered)
		return nil
	})
	if err != nil {
		return fmt.Errorf("complete delivery %d: %w", id, err)
	}
	return nil
}

// Fail records a failed attempt and schedules the next one, or dead-letters the entry.
func (s *SQLite) Fail(ctx context.Context, id, epoch int64, f store.Failure) error {
	err := s.submit(ctx, "fail", func(tx wtx, b *batch) error {
		now := s.now().UnixMilli()
		if f.DeadReason != "" {
			if err := ownedUpdate(tx, id, epoch, `state = 'dead', failures = failures + 1, last_error = ?,
				dead_reason = ?, finished_at = ?, updated_at = ?, owner_epoch = NULL, lease_until = NULL`,
				f.Err, f.DeadReason, now, now); err != nil {
				return err
			}
			b.move(keySending, keyDead)
			return nil
		}
		if err := ownedUpdate(tx, id, epoch, `state = 'pending', failures = failures + 1, last_error = ?,
			next_attempt_at = ?, updated_at = ?, owner_epoch = NULL, lease_until = NULL`,
			f.Err, f.NextAt.UnixMilli(), now); err != nil {
			return err
		}
		b.move(keySending, keyPending)
		return nil
	})
	if err != nil {
		return fmt.Errorf("fail delivery %d: %w", id, err)
	}
	return nil
}

// Release returns a claimed entry to pending without charging a failure.
func (s *SQLite) Release(ctx context.Context, id, epoch int64, nextAt time.Time) error {
	err := s.submit(ctx, "release", func(tx wtx, b *batch) error {
		now := s.now().UnixMilli()
		if err := ownedUpdate(tx, id, epoch, `state = 'pending', next_attempt_at = ?, updated_at = ?,
			owner_epoch = NULL, lease_until = NULL`, nextAt.UnixMilli(), now); err != nil {
			return err
		}
		b.move(keySending, keyPending)
		return nil
	})
	if err != nil {
		return fmt.Errorf("release delivery %d: %w", id, err)
	}
	return nil
}

// Dead dead-letters a pending entry, or a sending one claimed by epoch or whose claim is void.
// In this single-owner store every claim of another epoch is void.
func (s *SQLite) Dead(ctx context.Context, id, epoch int64, reason, lastErr string) error {
	err := s.submit(ctx, "dead", func(tx wtx, b *batch) error {
		now := s.now().UnixMilli()
		// The state it leaves (pending or sending), for the counts.
		var was any
		if err := tx.QueryRow("SELECT state FROM deliveries WHERE id = ?", id).Scan(&was); errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		} else if err != nil {
			return err
		}
		res, err := tx.Exec(`UPDATE deliveries SET state = 'dead', dead_reason = ?,
			last_error = COALESCE(NULLIF(?, ''), last_error), finished_at = ?, updated_at = ?,
			owner_epoch = NULL, lease_until = NULL
			WHERE id = ? AND (state = 'pending' OR (state = 'sending' AND
				(owner_epoch = ? OR owner_epoch IS NOT ? OR lease_until <= ?)))`,
			reason, lastErr, now, now, id, epoch, epoch, now)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 1 {
			b.moveRow(was, int64(0), keyDead) // a live row is never marked
			return nil
		}
		e, err := s.getTxQuarantining(tx, b, id, false)
		if err != nil {
			return err
		}
		if e.State == store.StateSending {
			return store.ErrNotOwner
		}
		return fmt.Errorf("%w: %s", store.ErrWrongState, e.State)
	})
	if err != nil {
		return fmt.Errorf("dead-letter delivery %d: %w", id, err)
	}
	return nil
}

// Retry moves a dead entry back to pending, due now, with its failures reset.
func (s *SQLite) Retry(ctx context.Context, id int64) (store.Entry, error) {
	var out store.Entry
	err := s.submit(ctx, "retry", func(tx wtx, b *batch) error {
		var was, wasMarked any // its place in the counts, as stored
		if err := tx.QueryRow("SELECT state, quarantined FROM deliveries WHERE id = ?", id).Scan(&was, &wasMarked); errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		} else if err != nil {
			return err
		}
		e, err := getTx(tx, "id = ?", id, false)
		var d *damagedError
		if err != nil && !errors.As(err, &d) {
			return err
		}
		if err == nil && e.State != store.StateDead {
			return fmt.Errorf("%w: %s", store.ErrWrongState, e.State)
		}
		if b.live >= s.opts.MaxEntries {
			return &store.BoundError{Err: store.ErrQueueFull, Limit: s.opts.MaxEntries, Got: b.live + 1}
		}
		now := s.now().UnixMilli()
		if _, err := tx.Exec(`UPDATE deliveries SET state = 'pending', failures = 0, next_attempt_at = ?,
			dead_reason = NULL, finished_at = NULL, updated_at = ?, quarantined = 0 WHERE id = ?`,
			now, now, id); err != nil {
			return err
		}
		b.moveRow(was, wasMarked, keyPending)
		out, err = s.getTxQuarantining(tx, b, id, false)
		if err == nil && out.State != store.StatePending {
			// Still damaged: it went straight back to quarantine.
			return fmt.Errorf("%w: %s", store.ErrWrongState, out.DeadReason)
		}
		return err
	})
	if err != nil {
		return store.Entry{}, fmt.Errorf("retry delivery %d: %w", id, err)
	}
	return out, nil
}

// Drop deletes a pending or dead entry.
func (s *SQLite) Drop(ctx context.Context, id int64) error {
	err := s.submit(ctx, "drop", func(tx wtx, b *batch) error {
		var st, marked any
		err := tx.QueryRow("SELECT state, quarantined FROM deliveries WHERE id = ?", id).Scan(&st, &marked)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		state, _ := asString(st)
		switch store.State(state) {
		case store.StateSending:
			return store.ErrBusy
		case store.StateDelivered:
			return fmt.Errorf("%w: a delivered tombstone is kept until purged", store.ErrWrongState)
		}
		if _, err = tx.Exec("DELETE FROM deliveries WHERE id = ?", id); err != nil {
			return err
		}
		b.dropRow(st, marked)
		return nil
	})
	if err != nil {
		return fmt.Errorf("drop delivery %d: %w", id, err)
	}
	return nil
}

// Purge deletes terminal entries that finished before f.OlderThan.
func (s *SQLite) Purge(ctx context.Context, f store.PurgeFilter) (int, error) {
	if f.State != store.StateDead && f.State != store.StateDelivered {
		return 0, fmt.Errorf("purge deliveries: %w: state %q is not dead or delivered", store.ErrInvalid, f.State)
	}
	var n int
	err := s.submit(ctx, "purge", func(tx wtx, b *batch) error {
		n = 0
		q, args := "DELETE FROM deliveries WHERE state = ? AND finished_at < ?", []any{string(f.State), f.OlderThan.UnixMilli()}
		if f.Limit > 0 {
			q = "DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE state = ? AND finished_at < ? ORDER BY finished_at, id LIMIT ?)"
			args = append(args, f.Limit)
		}
		// Each row's mark, for the counts (a dead letter's place depends on it).
		rows, err := tx.Query(q+" RETURNING quarantined", args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var marked any
			if err := rows.Scan(&marked); err != nil {
				return err
			}
			b.dropRow(string(f.State), marked)
			n++
		}
		return rows.Err()
	})
	if err != nil {
		return 0, fmt.Errorf("purge deliveries: %w", err)
	}
	return n, nil
}
