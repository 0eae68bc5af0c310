package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"

	"github.com/schedd/schedd/internal/store"
)

// refCols are the columns of a store.Ref, in the order refs scans them.
const refCols = "id, sink, priority, state, failures, next_attempt_at, expires_at, owner_epoch"

// The pages of Near: pending entries due before ? after (?, ?), from deliveries_next;
// sending entries after id ?, from deliveries_sending.
const (
	nearPendingSQL = "SELECT " + refCols + ` FROM deliveries INDEXED BY deliveries_next
		WHERE state = 'pending' AND next_attempt_at < ? AND (next_attempt_at, id) > (?, ?)
		ORDER BY next_attempt_at, id LIMIT ?`
	nearSendingSQL = "SELECT " + refCols + ` FROM deliveries INDEXED BY deliveries_sending
		WHERE state = 'sending' AND id > ? ORDER BY id LIMIT ?`
	firstDueSQL = `SELECT next_attempt_at FROM deliveries INDEXED BY deliveries_next
		WHERE state = 'pending' AND next_attempt_at >= ? ORDER BY next_attempt_at LIMIT 1`
)

// Near passes to f, at most page at a time, the pending entries due before before (from
// the index on their due time), then every sending one (from theirs).
func (s *SQLite) Near(ctx context.Context, before time.Time, page int, f func([]store.Ref)) error {
	page = max(page, 1)
	var at, after int64 = math.MinInt64, 0
	for {
		refs, err := s.refs(ctx, "near deliveries", nearPendingSQL, before.UnixMilli(), at, after, page)
		if err != nil {
			return err
		}
		if len(refs) > 0 {
			f(refs)
			last := refs[len(refs)-1]
			at, after = last.NextAttemptAt.UnixMilli(), last.ID
		}
		if len(refs) < page {
			break
		}
	}
	for after = 0; ; {
		refs, err := s.refs(ctx, "near deliveries", nearSendingSQL, after, page)
		if err != nil {
			return err
		}
		if len(refs) > 0 {
			f(refs)
			after = refs[len(refs)-1].ID
		}
		if len(refs) < page {
			return nil
		}
	}
}

// FirstDue returns the earliest due time of the pending entries due at or after from.
func (s *SQLite) FirstDue(ctx context.Context, from time.Time) (time.Time, bool, error) {
	var ms int64
	err := s.rdb.QueryRowContext(ctx, firstDueSQL, from.UnixMilli()).Scan(&ms)
	switch {
	case err == sql.ErrNoRows:
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, fmt.Errorf("first due delivery: %w", err)
	}
	return time.UnixMilli(ms), true, nil
}

// refs runs q, which selects refCols, and returns its rows as refs. A row whose scheduling
// columns cannot be decoded is quarantined (dead-lettered with a reason) and left out.
func (s *SQLite) refs(ctx context.Context, what, q string, args ...any) ([]store.Ref, error) {
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []store.Ref
	var damaged []*damagedError
	for rows.Next() {
		var v [8]any
		if err := rows.Scan(&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		var r store.Ref
		var ok [6]bool
		r.ID, ok[0] = asInt(v[0])
		r.Sink, ok[1] = asString(v[1])
		var p, f int64
		p, ok[2] = asInt(v[2])
		f, ok[3] = asInt(v[4])
		r.Priority, r.Failures = int(p), int(f)
		st, _ := asString(v[3])
		r.State = store.State(st)
		r.NextAttemptAt, ok[4] = asTime(v[5], true)
		r.ExpiresAt, ok[5] = asTime(v[6], false)
		r.Epoch, _ = asInt(v[7])
		if !ok[0] {
			continue
		}
		if ok != [6]bool{true, true, true, true, true, true} || r.Sink == "" {
			damaged = append(damaged, &damagedError{id: r.ID, reason: "damaged scheduling columns"})
			continue
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	rows.Close()
	for _, d := range damaged {
		if err := s.quarantine(ctx, d); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	return out, nil
}

// Near passes the entries due before before and the sending ones; none while the store is
// not open.
func (l *Lazy) Near(ctx context.Context, before time.Time, page int, f func([]store.Ref)) error {
	if s := l.s.Load(); s != nil {
		return s.Near(ctx, before, page, f)
	}
	return nil
}

// FirstDue returns the earliest due time from from on; none while the store is not open.
func (l *Lazy) FirstDue(ctx context.Context, from time.Time) (time.Time, bool, error) {
	if s := l.s.Load(); s != nil {
		return s.FirstDue(ctx, from)
	}
	return time.Time{}, false, nil
}
