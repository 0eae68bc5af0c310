// Package storetest has an in-memory store.Store for tests of its consumers (it works inside
// testing/synctest bubbles, where SQLite I/O would not be durably blocking) and a conformance
// suite that every Store implementation must pass, so the fake and the real store agree.
package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/schedd/schedd/internal/store"
)

// Memory is a store.Store kept in memory. It follows the SQLite store's semantics (including
// millisecond time precision) and can inject faults.
type Memory struct {
	// MaxEntries and MaxPayload are the bounds (defaults as queue's).
	MaxEntries int
	MaxPayload int

	mu      sync.Mutex
	entries map[int64]*memEntry
	keys    map[string]int64
	nextID  int64
	epoch   int64
	closed  bool
	readErr func(op string) error
	wrErr   func(op string) error
	calls   map[string]int
}

type memEntry struct {
	e    store.Entry
	hash [32]byte
}

var _ store.Store = (*Memory)(nil)

// The bounds of the tests' stores: the in-memory one's, and what the drivers' tests give
// (the drivers take them from the config file, which has its own defaults).
const (
	MaxPayload = 1 << 20
	MaxEntries = 1_000_000
)

// NewMemory returns an empty store bounded by MaxEntries and MaxPayload.
func NewMemory() *Memory {
	return &Memory{
		MaxEntries: MaxEntries,
		MaxPayload: MaxPayload,
		entries:    map[int64]*memEntry{},
		keys:       map[string]int64{},
		calls:      map[string]int{},
	}
}

// SetReadFault makes read operations ("get", "list", "live", "counts") fail when f returns an error; nil clears it.
func (m *Memory) SetReadFault(f func(op string) error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.readErr = f
}

// SetWriteFault makes write operations (named as in sqlite.Options.FaultHook) fail when f
// returns an error; nil clears it. A failed write changes nothing.
func (m *Memory) SetWriteFault(f func(op string) error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.wrErr = f
}

// Calls returns how many times an operation was called.
func (m *Memory) Calls(op string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[op]
}

// Put stores e as is (tests use it to set up states, such as an entry left sending by an
// old epoch). Its key must be unique.
func (m *Memory) Put(e store.Entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.ID == 0 {
		m.nextID++
		e.ID = m.nextID
	}
	m.nextID = max(m.nextID, e.ID)
	m.entries[e.ID] = &memEntry{e: cloneEntry(e), hash: sha256.Sum256(e.Payload)}
	m.keys[e.Key] = e.ID
}

func (m *Memory) read(op string) error {
	m.calls[op]++
	if m.closed {
		return store.ErrClosed
	}
	if m.readErr != nil {
		if err := m.readErr(op); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	return nil
}

func (m *Memory) write(op string) error {
	m.calls[op]++
	if m.closed {
		return store.ErrClosed
	}
	if m.wrErr != nil {
		if err := m.wrErr(op); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	return nil
}

func now() time.Time { return ms(time.Now()) }

func ms(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}

func cloneEntry(e store.Entry) store.Entry {
	e.Headers = maps.Clone(e.Headers)
	e.Payload = bytes.Clone(e.Payload)
	return e
}

func (m *Memory) live() int {
	n := 0
	for _, x := range m.entries {
		if x.e.State == store.StatePending || x.e.State == store.StateSending {
			n++
		}
	}
	return n
}

// NewEpoch allocates the next epoch.
func (m *Memory) NewEpoch(ctx context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.write("epoch"); err != nil {
		return 0, err
	}
	m.epoch++
	return m.epoch, nil
}

// Enqueue stores a new entry or returns the one holding the key.
func (m *Memory) Enqueue(ctx context.Context, n store.NewEntry) (store.Entry, bool, error) {
	if err := n.Check(m.MaxPayload); err != nil {
		return store.Entry{}, false, fmt.Errorf("enqueue: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.write("enqueue"); err != nil {
		return store.Entry{}, false, err
	}
	return m.enqueue(n)
}

// EnqueueBatch stores the entries at once, each as Enqueue does, in order; a write fault
// fails the whole batch and stores nothing.
func (m *Memory) EnqueueBatch(ctx context.Context, ns []store.NewEntry) ([]store.EnqueueResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.write("enqueue_batch"); err != nil {
		return nil, err
	}
	out := make([]store.EnqueueResult, len(ns))
	for i, n := range ns {
		if err := n.Check(m.MaxPayload); err != nil {
			out[i].Err = fmt.Errorf("enqueue: %w", err)
			continue
		}
		e, created, err := m.enqueue(n)
		out[i] = store.EnqueueResult{Entry: e, Created: created, Err: err}
	}
	return out, nil
}

// enqueue stores a checked entry; the caller holds mu. Its errors are the entry's own.
func (m *Memory) enqueue(n store.NewEntry) (store.Entry, bool, error) {
	sum := sha256.Sum256(n.Payload)
	if id, ok := m.keys[n.Key]; ok {
		x := m.entries[id]
		e := cloneEntry(x.e)
		e.Payload = nil
		if x.e.Sink != n.Sink || x.hash != sum {
			return store.Entry{}, false, fmt.Errorf("enqueue: %w", &store.KeyMismatchError{Key: n.Key, Existing: e})
		}
		return e, false, nil
	}
	if live := m.live(); live >= m.MaxEntries {
		return store.Entry{}, false, fmt.Errorf("enqueue: %w",
			&store.BoundError{Err: store.ErrQueueFull, Limit: m.MaxEntries, Got: live + 1})
	}
	t := now()
	next := t
	if n.NotBefore.After(t) {
		next = ms(n.NotBefore)
	}
	m.nextID++
	payload := bytes.Clone(n.Payload)
	if payload == nil {
		payload = []byte{}
	}
	e := store.Entry{
		ID: m.nextID, Sink: n.Sink, Key: n.Key, Headers: maps.Clone(n.Headers), Payload: payload,
		PayloadSize: len(payload), Priority: n.Priority, State: store.StatePending,
		NextAttemptAt: next, CreatedAt: t, UpdatedAt: t, ExpiresAt: ms(n.ExpiresAt),
	}
	if len(e.Headers) == 0 {
		e.Headers = nil
	}
	m.entries[e.ID] = &memEntry{e: e, hash: sum}
	m.keys[e.Key] = e.ID
	return cloneEntry(e), true, nil
}

// Get returns one entry with its payload.
func (m *Memory) Get(ctx context.Context, id int64) (store.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.read("get"); err != nil {
		return store.Entry{}, err
	}
	x, ok := m.entries[id]
	if !ok {
		return store.Entry{}, fmt.Errorf("get delivery %d: %w", id, store.ErrNotFound)
	}
	return cloneEntry(x.e), nil
}

func (m *Memory) sorted(keep func(e *store.Entry) bool) []store.Entry {
	var out []store.Entry
	for _, x := range m.entries {
		if keep(&x.e) {
			e := cloneEntry(x.e)
			e.Payload = nil
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// List returns entries without payloads, in id order.
func (m *Memory) List(ctx context.Context, f store.Filter) ([]store.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.read("list"); err != nil {
		return nil, err
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	out := m.sorted(func(e *store.Entry) bool {
		return e.ID > f.AfterID && (f.State == "" || e.State == f.State) && (f.Sink == "" || e.Sink == f.Sink)
	})
	return out[:min(len(out), limit)], nil
}

// Live returns refs of pending and sending entries.
func (m *Memory) Live(ctx context.Context, afterID int64, limit int) ([]store.Ref, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.read("live"); err != nil {
		return nil, err
	}
	es := m.sorted(func(e *store.Entry) bool {
		return e.ID > afterID && (e.State == store.StatePending || e.State == store.StateSending)
	})
	es = es[:min(len(es), max(limit, 1))]
	out := make([]store.Ref, len(es))
	for i, e := range es {
		out[i] = store.Ref{ID: e.ID, Sink: e.Sink, Priority: e.Priority, State: e.State, Failures: e.Failures,
			NextAttemptAt: e.NextAttemptAt, ExpiresAt: e.ExpiresAt, Epoch: e.Epoch}
	}
	return out, nil
}

// Counts returns entries per state.
func (m *Memory) Counts(ctx context.Context) (store.Counts, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.read("counts"); err != nil {
		return store.Counts{}, err
	}
	var c store.Counts
	var oldest int64
	for _, x := range m.entries {
		switch x.e.State {
		case store.StatePending:
			c.Pending++
		case store.StateSending:
			c.Sending++
		case store.StateDelivered:
			c.Delivered++
		case store.StateDead:
			c.Dead++
		}
		if x.e.Quarantined {
			c.Quarantined++
		}
		if (x.e.State == store.StatePending || x.e.State == store.StateSending) && (oldest == 0 || x.e.ID < oldest) {
			oldest = x.e.ID
			c.OldestAt = x.e.CreatedAt
		}
	}
	return c, nil
}

func (m *Memory) claim(x *memEntry, epoch int64, lease time.Duration, t time.Time) store.Entry {
	x.e.State = store.StateSending
	x.e.Epoch = epoch
	x.e.LeaseUntil = ms(t.Add(lease))
	x.e.Attempts++
	x.e.LastAttemptAt = t
	x.e.UpdatedAt = t
	return cloneEntry(x.e)
}

// MarkSending claims one entry for epoch.
func (m *Memory) MarkSending(ctx context.Context, id, epoch int64, lease time.Duration) (store.Entry, error) {
	e, err := m.claimIf(id, epoch, lease, func(e store.Entry, t time.Time) bool { return e.ClaimableBy(epoch, t) })
	if err != nil {
		return store.Entry{}, fmt.Errorf("mark delivery %d sending: %w", id, err)
	}
	return e, nil
}

// ClaimIfDue claims one pending entry that is due, not expired and under maxFailures.
func (m *Memory) ClaimIfDue(ctx context.Context, id, epoch int64, lease time.Duration, maxFailures int) (store.Entry, error) {
	e, err := m.claimIf(id, epoch, lease, func(e store.Entry, t time.Time) bool {
		return e.State == store.StatePending && !e.NextAttemptAt.After(t) &&
			(e.ExpiresAt.IsZero() || t.Before(e.ExpiresAt)) && e.Failures < maxFailures
	})
	if err != nil {
		return store.Entry{}, fmt.Errorf("claim delivery %d: %w", id, err)
	}
	return e, nil
}

// claimIf claims entry id for epoch when ok holds of it now; both claims count as
// "mark_sending" for the write faults and the call counts.
func (m *Memory) claimIf(id, epoch int64, lease time.Duration, ok func(store.Entry, time.Time) bool) (store.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.write("mark_sending"); err != nil {
		return store.Entry{}, err
	}
	x, found := m.entries[id]
	if !found {
		return store.Entry{}, store.ErrNotFound
	}
	t := now()
	if !ok(x.e, t) {
		return store.Entry{}, store.ErrNotClaimable
	}
	return m.claim(x, epoch, lease, t), nil
}

func (m *Memory) owned(op string, id, epoch int64) (*memEntry, error) {
	if err := m.write(op); err != nil {
		return nil, err
	}
	x, ok := m.entries[id]
	if !ok {
		return nil, fmt.Errorf("%s delivery %d: %w", op, id, store.ErrNotFound)
	}
	if x.e.State != store.StateSending || x.e.Epoch != epoch {
		return nil, fmt.Errorf("%s delivery %d: %w", op, id, store.ErrNotOwner)
	}
	return x, nil
}

func unclaim(x *memEntry, t time.Time) {
	x.e.State = store.StatePending
	x.e.Epoch = 0
	x.e.LeaseUntil = time.Time{}
	x.e.UpdatedAt = t
}

// Complete makes a sending entry a delivered tombstone.
func (m *Memory) Complete(ctx context.Context, id, epoch int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	x, err := m.owned("complete", id, epoch)
	if err != nil {
		return err
	}
	t := now()
	x.e.State = store.StateDelivered
	x.e.Payload = []byte{}
	x.e.FinishedAt, x.e.UpdatedAt = t, t
	x.e.LeaseUntil = time.Time{}
	return nil
}

// Fail records a failed attempt.
func (m *Memory) Fail(ctx context.Context, id, epoch int64, f store.Failure) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	x, err := m.owned("fail", id, epoch)
	if err != nil {
		return err
	}
	t := now()
	unclaim(x, t)
	x.e.Failures++
	x.e.LastError = f.Err
	if f.DeadReason != "" {
		x.e.State = store.StateDead
		x.e.DeadReason = f.DeadReason
		x.e.FinishedAt = t
		return nil
	}
	x.e.NextAttemptAt = ms(f.NextAt)
	return nil
}

// Release returns a claimed entry to pending without charging a failure.
func (m *Memory) Release(ctx context.Context, id, epoch int64, nextAt time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	x, err := m.owned("release", id, epoch)
	if err != nil {
		return err
	}
	unclaim(x, now())
	x.e.NextAttemptAt = ms(nextAt)
	return nil
}

// Dead dead-letters a pending entry, or a sending one claimed by epoch or whose claim is void.
func (m *Memory) Dead(ctx context.Context, id, epoch int64, reason, lastErr string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.write("dead"); err != nil {
		return err
	}
	x, ok := m.entries[id]
	if !ok {
		return fmt.Errorf("dead-letter delivery %d: %w", id, store.ErrNotFound)
	}
	switch {
	case x.e.State == store.StatePending,
		x.e.State == store.StateSending && (x.e.Epoch == epoch || x.e.ClaimableBy(epoch, now())):
	case x.e.State == store.StateSending:
		return fmt.Errorf("dead-letter delivery %d: %w", id, store.ErrNotOwner)
	default:
		return fmt.Errorf("dead-letter delivery %d: %w: %s", id, store.ErrWrongState, x.e.State)
	}
	t := now()
	x.e.State = store.StateDead
	x.e.DeadReason = reason
	if lastErr != "" {
		x.e.LastError = lastErr
	}
	x.e.FinishedAt, x.e.UpdatedAt = t, t
	x.e.Epoch, x.e.LeaseUntil = 0, time.Time{}
	return nil
}

// Retry moves a dead entry back to pending.
func (m *Memory) Retry(ctx context.Context, id int64) (store.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.write("retry"); err != nil {
		return store.Entry{}, err
	}
	x, ok := m.entries[id]
	if !ok {
		return store.Entry{}, fmt.Errorf("retry delivery %d: %w", id, store.ErrNotFound)
	}
	if x.e.State != store.StateDead {
		return store.Entry{}, fmt.Errorf("retry delivery %d: %w: %s", id, store.ErrWrongState, x.e.State)
	}
	if live := m.live(); live >= m.MaxEntries {
		return store.Entry{}, fmt.Errorf("retry delivery %d: %w", id,
			&store.BoundError{Err: store.ErrQueueFull, Limit: m.MaxEntries, Got: live + 1})
	}
	t := now()
	x.e.State = store.StatePending
	x.e.Failures = 0
	x.e.NextAttemptAt = t
	x.e.DeadReason = ""
	x.e.FinishedAt = time.Time{}
	x.e.UpdatedAt = t
	x.e.Quarantined = false
	e := cloneEntry(x.e)
	e.Payload = nil
	return e, nil
}

// Drop deletes a pending or dead entry.
func (m *Memory) Drop(ctx context.Context, id int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.write("drop"); err != nil {
		return err
	}
	x, ok := m.entries[id]
	if !ok {
		return fmt.Errorf("drop delivery %d: %w", id, store.ErrNotFound)
	}
	switch x.e.State {
	case store.StateSending:
		return fmt.Errorf("drop delivery %d: %w", id, store.ErrBusy)
	case store.StateDelivered:
		return fmt.Errorf("drop delivery %d: %w: a delivered tombstone is kept until purged", id, store.ErrWrongState)
	}
	delete(m.entries, id)
	delete(m.keys, x.e.Key)
	return nil
}

// Purge deletes terminal entries that finished before f.OlderThan.
func (m *Memory) Purge(ctx context.Context, f store.PurgeFilter) (int, error) {
	if f.State != store.StateDead && f.State != store.StateDelivered {
		return 0, fmt.Errorf("purge deliveries: %w: state %q is not dead or delivered", store.ErrInvalid, f.State)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.write("purge"); err != nil {
		return 0, err
	}
	cut := ms(f.OlderThan)
	n := 0
	ids := slices.Collect(maps.Keys(m.entries))
	slices.SortFunc(ids, func(a, b int64) int {
		if c := m.entries[a].e.FinishedAt.Compare(m.entries[b].e.FinishedAt); c != 0 {
			return c
		}
		return int(a - b)
	})
	for _, id := range ids {
		if f.Limit > 0 && n == f.Limit {
			break
		}
		x := m.entries[id]
		if x.e.State == f.State && x.e.FinishedAt.Before(cut) {
			delete(m.entries, id)
			delete(m.keys, x.e.Key)
			n++
		}
	}
	return n, nil
}

// Info describes the store. It has no schema to migrate: its version is 0.
func (m *Memory) Info() store.Info {
	return store.Info{Driver: "memory", Synchronous: "none", Opened: true}
}

// Close marks the store closed.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
