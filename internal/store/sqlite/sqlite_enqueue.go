package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/schedd/schedd/internal/store"
)

// Enqueue stores a new entry, or returns the one holding the same idempotency key.
func (s *SQLite) Enqueue(ctx context.Context, n store.NewEntry) (store.Entry, bool, error) {
	r, err := n.Encode(s.opts.MaxPayload)
	if err != nil {
		return store.Entry{}, false, err
	}
	var out store.Entry
	var created bool
	err = s.submit(ctx, opEnqueue, func(tx wtx, b *batch) (err error) {
		out, created, err = s.insertTx(tx, b, &r)
		return err
	})
	if err != nil {
		return store.Entry{}, false, fmt.Errorf("enqueue: %w", err)
	}
	return out, created, nil
}

// EnqueueBatch stores the entries of ns in one operation of the group commit, so in one
// transaction: each entry as Enqueue stores it, in order.
func (s *SQLite) EnqueueBatch(ctx context.Context, ns []store.NewEntry) ([]store.EnqueueResult, error) {
	rows := make([]store.Encoded, len(ns))
	bad := make([]error, len(ns)) // what prepare refused: never submitted
	for i, n := range ns {
		rows[i], bad[i] = n.Encode(s.opts.MaxPayload)
	}
	out := make([]store.EnqueueResult, len(ns))
	err := s.submit(ctx, opEnqueueBatch, func(tx wtx, b *batch) error {
		for i := range rows {
			if bad[i] != nil {
				out[i] = store.EnqueueResult{Err: bad[i]}
				continue
			}
			e, created, err := s.insertTx(tx, b, &rows[i])
			if err != nil && !logical(err) {
				return err // the batch fails as a whole, rolled back
			}
			if err != nil {
				err = fmt.Errorf("enqueue: %w", err)
			}
			out[i] = store.EnqueueResult{Entry: e, Created: created, Err: err}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("enqueue %d deliveries: %w", len(ns), err)
	}
	return out, nil
}

// insertTx stores r in the writer's transaction, or returns the entry that holds its key
// (P11). It counts a stored entry in b.
func (s *SQLite) insertTx(tx wtx, b *batch, r *store.Encoded) (store.Entry, bool, error) {
	n := &r.New
	// The existing entry holding the key, if any.
	existing := func() (store.Entry, bool, error) {
		var id int64
		var hash []byte
		err := tx.QueryRow("SELECT id, payload_hash FROM deliveries WHERE idem_key = ?", n.Key).Scan(&id, &hash)
		if err != nil {
			return store.Entry{}, false, err
		}
		e, err := s.getTxQuarantining(tx, b, id, false)
		if err != nil {
			return store.Entry{}, false, err
		}
		if e.Sink != n.Sink || !bytes.Equal(hash, r.Sum[:]) {
			return store.Entry{}, false, &store.KeyMismatchError{Key: n.Key, Existing: e}
		}
		return e, false, nil
	}
	if live := b.live + b.delta; live >= s.opts.MaxEntries {
		// Full: a key seen before still gets its entry back.
		if e, created, err := existing(); !errors.Is(err, sql.ErrNoRows) {
			return e, created, err
		}
		return store.Entry{}, false, &store.BoundError{Err: store.ErrQueueFull, Limit: s.opts.MaxEntries, Got: live + 1}
	}
	now := s.now().UnixMilli()
	next := now
	if !n.NotBefore.IsZero() {
		next = max(now, n.NotBefore.UnixMilli())
	}
	// One statement on the common path: the insert, which does nothing for a key seen
	// before.
	// An Exec, not INSERT ... RETURNING: RETURNING buffers its rows in an ephemeral
	// table, a b-tree opened and freed per statement.
	res, err := tx.Exec(`INSERT INTO deliveries (sink, idem_key, headers, payload, payload_size, payload_hash,
		priority, state, next_attempt_at, created_at, updated_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?) ON CONFLICT (idem_key) DO NOTHING`,
		n.Sink, n.Key, r.Headers, r.Payload, len(r.Payload), r.Sum[:], n.Priority, next, now, now, nullMs(n.ExpiresAt))
	if err != nil {
		return store.Entry{}, false, err
	}
	if k, err := res.RowsAffected(); err != nil {
		return store.Entry{}, false, err
	} else if k == 0 {
		return existing()
	}
	id, err := res.LastInsertId()
	if err != nil {
		return store.Entry{}, false, err
	}
	b.add(keyPending, 1)
	return r.Stored(id, next, now), true, nil
}
