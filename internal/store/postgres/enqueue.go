package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedd/schedd/internal/store"
)

// Enqueue stores a new entry, or returns the one holding the same idempotency key.
func (s *Store) Enqueue(ctx context.Context, n store.NewEntry) (store.Entry, bool, error) {
	res, err := s.EnqueueBatch(ctx, []store.NewEntry{n})
	if err != nil {
		return store.Entry{}, false, err
	}
	return res[0].Entry, res[0].Created, res[0].Err
}

// EnqueueBatch stores the entries of ns, each as Enqueue stores it, in order, and notifies
// the fleet once it committed something. Far below MaxEntries (see liveCount) the batch is
// one statement: a multi-row insert that skips the keys already stored, and notifies; the
// entries whose key was there get the stored entry back, read after. Near the bound every
// entry is checked against a count of the live entries in one transaction (enqueueExact).
func (s *Store) EnqueueBatch(ctx context.Context, ns []store.NewEntry) ([]store.EnqueueResult, error) {
	rows := make([]store.Encoded, len(ns))
	out := make([]store.EnqueueResult, len(ns)) // an entry that fails its checks has its Err already
	var todo []int
	for i, n := range ns {
		if rows[i], out[i].Err = n.Encode(s.opts.MaxPayload); out[i].Err == nil {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return out, nil
	}
	room, err := s.room(ctx, len(todo))
	if err == nil && room {
		todo, err = s.insertGrouped(ctx, rows, todo, out)
	}
	if err == nil && len(todo) > 0 {
		err = s.enqueueExact(ctx, rows, todo, out)
	}
	if err != nil {
		if len(ns) == 1 {
			return nil, fmt.Errorf("enqueue: %w", err)
		}
		return nil, fmt.Errorf("enqueue %d deliveries: %w", len(ns), err)
	}
	return out, nil
}

// insertManySQL (arguments: now, then the arrays of sinks, keys, headers, payloads, hashes,
// priorities, next attempts and expiries, then the channel, the host and whether to
// notify; positional, as a named one is rewritten on every call) inserts the rows of its
// arrays in their order, skipping the keys stored
// already (by another entry of the same statement too), and notifies the fleet when it
// inserted any and @notify (see notifyGate), all in one statement, so in one round trip and
// one commit. (n is one row, the count: it makes the notification run, and does not
// filter ins.)
const insertManySQL = `WITH ins AS (
	INSERT INTO schedd_deliveries (sink, idem_key, headers, payload, payload_size, payload_hash,
		priority, state, next_attempt_at, created_at, updated_at, expires_at)
	SELECT t.sink, t.idem_key, t.headers, t.payload, octet_length(t.payload), t.hash, t.priority, 'pending',
		t.next, $1, $1, NULLIF(t.expires, 0)
	FROM unnest($2::text[], $3::text[], $4::text[], $5::bytea[], $6::bytea[],
		$7::int[], $8::bigint[], $9::bigint[]) WITH ORDINALITY
		AS t(sink, idem_key, headers, payload, hash, priority, next, expires, ord)
	ORDER BY t.ord
	ON CONFLICT (idem_key) DO NOTHING
	RETURNING id, idem_key)
SELECT ins.id, ins.idem_key FROM ins, (SELECT count(*) FROM (SELECT pg_notify($10, $11)
	WHERE $12::boolean AND EXISTS (SELECT 1 FROM ins)) AS x) AS n`

// insertOneSQL inserts one entry unless its key is stored (arguments: sink, key, headers,
// payload, its size and hash, priority, next attempt, now, expiry). A statement of its own
// for one entry that does not notify: the database does less for it than for the arrays.
const insertOneSQL = `INSERT INTO schedd_deliveries (sink, idem_key, headers, payload, payload_size, payload_hash,
	priority, state, next_attempt_at, created_at, updated_at, expires_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9, $9, NULLIF($10::BIGINT, 0))
	ON CONFLICT (idem_key) DO NOTHING RETURNING id, idem_key`

// insertMany stores rows[i] for i in todo with one statement and fills out[i]: created, or
// the entry stored before under its key (or a KeyMismatchError). It returns the entries it
// could not settle (their key's entry was gone by the time it was read), for enqueueExact.
func (s *Store) insertMany(ctx context.Context, rows []store.Encoded, todo []int, out []store.EnqueueResult) ([]int, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	k := len(todo)
	sinks, keys, headers := make([]string, k), make([]string, k), make([]string, k)
	payloads, hashes := make([][]byte, k), make([][]byte, k)
	priorities, nexts, expires := make([]int32, k), make([]int64, k), make([]int64, k)
	now := s.now()
	for j, i := range todo {
		r := &rows[i]
		sinks[j], keys[j], headers[j], payloads[j], hashes[j] = r.New.Sink, r.New.Key, r.Headers, r.Payload, r.Sum[:]
		priorities[j], nexts[j], expires[j] = int32(r.New.Priority), now, nullMs(r.New.ExpiresAt)
		if !r.New.NotBefore.IsZero() {
			nexts[j] = max(now, r.New.NotBefore.UnixMilli())
		}
	}
	created := make(map[string]int64, k)
	notify := s.notifyNow()
	var rs pgx.Rows
	var err error
	if k == 1 && !notify {
		rs, err = s.pool.Query(ctx, insertOneSQL, sinks[0], keys[0], headers[0], payloads[0], len(payloads[0]), hashes[0],
			priorities[0], nexts[0], now, expires[0])
	} else {
		rs, err = s.pool.Query(ctx, insertManySQL, now, sinks, keys, headers, payloads, hashes, priorities, nexts,
			expires, Channel, s.opts.HostID, notify)
	}
	if err == nil {
		var id int64
		var key string
		_, err = pgx.ForEachRow(rs, []any{&id, &key}, func() error {
			created[key] = id
			return nil
		})
	}
	if err != nil {
		return nil, s.failSent(err)
	}
	s.setConnected(nil)
	if !notify && len(created) > 0 {
		s.owe()
	}
	var again []int
	var seen []string // keys stored before, or given twice
	for j, i := range todo {
		id, ok := created[keys[j]]
		if !ok {
			seen = append(seen, keys[j])
			continue
		}
		delete(created, keys[j]) // a second entry with the key gets the first one's entry
		out[i] = store.EnqueueResult{Created: true, Entry: rows[i].Stored(id, nexts[j], now)}
	}
	if len(seen) == 0 {
		return nil, nil
	}
	stored, err := s.byKeys(ctx, seen)
	if err != nil {
		return nil, err
	}
	for j, i := range todo {
		if out[i].Created {
			continue
		}
		e, ok := stored[keys[j]]
		switch {
		case !ok:
			again = append(again, i) // dropped since: store it anew
		case e.Sink != rows[i].New.Sink || !bytes.Equal(e.hash, rows[i].Sum[:]):
			out[i].Err = fmt.Errorf("enqueue: %w", &store.KeyMismatchError{Key: keys[j], Existing: e.Entry})
		default:
			out[i].Entry = e.Entry
		}
	}
	return again, nil
}

// enqueueJob is one caller's share of a grouped insertMany.
type enqueueJob struct {
	rows  []store.Encoded
	todo  []int
	out   []store.EnqueueResult
	again []int
}

// insertGrouped is insertMany for the room that room reserved, run with the inserts of
// concurrent callers (Store.inserts) in one statement; it settles the reservation.
func (s *Store) insertGrouped(ctx context.Context, rows []store.Encoded, todo []int, out []store.EnqueueResult) ([]int, error) {
	j := &enqueueJob{rows: rows, todo: todo, out: out}
	_, err := s.inserts.Do(ctx, j)
	made := 0
	if err == nil {
		for _, i := range todo {
			if out[i].Created {
				made++
			}
		}
	}
	s.settle(len(todo), made)
	return j.again, err
}

// insertJobs is the run of Store.inserts: the jobs' entries in one insertMany, in the jobs'
// order.
func (s *Store) insertJobs(ctx context.Context, jobs []*enqueueJob) ([]struct{}, error) {
	if len(jobs) == 1 {
		j := jobs[0]
		var err error
		j.again, err = s.insertMany(ctx, j.rows, j.todo, j.out)
		return make([]struct{}, 1), err
	}
	var rows []store.Encoded
	for _, j := range jobs {
		for _, i := range j.todo {
			rows = append(rows, j.rows[i])
		}
	}
	todo := make([]int, len(rows))
	for i := range todo {
		todo[i] = i
	}
	out := make([]store.EnqueueResult, len(rows))
	again, err := s.insertMany(ctx, rows, todo, out)
	if err != nil {
		return nil, err
	}
	retry := make([]bool, len(rows))
	for _, a := range again {
		retry[a] = true
	}
	k := 0
	for _, j := range jobs {
		for _, i := range j.todo {
			if retry[k] {
				j.again = append(j.again, i)
			} else {
				j.out[i] = out[k]
			}
			k++
		}
	}
	return make([]struct{}, len(jobs)), nil
}

// hashedEntry is a stored entry with its payload's hash.
type hashedEntry struct {
	store.Entry
	hash []byte
}

// byKeys reads the entries holding keys, with their payloads and hashes.
func (s *Store) byKeys(ctx context.Context, keys []string) (map[string]hashedEntry, error) {
	rs, err := s.pool.Query(ctx, "SELECT "+colsPayload+", payload_hash FROM schedd_deliveries WHERE idem_key = ANY($1)", keys)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rs.Close()
	out := make(map[string]hashedEntry, len(keys))
	for rs.Next() {
		var h hashedEntry
		if h.Entry, err = scanEntry(rs, true, &h.hash); err != nil {
			return nil, s.fail(err)
		}
		out[h.Key] = h
	}
	if err := rs.Err(); err != nil {
		return nil, s.fail(err)
	}
	return out, nil
}

// enqueueExact stores rows[i] for i in todo in one transaction that counts the live entries
// first and checks each entry against MaxEntries, in order; it notifies the fleet when it
// created any. This host runs one at a time, each counting what the one before committed
// and the entries being inserted on room's word, so that the host alone never passes the
// bound.
func (s *Store) enqueueExact(ctx context.Context, rows []store.Encoded, todo []int, out []store.EnqueueResult) error {
	select {
	case s.exact <- struct{}{}:
		defer func() { <-s.exact }()
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		var live int
		counted := time.Now()
		if err := tx.QueryRow(ctx, liveSQL).Scan(&live); err != nil {
			return err
		}
		live += s.reserved()
		made := 0
		for _, i := range todo {
			e, c, err := s.insertTx(ctx, tx, &rows[i], live+made)
			if err != nil && !logical(err) {
				return err
			}
			if err != nil {
				err = fmt.Errorf("enqueue: %w", err)
			}
			if c {
				made++
			}
			out[i] = store.EnqueueResult{Entry: e, Created: c, Err: err}
		}
		if made > 0 {
			// Delivered to the listeners at commit, and only if it commits.
			if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", Channel, s.opts.HostID); err != nil {
				return err
			}
		}
		s.recount(live-s.reserved()+made, counted) // before the commit: a failed one leaves a count too high, which is safe
		return nil
	})
}

// insertTx stores r, or returns the entry that holds its key (P11).
func (s *Store) insertTx(ctx context.Context, tx pgx.Tx, r *store.Encoded, live int) (store.Entry, bool, error) {
	n := &r.New
	existing := func() (store.Entry, bool, error) {
		var hash []byte
		e, err := scanEntry(tx.QueryRow(ctx, "SELECT "+colsPayload+", payload_hash FROM schedd_deliveries WHERE idem_key = $1", n.Key), true, &hash)
		if err != nil {
			return store.Entry{}, false, err
		}
		if e.Sink != n.Sink || !bytes.Equal(hash, r.Sum[:]) {
			return store.Entry{}, false, &store.KeyMismatchError{Key: n.Key, Existing: e}
		}
		return e, false, nil
	}
	if live >= s.opts.MaxEntries {
		if e, created, err := existing(); !errors.Is(err, pgx.ErrNoRows) {
			return e, created, err
		}
		return store.Entry{}, false, &store.BoundError{Err: store.ErrQueueFull, Limit: s.opts.MaxEntries, Got: live + 1}
	}
	now := s.now()
	next := now
	if !n.NotBefore.IsZero() {
		next = max(now, n.NotBefore.UnixMilli())
	}
	var id int64
	err := tx.QueryRow(ctx, insertOneSQL,
		n.Sink, n.Key, r.Headers, r.Payload, len(r.Payload), r.Sum[:], n.Priority, next, now, nullMs(n.ExpiresAt)).Scan(&id, nil)
	if errors.Is(err, pgx.ErrNoRows) {
		return existing()
	}
	if err != nil {
		return store.Entry{}, false, err
	}
	return r.Stored(id, next, now), true, nil
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
