// Package store is schedd's storage contract: the durable delivery entries, their states
// and the transitions the delivery engine (internal/deliveries) drives, and the errors a
// store reports. It holds no driver: internal/store/sqlite keeps a host's stores in files
// of its state directory, internal/store/postgres keeps a fleet's in one shared database,
// and internal/store/storetest holds the conformance suite both pass and an in-memory
// store for the features' tests. Features depend on this package, never on a driver; only
// the daemon chooses one.
package store

import (
	"context"
	"time"
)

// Store is a durable queue of delivery entries.
//
// Every mutating method returns only after its change is durable (committed and synced as
// the store's synchronous mode promises); an error means the change was not made. A store
// never reports a mutation acknowledged when its commit failed.
//
// Claims. A sending entry carries the boot epoch of its owner and a lease deadline. A claim
// (MarkSending, ClaimIfDue) succeeds on a pending entry, or on a sending entry whose owner
// epoch differs from the claimer's or whose lease has expired. The embedded SQLite store is
// owned by one process at a time (the daemon holds a single-instance lock), so any other
// epoch belongs to a dead process and its leases are void at once. The Postgres store
// (internal/store/postgres), shared by several hosts, keeps a table of live epochs
// (heartbeated) and treats a sending entry as claimable only when its epoch is not alive on
// another host or its lease expired. A claim is one conditional update of the entry, so two
// claimers never both hold it.
//
// Fencing. Complete, Fail and Release on a sending entry succeed only for the epoch that
// holds the claim (ErrNotOwner otherwise), so a process that lost its claim cannot overwrite
// a newer outcome.
type Store interface {
	// NewEpoch durably allocates this process's boot epoch, larger than every earlier one.
	NewEpoch(ctx context.Context) (int64, error)

	// Enqueue stores a new pending entry. If an entry with the same idempotency key exists
	// (in any state, including a delivered tombstone) it is returned with created=false and
	// nothing is written (P11); ErrKeyMismatch if that entry has another sink or payload.
	// ErrPayloadTooLarge and ErrQueueFull leave the store untouched.
	Enqueue(ctx context.Context, n NewEntry) (e Entry, created bool, err error)
	// EnqueueBatch stores several new entries in one commit, each as Enqueue would, in
	// order: the checks, the bounds and the idempotency key apply entry by entry (a key
	// given twice is stored once, and the second gets the first's entry). It returns one
	// result per entry; an entry's own error (ErrInvalid, ErrPayloadTooLarge, ErrQueueFull,
	// ErrKeyMismatch) keeps only that entry out. A non-nil error is the whole batch's
	// (ErrDiskFull, ErrStorage, ErrClosed, ctx): then nothing of it was stored.
	EnqueueBatch(ctx context.Context, ns []NewEntry) ([]EnqueueResult, error)

	// Get returns one entry with its payload; ErrNotFound if there is none. A row that cannot
	// be decoded is quarantined (dead-lettered with a reason) and returned as such.
	Get(ctx context.Context, id int64) (Entry, error)
	// List returns entries without payloads, in id order, after the filter's cursor.
	List(ctx context.Context, f Filter) ([]Entry, error)
	// Live returns pending and sending entries with id > afterID, in id order, at most limit.
	Live(ctx context.Context, afterID int64, limit int) ([]Ref, error)
	// Counts returns the number of entries per state and the oldest pending one.
	Counts(ctx context.Context) (Counts, error)
	Near

	// MarkSending claims one entry for epoch (see Claims): state sending, attempts+1,
	// last_attempt_at now, lease until now+lease. ErrNotClaimable if the entry is not
	// claimable, ErrNotFound if it does not exist. Durable before it returns, so a crash
	// after the sink was called leaves the entry visibly interrupted.
	MarkSending(ctx context.Context, id, epoch int64, lease time.Duration) (Entry, error)
	// ClaimIfDue claims entry id for epoch as MarkSending does, only if it is pending, due
	// (next_attempt_at at or before now), not expired, and has failed fewer than
	// maxFailures times: the claim of an entry the runtime expects to send, with the
	// checks it would read the entry for made in the same statement. ErrNotClaimable (and
	// nothing written) otherwise, ErrNotFound if it does not exist.
	ClaimIfDue(ctx context.Context, id, epoch int64, lease time.Duration, maxFailures int) (Entry, error)
	// Complete records a delivery: the entry becomes a delivered tombstone.
	Complete(ctx context.Context, id, epoch int64) error
	// Fail records a failed attempt: failures+1, last_error, and back to pending due at
	// f.NextAt, or dead with f.DeadReason when that is set (the last allowed failure).
	Fail(ctx context.Context, id, epoch int64, f Failure) error
	// Release returns a claimed entry to pending due at nextAt without charging a failure
	// (the sink was not ready, or the process is shutting down mid-send).
	Release(ctx context.Context, id, epoch int64, nextAt time.Time) error
	// Dead dead-letters a pending entry, or a sending one that epoch holds or could claim
	// (its claim is void), keeping the reason and (when not empty) lastErr. ErrNotOwner if
	// another live owner holds it, ErrWrongState if it is terminal.
	Dead(ctx context.Context, id, epoch int64, reason, lastErr string) error

	// Retry moves a dead entry back to pending, due now, with its failures reset.
	Retry(ctx context.Context, id int64) (Entry, error)
	// Drop deletes a pending or dead entry (ErrBusy while it is sending). A delivered
	// tombstone is kept: dropping it would let its idempotency key be enqueued again.
	Drop(ctx context.Context, id int64) error
	// Purge deletes terminal entries that finished before f.OlderThan; it returns how many.
	Purge(ctx context.Context, f PurgeFilter) (int, error)

	// Info describes the store (driver, path, synchronous mode).
	Info() Info
	// Close stops the writer after the operations already accepted and closes the store.
	Close() error
}

// Near is the read of what is due soon, from an index on the pending entries' due time
// (next_attempt_at, id) and one on the sending entries: the delivery runtime keeps in
// memory only the entries due before a horizon, and these reads find the rest when the
// horizon reaches them, so their cost follows the entries due soon and in flight, not the
// backlog.
type Near interface {
	// Near passes to f, at most page at a time, the pending entries due before before, in
	// due order, then every sending entry.
	Near(ctx context.Context, before time.Time, page int, f func([]Ref)) error
	// FirstDue returns the earliest due time of the pending entries due at or after from;
	// ok is false when there is none.
	FirstDue(ctx context.Context, from time.Time) (at time.Time, ok bool, err error)
}

// Waker is implemented by a store that other hosts write too (Postgres): entries another
// host enqueued, or claims it left when it died, appear without this process writing them.
// The delivery runtime reads what is near again (Near) when Wake is signalled (another host
// enqueued) and every RescanEvery (a lost notification, a dead host's claims). A store
// only this process writes (SQLite) does not implement it: the runtime sees every write
// it makes, and an idle daemon on it arms one timer, for when its horizon reaches the
// first entry it did not arm.
type Waker interface {
	Wake() <-chan struct{}
	RescanEvery() time.Duration
}
