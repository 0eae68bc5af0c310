package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedd/schedd/internal/store"
)

// cols are an entry's columns without its payload, NULLs read as zero values.
const cols = `id, sink, idem_key, headers, payload_size, priority, state, attempts, failures, next_attempt_at,
	COALESCE(last_attempt_at, 0), COALESCE(last_error, ''), COALESCE(dead_reason, ''), created_at, updated_at,
	COALESCE(finished_at, 0), COALESCE(expires_at, 0), COALESCE(owner_epoch, 0), COALESCE(lease_until, 0), quarantined`

const colsPayload = cols + ", payload"

// scanEntry reads one row of cols (and the payload when withPayload), then extra columns.
func scanEntry(row pgx.Row, withPayload bool, extra ...any) (store.Entry, error) {
	var e store.Entry
	var headers, state string
	var next, last, created, updated, finished, expires, lease int64
	dst := []any{&e.ID, &e.Sink, &e.Key, &headers, &e.PayloadSize, &e.Priority, &state, &e.Attempts, &e.Failures,
		&next, &last, &e.LastError, &e.DeadReason, &created, &updated, &finished, &expires, &e.Epoch, &lease, &e.Quarantined}
	if withPayload {
		dst = append(dst, &e.Payload)
	}
	if err := row.Scan(append(dst, extra...)...); err != nil {
		return store.Entry{}, err
	}
	e.State = store.State(state)
	if headers != "{}" && headers != "" {
		if err := json.Unmarshal([]byte(headers), &e.Headers); err != nil {
			return store.Entry{}, fmt.Errorf("%w: entry %d: headers: %v", store.ErrCorrupt, e.ID, err)
		}
	}
	if withPayload && e.Payload == nil {
		e.Payload = []byte{}
	}
	e.NextAttemptAt, e.LastAttemptAt, e.CreatedAt, e.UpdatedAt = ms(next), ms(last), ms(created), ms(updated)
	e.FinishedAt, e.ExpiresAt, e.LeaseUntil = ms(finished), ms(expires), ms(lease)
	return e, nil
}

// query runs a read and collects its entries.
func (s *Store) query(ctx context.Context, withPayload bool, sql string, args ...any) ([]store.Entry, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	var out []store.Entry
	for rows.Next() {
		e, err := scanEntry(rows, withPayload)
		if err != nil {
			return nil, s.fail(err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(err)
	}
	return out, nil
}

// Get returns one entry with its payload, read with the store calls of concurrent callers
// (see Store.ops: the delivery runtime's workers each read the entry they are about to
// claim).
func (s *Store) Get(ctx context.Context, id int64) (store.Entry, error) {
	e, err := s.op(ctx, opReq{kind: opGet, id: id})
	if err != nil {
		return store.Entry{}, fmt.Errorf("get %d: %w", id, err)
	}
	return e, nil
}

// List returns entries without payloads, in id order, after the filter's cursor.
func (s *Store) List(ctx context.Context, f store.Filter) ([]store.Entry, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	es, err := s.query(ctx, false, "SELECT "+cols+` FROM schedd_deliveries
		WHERE id > $1 AND ($2 = '' OR state = $2) AND ($3 = '' OR sink = $3) ORDER BY id LIMIT $4`,
		f.AfterID, string(f.State), f.Sink, limit)
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	return es, nil
}

// Live returns pending and sending entries with id > afterID, in id order.
func (s *Store) Live(ctx context.Context, afterID int64, limit int) ([]store.Ref, error) {
	es, err := s.query(ctx, false, "SELECT "+cols+` FROM schedd_deliveries
		WHERE state IN ('pending', 'sending') AND id > $1 ORDER BY id LIMIT $2`, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	return refsOf(es), nil
}

// refsOf is the refs of es.
func refsOf(es []store.Entry) []store.Ref {
	refs := make([]store.Ref, len(es))
	for i, e := range es {
		refs[i] = store.Ref{ID: e.ID, Sink: e.Sink, Priority: e.Priority, State: e.State, Failures: e.Failures,
			NextAttemptAt: e.NextAttemptAt, ExpiresAt: e.ExpiresAt, Epoch: e.Epoch}
	}
	return refs
}

// The pages of Near: pending entries due before $1 after ($2, $3), from the index on
// (next_attempt_at, id); sending entries after id $1, from the index on them.
var (
	nearPendingSQL = "SELECT " + cols + ` FROM schedd_deliveries
		WHERE state = 'pending' AND next_attempt_at < $1 AND (next_attempt_at, id) > ($2, $3)
		ORDER BY next_attempt_at, id LIMIT $4`
	nearSendingSQL = "SELECT " + cols + ` FROM schedd_deliveries
		WHERE state = 'sending' AND id > $1 ORDER BY id LIMIT $2`
)

// Near passes to f, at most page at a time, the live entries a runtime has to look at again:
// the pending ones due before before (from the index on next_attempt_at), then every sending
// one. It reads what is due soon and what is in flight, never the whole backlog.
func (s *Store) Near(ctx context.Context, before time.Time, page int, f func([]store.Ref)) error {
	var at, after int64 = math.MinInt64, 0
	for {
		es, err := s.query(ctx, false, nearPendingSQL, before.UnixMilli(), at, after, page)
		if err != nil {
			return fmt.Errorf("near: %w", err)
		}
		if len(es) > 0 {
			f(refsOf(es))
			last := es[len(es)-1]
			at, after = last.NextAttemptAt.UnixMilli(), last.ID
		}
		if len(es) < page {
			break
		}
	}
	for after = 0; ; {
		es, err := s.query(ctx, false, nearSendingSQL, after, page)
		if err != nil {
			return fmt.Errorf("near: %w", err)
		}
		if len(es) > 0 {
			f(refsOf(es))
			after = es[len(es)-1].ID
		}
		if len(es) < page {
			return nil
		}
	}
}

// countsSQL sums the counts the store keeps in its slots as it writes (the table
// schedd_delivery_counts and its triggers, schema steps 3 and 4): a few rows whatever the size of
// the queue. The oldest live entry is the first one enqueued that is still live, the first
// entry of the live index.
const countsSQL = `SELECT COALESCE(sum(pending), 0), COALESCE(sum(sending), 0), COALESCE(sum(delivered), 0),
	COALESCE(sum(dead), 0), COALESCE(sum(quarantined), 0),
	(SELECT created_at FROM schedd_deliveries WHERE state IN ('pending', 'sending') ORDER BY id LIMIT 1)
	FROM schedd_delivery_counts`

// Counts returns the number of entries per state and the oldest pending one.
// Before the database was first reached they are zero (Info says the store is not open).
func (s *Store) Counts(ctx context.Context) (store.Counts, error) {
	var c store.Counts
	if s.ready() != nil {
		return c, nil
	}
	var oldest *int64
	err := s.pool.QueryRow(ctx, countsSQL).Scan(&c.Pending, &c.Sending, &c.Delivered, &c.Dead, &c.Quarantined, &oldest)
	if err != nil {
		return store.Counts{}, fmt.Errorf("counts: %w", s.fail(err))
	}
	if oldest != nil {
		c.OldestAt = ms(*oldest)
	}
	return c, nil
}
