package pgstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedd/schedd/internal/queue"
)

// newRow is a new entry checked and encoded for its insert.
type newRow struct {
	n       queue.NewEntry
	headers string
	payload []byte
	sum     [sha256.Size]byte
}

func (s *Store) prepare(n queue.NewEntry) (newRow, error) {
	headers, payload, sum, err := n.Encode(s.opts.MaxPayload)
	if err != nil {
		return newRow{}, err
	}
	return newRow{n: n, headers: headers, payload: payload, sum: sum}, nil
}

// Enqueue stores a new entry, or returns the one holding the same idempotency key.
func (s *Store) Enqueue(ctx context.Context, n queue.NewEntry) (queue.Entry, bool, error) {
	res, err := s.EnqueueBatch(ctx, []queue.NewEntry{n})
	if err != nil {
		return queue.Entry{}, false, err
	}
	return res[0].Entry, res[0].Created, res[0].Err
}

// EnqueueBatch stores the entries of ns in one transaction, each as Enqueue stores it, in
// order, and notifies the fleet once it committed something.
func (s *Store) EnqueueBatch(ctx context.Context, ns []queue.NewEntry) ([]queue.EnqueueResult, error) {
	rows := make([]newRow, len(ns))
	out := make([]queue.EnqueueResult, len(ns)) // an entry that fails its checks has its Err already
	todo := false
	for i, n := range ns {
		rows[i], out[i].Err = s.prepare(n)
		todo = todo || out[i].Err == nil
	}
	if !todo {
		return out, nil
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var live int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM schedd_deliveries WHERE state IN ('pending', 'sending')`).Scan(&live); err != nil {
			return err
		}
		created := false
		for i := range rows {
			if out[i].Err != nil {
				continue
			}
			e, c, err := s.insertTx(ctx, tx, &rows[i], live)
			if err != nil && !logical(err) {
				return err
			}
			if err != nil {
				err = fmt.Errorf("enqueue: %w", err)
			}
			if c {
				live++
				created = true
			}
			out[i] = queue.EnqueueResult{Entry: e, Created: c, Err: err}
		}
		if created {
			// Delivered to the listeners at commit, and only if it commits.
			if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", Channel, s.opts.HostID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if len(ns) == 1 {
			return nil, fmt.Errorf("enqueue: %w", err)
		}
		return nil, fmt.Errorf("enqueue %d deliveries: %w", len(ns), err)
	}
	return out, nil
}

// insertTx stores r, or returns the entry that holds its key (P11).
func (s *Store) insertTx(ctx context.Context, tx pgx.Tx, r *newRow, live int) (queue.Entry, bool, error) {
	n := &r.n
	existing := func() (queue.Entry, bool, error) {
		var hash []byte
		e, err := scanEntry(tx.QueryRow(ctx, "SELECT "+colsPayload+", payload_hash FROM schedd_deliveries WHERE idem_key = $1", n.Key), true, &hash)
		if err != nil {
			return queue.Entry{}, false, err
		}
		if e.Sink != n.Sink || !bytes.Equal(hash, r.sum[:]) {
			return queue.Entry{}, false, &queue.KeyMismatchError{Key: n.Key, Existing: e}
		}
		return e, false, nil
	}
	if live >= s.opts.MaxEntries {
		if e, created, err := existing(); !errors.Is(err, pgx.ErrNoRows) {
			return e, created, err
		}
		return queue.Entry{}, false, &queue.BoundError{Err: queue.ErrQueueFull, Limit: s.opts.MaxEntries, Got: live + 1}
	}
	now := s.now()
	next := now
	if !n.NotBefore.IsZero() {
		next = max(now, n.NotBefore.UnixMilli())
	}
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO schedd_deliveries (sink, idem_key, headers, payload, payload_size, payload_hash,
		priority, state, next_attempt_at, created_at, updated_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9, $9, NULLIF($10::BIGINT, 0)) ON CONFLICT (idem_key) DO NOTHING RETURNING id`,
		n.Sink, n.Key, r.headers, r.payload, len(r.payload), r.sum[:], n.Priority, next, now, nullMs(n.ExpiresAt)).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return existing()
	}
	if err != nil {
		return queue.Entry{}, false, err
	}
	var headers map[string]string
	if len(n.Headers) > 0 {
		headers = maps.Clone(n.Headers)
	}
	return queue.Entry{
		ID: id, Sink: n.Sink, Key: n.Key, Headers: headers, Payload: bytes.Clone(r.payload),
		PayloadSize: len(r.payload), Priority: n.Priority, State: queue.StatePending,
		NextAttemptAt: ms(next), CreatedAt: ms(now), UpdatedAt: ms(now), ExpiresAt: ms(nullMs(n.ExpiresAt)),
	}, true, nil
}

// nullMs is t in milliseconds, or 0 (stored as NULL by the callers' NULLIF) for zero.
func nullMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// ms is the instant of a millisecond stamp; 0 is the zero time.
func ms(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}
