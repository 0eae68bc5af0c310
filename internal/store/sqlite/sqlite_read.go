package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/store"
)

const entryCols = `id, sink, idem_key, headers, payload_size, priority, state, attempts, failures,
	next_attempt_at, last_attempt_at, last_error, dead_reason, created_at, updated_at, finished_at,
	expires_at, owner_epoch, lease_until, quarantined`

const nEntryCols = 20

// rawRow holds a row scanned without conversions, so that a damaged value is a decode
// error of that row and not a scan failure of the whole query.
type rawRow struct {
	vals    [nEntryCols + 1]any
	payload bool
}

func (r *rawRow) dest(withPayload bool) []any {
	r.payload = withPayload
	n := nEntryCols
	if withPayload {
		n++
	}
	d := make([]any, n)
	for i := range d {
		d[i] = &r.vals[i]
	}
	return d
}

// decode converts the row. A row that breaks an invariant is damaged: decode returns its id
// and the reason. A row already quarantined decodes leniently (whatever can be read).
func (r *rawRow) decode() (store.Entry, error) {
	v := r.vals
	var e store.Entry
	var problems []string
	bad := func(col string) { problems = append(problems, col) }
	id, ok := asInt(v[0])
	if !ok {
		return e, &damagedError{reason: "id unreadable"}
	}
	e.ID = id
	q, _ := asInt(v[19])
	e.Quarantined = q != 0

	if e.Sink, ok = asString(v[1]); !ok || e.Sink == "" {
		bad("sink")
	}
	if e.Key, ok = asString(v[2]); !ok || e.Key == "" {
		bad("idem_key")
	}
	if h, ok := asString(v[3]); !ok {
		bad("headers")
	} else if h != "" && h != "{}" {
		if err := json.Unmarshal([]byte(h), &e.Headers); err != nil {
			bad("headers")
		}
	}
	size, ok := asInt(v[4])
	if !ok || size < 0 {
		bad("payload_size")
	}
	e.PayloadSize = int(size)
	prio, ok := asInt(v[5])
	if !ok {
		bad("priority")
	}
	e.Priority = int(prio)
	st, _ := asString(v[6])
	e.State = store.State(st)
	if !e.State.Valid() {
		bad("state")
	}
	att, ok1 := asInt(v[7])
	fail, ok2 := asInt(v[8])
	if !ok1 || !ok2 || att < 0 || fail < 0 {
		bad("attempts")
	}
	e.Attempts, e.Failures = int(att), int(fail)
	if e.NextAttemptAt, ok = asTime(v[9], true); !ok {
		bad("next_attempt_at")
	}
	if e.LastAttemptAt, ok = asTime(v[10], false); !ok {
		bad("last_attempt_at")
	}
	e.LastError, _ = asString(v[11])
	e.DeadReason, _ = asString(v[12])
	if e.CreatedAt, ok = asTime(v[13], true); !ok {
		bad("created_at")
	}
	e.UpdatedAt, _ = asTime(v[14], false)
	e.FinishedAt, _ = asTime(v[15], false)
	if e.ExpiresAt, ok = asTime(v[16], false); !ok {
		bad("expires_at")
	}
	ep, _ := asInt(v[17])
	e.Epoch = ep
	e.LeaseUntil, _ = asTime(v[18], false)
	if e.State == store.StateSending && e.Epoch == 0 {
		bad("owner_epoch")
	}
	if r.payload {
		switch p := v[nEntryCols].(type) {
		case []byte:
			e.Payload = p
		case string:
			e.Payload = []byte(p)
		case nil:
			e.Payload = []byte{}
		default:
			bad("payload")
		}
	}
	if e.Quarantined {
		if !e.State.Valid() {
			e.State = store.StateDead
		}
		return e, nil
	}
	if len(problems) > 0 {
		return e, &damagedError{id: e.ID, reason: "damaged " + strings.Join(problems, ", ")}
	}
	return e, nil
}

type damagedError struct {
	id     int64
	reason string
}

func (e *damagedError) Error() string { return fmt.Sprintf("delivery %d: %s", e.id, e.reason) }

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true
		}
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	case []byte:
		n, err := strconv.ParseInt(string(x), 10, 64)
		return n, err == nil
	}
	return 0, false
}

func asString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	case nil:
		return "", true
	}
	return "", false
}

// asTime reads a millisecond stamp; NULL is the zero time, accepted unless required.
func asTime(v any, required bool) (time.Time, bool) {
	if v == nil {
		return time.Time{}, !required
	}
	ms, ok := asInt(v)
	if !ok {
		return time.Time{}, false
	}
	return fromMs(sql.NullInt64{Int64: ms, Valid: true}), true
}

// Get returns one entry with its payload. A damaged row is quarantined first.
func (s *SQLite) Get(ctx context.Context, id int64) (store.Entry, error) {
	e, err := s.getOnce(ctx, id)
	var d *damagedError
	if errors.As(err, &d) {
		if err := s.quarantine(ctx, d); err != nil {
			return store.Entry{}, fmt.Errorf("get delivery %d: %w", id, err)
		}
		e, err = s.getOnce(ctx, id)
	}
	if err != nil {
		return store.Entry{}, fmt.Errorf("get delivery %d: %w", id, err)
	}
	return e, nil
}

func (s *SQLite) getOnce(ctx context.Context, id int64) (store.Entry, error) {
	var r rawRow
	err := s.getStmt.QueryRowContext(ctx, id).Scan(r.dest(true)...)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Entry{}, store.ErrNotFound
	}
	if err != nil {
		return store.Entry{}, err
	}
	return r.decode()
}

// queryEntries runs a query returning entryCols rows; damaged rows are quarantined and left out.
func (s *SQLite) queryEntries(ctx context.Context, query string, args ...any) ([]store.Entry, error) {
	rows, err := s.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	var out []store.Entry
	var damaged []*damagedError
	for rows.Next() {
		var r rawRow
		if err := rows.Scan(r.dest(false)...); err != nil {
			rows.Close()
			return nil, err
		}
		e, err := r.decode()
		var d *damagedError
		if errors.As(err, &d) {
			damaged = append(damaged, d)
			continue
		}
		out = append(out, e)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, err
	}
	for _, d := range damaged {
		if err := s.quarantine(ctx, d); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// List returns entries without payloads after the filter's cursor, in id order.
func (s *SQLite) List(ctx context.Context, f store.Filter) ([]store.Entry, error) {
	if f.State != "" && !f.State.Valid() {
		return nil, fmt.Errorf("list deliveries: %w: state %q", store.ErrInvalid, f.State)
	}
	q, args := listQuery(f)
	out, err := s.queryEntries(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	return out, nil
}

// listQuery is List's statement. The state, one of four constants, is written into it: the
// planner uses a partial index (live or dead entries) only for a literal it can see.
func listQuery(f store.Filter) (string, []any) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	q := "SELECT " + entryCols + " FROM deliveries WHERE id > ?"
	args := []any{f.AfterID}
	switch f.State {
	case store.StatePending, store.StateSending:
		// Also the live index's own condition, so that the planner sees it is implied.
		q += " AND state IN ('pending', 'sending') AND state = '" + string(f.State) + "'"
	case store.StateDelivered, store.StateDead:
		q += " AND state = '" + string(f.State) + "'"
	}
	if f.Sink != "" {
		q += " AND sink = ?"
		args = append(args, f.Sink)
	}
	q += " ORDER BY id LIMIT ?"
	return q, append(args, limit)
}

// Live returns refs of pending and sending entries in id order.
func (s *SQLite) Live(ctx context.Context, afterID int64, limit int) ([]store.Ref, error) {
	return s.refs(ctx, "live deliveries", "SELECT "+refCols+` FROM deliveries
		WHERE state IN ('pending', 'sending') AND id > ? ORDER BY id LIMIT ?`, afterID, max(limit, 1))
}

// countsSQL reads the counts the store keeps per (state, quarantined) as it writes (the
// table delivery_counts, which the writer keeps: counts.go): a few rows whatever the size
// of the queue. A quarantined row is dead (a retry clears the mark), so it is counted among
// the dead letters and, apart, among the quarantined.
const countsSQL = `SELECT state, quarantined, n FROM delivery_counts`

// Counts returns the entries per state and the creation time of the oldest live one.
func (s *SQLite) Counts(ctx context.Context) (store.Counts, error) {
	var c store.Counts
	rows, err := s.rdb.QueryContext(ctx, countsSQL)
	if err != nil {
		return c, fmt.Errorf("count deliveries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var state, quarantined any
		var n int
		if err := rows.Scan(&state, &quarantined, &n); err != nil {
			return store.Counts{}, fmt.Errorf("count deliveries: %w", err)
		}
		st, _ := state.(string)
		switch store.State(st) {
		case store.StatePending:
			c.Pending += n
		case store.StateSending:
			c.Sending += n
		case store.StateDelivered:
			c.Delivered += n
		case store.StateDead:
			c.Dead += n
			if q, ok := quarantined.(int64); ok && q == 1 {
				c.Quarantined += n
			}
		}
	}
	if err := rows.Err(); err != nil {
		return store.Counts{}, fmt.Errorf("count deliveries: %w", err)
	}
	rows.Close()
	var oldest sql.NullInt64
	err = s.rdb.QueryRowContext(ctx,
		"SELECT created_at FROM deliveries WHERE state IN ('pending', 'sending') ORDER BY id LIMIT 1").Scan(&oldest)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("count deliveries: %w", err)
	}
	c.OldestAt = fromMs(oldest)
	return c, nil
}

// quarantine dead-letters a damaged row with the reason, so no scan trips on it again.
func (s *SQLite) quarantine(ctx context.Context, d *damagedError) error {
	reason := store.ReasonQuarantined + ": " + d.reason
	err := s.submit(ctx, "quarantine", func(tx wtx, w *batch) error {
		return quarantineTx(ctx, tx, w, d.id, reason, s.now())
	})
	if err != nil {
		return fmt.Errorf("quarantine delivery %d: %w", d.id, err)
	}
	s.log.Warn("delivery quarantined", zap.Int64("id", d.id), zap.String("reason", reason))
	return nil
}

func quarantineTx(ctx context.Context, tx wtx, w *batch, id int64, reason string, now time.Time) error {
	var st, marked any
	err := tx.QueryRowContext(ctx, "SELECT state, quarantined FROM deliveries WHERE id = ?", id).Scan(&st, &marked)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	if err != nil {
		return err
	}
	if _, err = tx.ExecContext(ctx, `UPDATE deliveries SET state = 'dead', quarantined = 1, dead_reason = ?,
		finished_at = ?, updated_at = ?, owner_epoch = NULL, lease_until = NULL WHERE id = ?`,
		reason, now.UnixMilli(), now.UnixMilli(), id); err != nil {
		return err
	}
	w.moveRow(st, marked, keyMarked)
	return nil
}
