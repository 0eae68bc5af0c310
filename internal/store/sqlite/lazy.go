package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storeid"
)

// Lazy is a Store whose SQLite file is opened only once it is needed, so that a daemon that
// was never asked to deliver anything creates no database and pays nothing for one. When
// the file exists already, OpenLazy opens it at once (so what it holds is recovered at
// startup); otherwise the first operation that writes an entry (Enqueue, or NewEpoch)
// creates and opens it. Until then the store answers as an empty one: reads find nothing,
// an operation on an id is ErrNotFound, and Info says it is not open.
type Lazy struct {
	path string
	opts Options

	s      atomic.Pointer[SQLite]
	sem    chan struct{} // held (a token in it) while opening or closing
	closed bool          // guarded by sem
	opened chan struct{} // closed once s is set
}

var _ store.Store = (*Lazy)(nil)

// OpenLazy returns the store for path: opened now if the file exists (with the errors of
// Open, a damaged file included), or to be opened by the first enqueue. A missing file
// whose identity record or WAL is left is not a store never used: it is refused as Open
// refuses it, now.
func OpenLazy(ctx context.Context, path string, opts Options) (*Lazy, error) {
	if err := checkOptions(opts); err != nil {
		return nil, err
	}
	l := &Lazy{path: path, opts: opts, sem: make(chan struct{}, 1), opened: make(chan struct{})}
	if _, err := storeid.Inspect(path); err != nil {
		return nil, (&SQLite{path: path}).openError(err)
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if _, err := l.open(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// Opened is closed once the database is open.
func (l *Lazy) Opened() <-chan struct{} { return l.opened }

// Path is the database file.
func (l *Lazy) Path() string { return l.path }

// SQLite returns the open store, or nil while it is not open.
func (l *Lazy) SQLite() *SQLite { return l.s.Load() }

// open returns the store, opening it first if needed.
func (l *Lazy) open(ctx context.Context) (*SQLite, error) {
	if s := l.s.Load(); s != nil {
		return s, nil
	}
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-l.sem }()
	if s := l.s.Load(); s != nil {
		return s, nil
	}
	if l.closed {
		return nil, store.ErrClosed
	}
	s, err := Open(ctx, l.path, l.opts)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrCorrupt), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return nil, err
	case errors.Is(err, syscall.ENOSPC):
		return nil, fmt.Errorf("%w: %w", store.ErrDiskFull, err)
	default:
		return nil, fmt.Errorf("%w: %w", store.ErrStorage, err)
	}
	l.s.Store(s)
	close(l.opened)
	return s, nil
}

// NewEpoch opens the store if needed and allocates the next boot epoch.
func (l *Lazy) NewEpoch(ctx context.Context) (int64, error) {
	s, err := l.open(ctx)
	if err != nil {
		return 0, fmt.Errorf("new epoch: %w", err)
	}
	return s.NewEpoch(ctx)
}

// Enqueue opens the store if needed and stores the entry.
func (l *Lazy) Enqueue(ctx context.Context, n store.NewEntry) (store.Entry, bool, error) {
	if l.s.Load() == nil {
		// Refuse what the open store would refuse before creating the file for it.
		if err := n.Check(withDefaults(l.opts).MaxPayload); err != nil {
			return store.Entry{}, false, fmt.Errorf("enqueue: %w", err)
		}
	}
	s, err := l.open(ctx)
	if err != nil {
		return store.Entry{}, false, fmt.Errorf("enqueue: %w", err)
	}
	return s.Enqueue(ctx, n)
}

// EnqueueBatch opens the store if needed (unless it would refuse every entry) and stores
// the entries.
func (l *Lazy) EnqueueBatch(ctx context.Context, ns []store.NewEntry) ([]store.EnqueueResult, error) {
	if l.s.Load() == nil {
		out := make([]store.EnqueueResult, len(ns))
		refused := 0
		for i, n := range ns {
			if err := n.Check(withDefaults(l.opts).MaxPayload); err != nil {
				out[i].Err = fmt.Errorf("enqueue: %w", err)
				refused++
			}
		}
		if refused == len(ns) {
			return out, nil
		}
	}
	s, err := l.open(ctx)
	if err != nil {
		return nil, fmt.Errorf("enqueue %d deliveries: %w", len(ns), err)
	}
	return s.EnqueueBatch(ctx, ns)
}

// Get returns one entry; ErrNotFound while the store is not open.
func (l *Lazy) Get(ctx context.Context, id int64) (store.Entry, error) {
	if s := l.s.Load(); s != nil {
		return s.Get(ctx, id)
	}
	return store.Entry{}, fmt.Errorf("get delivery %d: %w", id, store.ErrNotFound)
}

// List lists entries; none while the store is not open.
func (l *Lazy) List(ctx context.Context, f store.Filter) ([]store.Entry, error) {
	if s := l.s.Load(); s != nil {
		return s.List(ctx, f)
	}
	if f.State != "" && !f.State.Valid() {
		return nil, fmt.Errorf("list deliveries: %w: state %q", store.ErrInvalid, f.State)
	}
	return nil, nil
}

// Live returns live entries; none while the store is not open.
func (l *Lazy) Live(ctx context.Context, afterID int64, limit int) ([]store.Ref, error) {
	if s := l.s.Load(); s != nil {
		return s.Live(ctx, afterID, limit)
	}
	return nil, nil
}

// Counts counts entries; all zero while the store is not open.
func (l *Lazy) Counts(ctx context.Context) (store.Counts, error) {
	if s := l.s.Load(); s != nil {
		return s.Counts(ctx)
	}
	return store.Counts{}, nil
}

// MarkSending claims an entry; ErrNotFound while the store is not open.
func (l *Lazy) MarkSending(ctx context.Context, id, epoch int64, lease time.Duration) (store.Entry, error) {
	if s := l.s.Load(); s != nil {
		return s.MarkSending(ctx, id, epoch, lease)
	}
	return store.Entry{}, fmt.Errorf("mark delivery %d sending: %w", id, store.ErrNotFound)
}

// ClaimIfDue claims an entry that is due; ErrNotFound while the store is not open.
func (l *Lazy) ClaimIfDue(ctx context.Context, id, epoch int64, lease time.Duration, maxFailures int) (store.Entry, error) {
	if s := l.s.Load(); s != nil {
		return s.ClaimIfDue(ctx, id, epoch, lease, maxFailures)
	}
	return store.Entry{}, fmt.Errorf("claim delivery %d: %w", id, store.ErrNotFound)
}

// Complete records a delivery; ErrNotFound while the store is not open.
func (l *Lazy) Complete(ctx context.Context, id, epoch int64) error {
	if s := l.s.Load(); s != nil {
		return s.Complete(ctx, id, epoch)
	}
	return fmt.Errorf("complete delivery %d: %w", id, store.ErrNotFound)
}

// Fail records a failed attempt; ErrNotFound while the store is not open.
func (l *Lazy) Fail(ctx context.Context, id, epoch int64, f store.Failure) error {
	if s := l.s.Load(); s != nil {
		return s.Fail(ctx, id, epoch, f)
	}
	return fmt.Errorf("fail delivery %d: %w", id, store.ErrNotFound)
}

// Release returns a claimed entry to pending; ErrNotFound while the store is not open.
func (l *Lazy) Release(ctx context.Context, id, epoch int64, nextAt time.Time) error {
	if s := l.s.Load(); s != nil {
		return s.Release(ctx, id, epoch, nextAt)
	}
	return fmt.Errorf("release delivery %d: %w", id, store.ErrNotFound)
}

// Dead dead-letters an entry; ErrNotFound while the store is not open.
func (l *Lazy) Dead(ctx context.Context, id, epoch int64, reason, lastErr string) error {
	if s := l.s.Load(); s != nil {
		return s.Dead(ctx, id, epoch, reason, lastErr)
	}
	return fmt.Errorf("dead-letter delivery %d: %w", id, store.ErrNotFound)
}

// Retry moves a dead letter back to pending; ErrNotFound while the store is not open.
func (l *Lazy) Retry(ctx context.Context, id int64) (store.Entry, error) {
	if s := l.s.Load(); s != nil {
		return s.Retry(ctx, id)
	}
	return store.Entry{}, fmt.Errorf("retry delivery %d: %w", id, store.ErrNotFound)
}

// Drop deletes an entry; ErrNotFound while the store is not open.
func (l *Lazy) Drop(ctx context.Context, id int64) error {
	if s := l.s.Load(); s != nil {
		return s.Drop(ctx, id)
	}
	return fmt.Errorf("drop delivery %d: %w", id, store.ErrNotFound)
}

// Purge deletes finished entries; none while the store is not open.
func (l *Lazy) Purge(ctx context.Context, f store.PurgeFilter) (int, error) {
	if s := l.s.Load(); s != nil {
		return s.Purge(ctx, f)
	}
	if f.State != store.StateDead && f.State != store.StateDelivered {
		return 0, fmt.Errorf("purge deliveries: %w: state %q is not dead or delivered", store.ErrInvalid, f.State)
	}
	return 0, nil
}

// Info describes the store; Opened is false while it is not open.
func (l *Lazy) Info() store.Info {
	if s := l.s.Load(); s != nil {
		return s.Info()
	}
	return store.Info{Driver: "sqlite", Path: l.path, Synchronous: withDefaults(l.opts).Synchronous}
}

// Close closes the store if it was opened; it is not opened after Close.
func (l *Lazy) Close() error {
	l.sem <- struct{}{}
	l.closed = true
	s := l.s.Load()
	<-l.sem
	if s == nil {
		return nil
	}
	return s.Close()
}
