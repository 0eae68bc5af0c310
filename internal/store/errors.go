package store

import (
	"errors"
	"fmt"
)

// Errors callers match with errors.Is.
var (
	// ErrNotFound: no entry has that id.
	ErrNotFound = errors.New("delivery not found")
	// ErrNotClaimable: the entry is not pending, nor sending under a void claim.
	ErrNotClaimable = errors.New("delivery not claimable")
	// ErrNotOwner: the entry is not sending under the caller's epoch.
	ErrNotOwner = errors.New("delivery not claimed by this epoch")
	// ErrWrongState: the operation does not apply to the entry's state.
	ErrWrongState = errors.New("delivery in wrong state")
	// ErrBusy: the entry is being sent.
	ErrBusy = errors.New("delivery is being sent")
	// ErrPayloadTooLarge: the payload exceeds the store's bound; nothing was stored.
	ErrPayloadTooLarge = errors.New("payload too large")
	// ErrQueueFull: the queue holds its maximum number of entries; nothing was stored.
	ErrQueueFull = errors.New("delivery queue full")
	// ErrKeyMismatch: the idempotency key is taken by an entry with another sink or payload.
	ErrKeyMismatch = errors.New("idempotency key used by a different delivery")
	// ErrInvalid: the request is malformed (empty sink or key, bad header).
	ErrInvalid = errors.New("invalid delivery")
	// ErrDiskFull: the store could not grow (SQLITE_FULL, ENOSPC). Nothing of the failed
	// operation was stored; reads and the operations that need no new space keep working,
	// and writes succeed again once space returns.
	ErrDiskFull = errors.New("delivery store disk full")
	// ErrStorage: the store could not commit (I/O error, failed fsync). Nothing of the
	// failed operation was stored, unless ErrOutcomeUnknown comes with it.
	ErrStorage = errors.New("delivery store write failed")
	// ErrUnavailable: the store's database server cannot be reached (Postgres). Nothing of
	// the failed operation was stored, unless ErrOutcomeUnknown comes with it; it comes
	// wrapped together with ErrStorage.
	ErrUnavailable = errors.New("delivery store unreachable")
	// ErrOutcomeUnknown: the connection to the store's database broke after a commit was
	// sent and before its reply came (Postgres): the operation may have been stored or not.
	// It comes wrapped together with ErrUnavailable and ErrStorage. Retrying an enqueue with
	// the same idempotency key is safe: it is stored once.
	ErrOutcomeUnknown = errors.New("delivery store commit outcome unknown")
	// ErrCorrupt: the database file failed its integrity check or is not a database, or it
	// is not the store that was there: missing or empty while the store's identity record
	// or WAL is left, or another store's (it then wraps storeid.ErrDamaged too).
	ErrCorrupt = errors.New("delivery store corrupt")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("delivery store closed")
)

// BoundError says which bound an enqueue exceeded; it unwraps to ErrPayloadTooLarge or
// ErrQueueFull.
type BoundError struct {
	Err   error
	Limit int
	Got   int
}

func (e *BoundError) Error() string {
	return fmt.Sprintf("%v: %d exceeds the limit of %d", e.Err, e.Got, e.Limit)
}

func (e *BoundError) Unwrap() error { return e.Err }

// KeyMismatchError names the entry that holds the idempotency key.
type KeyMismatchError struct {
	Key      string
	Existing Entry
}

func (e *KeyMismatchError) Error() string {
	return fmt.Sprintf("%v: key %q belongs to delivery %d (sink %q)", ErrKeyMismatch, e.Key, e.Existing.ID, e.Existing.Sink)
}

func (e *KeyMismatchError) Unwrap() error { return ErrKeyMismatch }
