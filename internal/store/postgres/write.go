package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedd/schedd/internal/store"
)

// claimable is the condition under which @epoch (of host @host) may claim row d at @now:
// pending, or sending past its lease, or sending under another epoch that is not alive on
// another host (an earlier epoch of this host is a dead process; see the package comment).
const claimable = `(d.state = 'pending' OR (d.state = 'sending' AND (d.lease_until <= @now OR
	(d.owner_epoch <> @epoch AND NOT EXISTS (SELECT 1 FROM schedd_epochs o
		WHERE o.epoch = d.owner_epoch AND o.host_id <> @host AND o.alive_until > @now)))))`

// claimArgs are the arguments of claimable, with more.
func (s *Store) claimArgs(epoch, now int64, more pgx.NamedArgs) pgx.NamedArgs {
	a := pgx.NamedArgs{"epoch": epoch, "host": s.opts.HostID, "now": now}
	maps.Copy(a, more)
	return a
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// why explains an update that matched no row: ErrNotFound when id does not exist, else
// what byState says of the entry's state.
func (s *Store) why(ctx context.Context, q querier, id int64, byState func(store.State) error) error {
	var st string
	err := q.QueryRow(ctx, "SELECT state FROM schedd_deliveries WHERE id = $1", id).Scan(&st)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	if err != nil {
		return err
	}
	return byState(store.State(st))
}

// explain is why for a statement that ran alone: a failure to read is the store's error.
func (s *Store) explain(ctx context.Context, id int64, byState func(store.State) error) error {
	err := s.why(ctx, s.pool, id, byState)
	if err != nil && !logical(err) {
		return s.fail(err)
	}
	return err
}

// update runs one statement on entry id, alone (one round trip, its own commit); when it
// matched no row, why explains it with byState, from what is committed by then.
func (s *Store) update(ctx context.Context, id int64, byState func(store.State) error, sql string, args ...any) error {
	if err := s.usable(); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, sql, args...)
	if err != nil {
		return s.fail(err)
	}
	s.setConnected(nil)
	if tag.RowsAffected() == 0 {
		return s.explain(ctx, id, byState)
	}
	return nil
}

// MarkSending claims one entry for epoch, with the store calls of concurrent callers (see
// Store.ops).
func (s *Store) MarkSending(ctx context.Context, id, epoch int64, lease time.Duration) (store.Entry, error) {
	e, err := s.op(ctx, opReq{kind: opClaim, id: id, epoch: epoch, lease: lease})
	if err != nil {
		return store.Entry{}, fmt.Errorf("mark %d sending: %w", id, err)
	}
	return e, nil
}

// ClaimIfDue claims one pending entry that is due, not expired and under maxFailures, with
// the store calls of concurrent callers (see Store.ops).
func (s *Store) ClaimIfDue(ctx context.Context, id, epoch int64, lease time.Duration, maxFailures int) (store.Entry, error) {
	e, err := s.op(ctx, opReq{kind: opClaimDue, id: id, epoch: epoch, lease: lease, maxFailures: maxFailures})
	if err != nil {
		return store.Entry{}, fmt.Errorf("claim %d: %w", id, err)
	}
	return e, nil
}

// owned runs an update of a sending entry held by epoch; ErrNotOwner when it matched none.
func (s *Store) owned(ctx context.Context, what string, id int64, sql string, args pgx.NamedArgs) error {
	args["id"], args["now"] = id, s.now()
	err := s.update(ctx, id, func(store.State) error { return store.ErrNotOwner },
		sql+" WHERE id = @id AND state = 'sending' AND owner_epoch = @epoch", args)
	if err != nil {
		return fmt.Errorf("%s %d: %w", what, id, err)
	}
	return nil
}

// Complete records a delivery: the entry becomes a delivered tombstone, with the store
// calls of concurrent callers (see Store.ops).
func (s *Store) Complete(ctx context.Context, id, epoch int64) error {
	if _, err := s.op(ctx, opReq{kind: opComplete, id: id, epoch: epoch}); err != nil {
		return fmt.Errorf("complete %d: %w", id, err)
	}
	return nil
}

// Fail records a failed attempt, rescheduled or dead-lettered.
func (s *Store) Fail(ctx context.Context, id, epoch int64, f store.Failure) error {
	if f.DeadReason != "" {
		return s.owned(ctx, "fail", id, `UPDATE schedd_deliveries SET state = 'dead', failures = failures + 1,
			last_error = @err, dead_reason = @reason, finished_at = @now, updated_at = @now, lease_until = NULL`,
			pgx.NamedArgs{"epoch": epoch, "err": f.Err, "reason": f.DeadReason})
	}
	return s.owned(ctx, "fail", id, `UPDATE schedd_deliveries SET state = 'pending', failures = failures + 1,
		last_error = @err, next_attempt_at = @next, updated_at = @now, owner_epoch = NULL, lease_until = NULL`,
		pgx.NamedArgs{"epoch": epoch, "err": f.Err, "next": f.NextAt.UnixMilli()})
}

// Release returns a claimed entry to pending without charging a failure.
func (s *Store) Release(ctx context.Context, id, epoch int64, nextAt time.Time) error {
	return s.owned(ctx, "release", id, `UPDATE schedd_deliveries SET state = 'pending', next_attempt_at = @next,
		updated_at = @now, owner_epoch = NULL, lease_until = NULL`, pgx.NamedArgs{"epoch": epoch, "next": nextAt.UnixMilli()})
}

// Dead dead-letters a pending entry, or a sending one that epoch holds or could claim.
func (s *Store) Dead(ctx context.Context, id, epoch int64, reason, lastErr string) error {
	err := s.update(ctx, id, func(st store.State) error {
		if st.Terminal() {
			return store.ErrWrongState
		}
		return store.ErrNotOwner
	}, `UPDATE schedd_deliveries d SET state = 'dead', dead_reason = @reason,
		last_error = CASE WHEN @lasterr = '' THEN last_error ELSE @lasterr END,
		finished_at = @now, updated_at = @now, lease_until = NULL
		WHERE id = @id AND (d.owner_epoch = @epoch AND d.state = 'sending' OR `+claimable+")",
		s.claimArgs(epoch, s.now(), pgx.NamedArgs{"id": id, "reason": reason, "lasterr": lastErr}))
	if err != nil {
		return fmt.Errorf("dead-letter %d: %w", id, err)
	}
	return nil
}

// Retry moves a dead entry back to pending, due now, with its failures reset.
func (s *Store) Retry(ctx context.Context, id int64) (store.Entry, error) {
	var e store.Entry
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		e, err = scanEntry(tx.QueryRow(ctx, `UPDATE schedd_deliveries SET state = 'pending', failures = 0,
			dead_reason = NULL, next_attempt_at = $2, finished_at = NULL, updated_at = $2, owner_epoch = NULL,
			lease_until = NULL WHERE id = $1 AND state = 'dead' RETURNING `+colsPayload, id, s.now()), true)
		if errors.Is(err, pgx.ErrNoRows) {
			return s.why(ctx, tx, id, func(store.State) error { return store.ErrWrongState })
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", Channel, s.opts.HostID)
		return err
	})
	if err != nil {
		return store.Entry{}, fmt.Errorf("retry %d: %w", id, err)
	}
	return e, nil
}

// Drop deletes a pending or dead entry; a delivered tombstone is kept.
func (s *Store) Drop(ctx context.Context, id int64) error {
	err := s.update(ctx, id, func(st store.State) error {
		if st == store.StateSending {
			return store.ErrBusy
		}
		return store.ErrWrongState
	}, "DELETE FROM schedd_deliveries WHERE id = $1 AND state IN ('pending', 'dead')", id)
	if err != nil {
		return fmt.Errorf("drop %d: %w", id, err)
	}
	return nil
}

// Purge deletes terminal entries of f.State that finished before f.OlderThan.
func (s *Store) Purge(ctx context.Context, f store.PurgeFilter) (int, error) {
	if !f.State.Terminal() {
		return 0, fmt.Errorf("purge: %w: state %q is not terminal", store.ErrInvalid, f.State)
	}
	if err := s.ready(); err != nil {
		return 0, fmt.Errorf("purge: %w", err)
	}
	q, args := "DELETE FROM schedd_deliveries WHERE state = $1 AND finished_at < $2", []any{string(f.State), f.OlderThan.UnixMilli()}
	if f.Limit > 0 {
		q = "DELETE FROM schedd_deliveries WHERE id IN (SELECT id FROM schedd_deliveries WHERE state = $1 AND finished_at < $2 ORDER BY finished_at, id LIMIT $3)"
		args = append(args, f.Limit)
	}
	tag, err := s.pool.Exec(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("purge: %w", s.fail(err))
	}
	return int(tag.RowsAffected()), nil
}
