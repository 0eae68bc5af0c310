package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"
)

// State is where an entry is in its life.
//
//	pending ──MarkSending──▶ sending ──Complete──▶ delivered (tombstone, purged after retention)
//	   ▲                        │ ├──Fail────────▶ pending (failures+1, next_attempt_at later)
//	   │                        │ ├──Release─────▶ pending (nothing charged)
//	   │                        │ └──Dead────────▶ dead (reason kept)
//	   └──────────Retry─────────────────────────── dead
//
// An entry found sending under an epoch other than the current one was interrupted by a crash
// of its owner: it may or may not have reached the sink, and it is claimable again at once.
type State string

// The entry states.
const (
	StatePending   State = "pending"
	StateSending   State = "sending"
	StateDelivered State = "delivered"
	StateDead      State = "dead"
)

// Valid reports whether s is one of the four states.
func (s State) Valid() bool {
	switch s {
	case StatePending, StateSending, StateDelivered, StateDead:
		return true
	}
	return false
}

// Terminal reports whether s is delivered or dead: no send ever happens again from it
// (only an operator's Retry moves a dead entry back to pending).
func (s State) Terminal() bool { return s == StateDelivered || s == StateDead }

// Dead-letter reasons set by the store itself.
const (
	// ReasonQuarantined prefixes the dead reason of a row that could not be decoded.
	ReasonQuarantined = "quarantined"
)

// Entry is one durable delivery.
//
// Times are wall-clock instants stored with millisecond precision; a zero time means "never".
type Entry struct {
	ID          int64             `json:"id"`
	Sink        string            `json:"sink"`
	Key         string            `json:"idempotency_key"`
	Headers     map[string]string `json:"headers,omitempty"`
	Payload     []byte            `json:"-"`
	PayloadSize int               `json:"payload_size"`
	// Priority orders due entries: lower values are sent first (River's convention).
	Priority int   `json:"priority"`
	State    State `json:"state"`
	// Attempts counts sends started (MarkSending); Failures counts recorded transient
	// failures, the number the retry table and max_retries are applied to.
	Attempts      int       `json:"attempts"`
	Failures      int       `json:"failures"`
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	LastAttemptAt time.Time `json:"last_attempt_at,omitzero"`
	LastError     string    `json:"last_error,omitempty"`
	DeadReason    string    `json:"dead_reason,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	// FinishedAt is when the entry became delivered or dead.
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// ExpiresAt, when set, is the instant after which the entry is dead-lettered unsent.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// Epoch is the boot epoch of the process holding the sending claim.
	Epoch      int64     `json:"epoch,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// Quarantined marks a damaged row that was dead-lettered when it could not be decoded.
	Quarantined bool `json:"quarantined,omitempty"`
}

// Interrupted reports whether e was left sending by a process epoch other than epoch.
func (e Entry) Interrupted(epoch int64) bool {
	return e.State == StateSending && e.Epoch != epoch
}

// NewEntry is what a producer asks to store.
type NewEntry struct {
	Sink string
	// Key is the idempotency key; required (the caller generates one when its user gave none).
	Key       string
	Headers   map[string]string
	Payload   []byte
	Priority  int
	ExpiresAt time.Time
	// NotBefore delays the first attempt; zero means at once.
	NotBefore time.Time
}

// Ref is the light view of a live (pending or sending) entry that schedulers keep in memory.
type Ref struct {
	ID            int64
	Sink          string
	Priority      int
	State         State
	Failures      int
	NextAttemptAt time.Time
	ExpiresAt     time.Time
	Epoch         int64
}

// Filter selects entries for List. Zero fields match everything.
type Filter struct {
	State State
	Sink  string
	// AfterID is the cursor: only entries with a larger id are listed.
	AfterID int64
	// Limit caps the page; zero means 100, and at most 1000 are returned.
	Limit int
}

// PurgeFilter selects terminal entries to delete.
type PurgeFilter struct {
	// State is StateDead or StateDelivered.
	State State
	// OlderThan deletes entries that finished before this instant.
	OlderThan time.Time
	// Limit, when above 0, deletes at most this many (the oldest first): a large purge then
	// goes in batches, each a short write that can report its progress.
	Limit int
}

// Counts is the size of the queue by state.
type Counts struct {
	Pending     int       `json:"pending"`
	Sending     int       `json:"sending"`
	Delivered   int       `json:"delivered"`
	Dead        int       `json:"dead"`
	Quarantined int       `json:"quarantined"`
	OldestAt    time.Time `json:"oldest_pending_at,omitzero"`
}

// Info describes a store for status output.
type Info struct {
	Driver string `json:"driver"`
	Path   string `json:"path,omitempty"`
	// Synchronous is the durability mode of commits ("full" or "normal" for SQLite).
	Synchronous string `json:"synchronous"`
	Schema      int    `json:"schema_version"`
	// DiskFull is true while the store refuses enqueues because its disk filled up.
	DiskFull bool `json:"disk_full"`
	// Opened is false while a Lazy store has not opened its file yet.
	Opened bool `json:"opened"`
	// HostID is the host a shared (Postgres) store claims under; empty for SQLite.
	HostID string `json:"host_id,omitempty"`
	// Connected, for a store on a database server, is whether its last contact with the
	// server succeeded; nil for SQLite.
	Connected *bool `json:"connected,omitempty"`
}

// Failure is a failed attempt to record with Fail.
type Failure struct {
	Err    string
	NextAt time.Time
	// DeadReason, when set, makes this failure the last one: the entry is dead-lettered with
	// this reason (its failures still counting this one) instead of being rescheduled.
	DeadReason string
}

// ClaimableBy reports whether epoch may claim e at now: e is pending, or sending under
// another (dead) epoch, or sending under an expired lease.
func (e Entry) ClaimableBy(epoch int64, now time.Time) bool {
	switch e.State {
	case StatePending:
		return true
	case StateSending:
		return e.Epoch != epoch || !now.Before(e.LeaseUntil)
	}
	return false
}

// Validate checks what every store requires of a new entry: a sink name, an idempotency key
// and header names and values that are safe to send (no control characters).
func (n NewEntry) Validate() error {
	if n.Sink == "" {
		return fmt.Errorf("%w: empty sink", ErrInvalid)
	}
	if n.Key == "" {
		return fmt.Errorf("%w: empty idempotency key", ErrInvalid)
	}
	if len(n.Key) > MaxKeyLen {
		return fmt.Errorf("%w: idempotency key longer than %d bytes", ErrInvalid, MaxKeyLen)
	}
	for k, v := range n.Headers {
		if !validHeaderName(k) {
			return fmt.Errorf("%w: header name %q", ErrInvalid, k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return fmt.Errorf("%w: header %q has a control character in its value", ErrInvalid, k)
		}
	}
	return nil
}

// Check is what every store checks of a new entry before it writes anything: Validate, and
// the payload within maxPayload bytes (a BoundError wrapping ErrPayloadTooLarge).
func (n NewEntry) Check(maxPayload int) error {
	if err := n.Validate(); err != nil {
		return err
	}
	if len(n.Payload) > maxPayload {
		return &BoundError{Err: ErrPayloadTooLarge, Limit: maxPayload, Got: len(n.Payload)}
	}
	return nil
}

// Encoded is a new entry checked and encoded for its insert: what every store keeps of it.
type Encoded struct {
	New     NewEntry
	Headers string // a JSON object, "{}" for none
	Payload []byte // never nil
	// Sum is the payload's SHA-256, which tells a reused idempotency key from the same
	// entry enqueued again.
	Sum [sha256.Size]byte
}

// Encode checks n (Check) and encodes what every store keeps of it.
func (n NewEntry) Encode(maxPayload int) (Encoded, error) {
	if err := n.Check(maxPayload); err != nil {
		return Encoded{}, fmt.Errorf("enqueue: %w", err)
	}
	e := Encoded{New: n, Headers: "{}", Payload: n.Payload, Sum: sha256.Sum256(n.Payload)}
	if len(n.Headers) > 0 {
		h, err := json.Marshal(n.Headers)
		if err != nil {
			return Encoded{}, fmt.Errorf("enqueue: %w", err)
		}
		e.Headers = string(h)
	}
	if e.Payload == nil {
		e.Payload = []byte{}
	}
	return e, nil
}

// Stored is the entry e's insert stored: id, pending, due at nextMs, created at nowMs
// (Unix milliseconds, as the stores keep instants), with copies of its headers and
// payload.
func (e Encoded) Stored(id, nextMs, nowMs int64) Entry {
	var headers map[string]string
	if len(e.New.Headers) > 0 {
		headers = maps.Clone(e.New.Headers)
	}
	var expires time.Time
	if !e.New.ExpiresAt.IsZero() {
		expires = time.UnixMilli(e.New.ExpiresAt.UnixMilli()).UTC()
	}
	now := time.UnixMilli(nowMs).UTC()
	return Entry{
		ID: id, Sink: e.New.Sink, Key: e.New.Key, Headers: headers, Payload: bytes.Clone(e.Payload),
		PayloadSize: len(e.Payload), Priority: e.New.Priority, State: StatePending,
		NextAttemptAt: time.UnixMilli(nextMs).UTC(), CreatedAt: now, UpdatedAt: now, ExpiresAt: expires,
	}
}

// EnqueueResult is the outcome of one entry of EnqueueBatch: the entry that holds its key
// (Created when this call stored it), or the error that kept it out.
type EnqueueResult struct {
	Entry   Entry
	Created bool
	Err     error
}

// MaxKeyLen bounds idempotency keys.
const MaxKeyLen = 255

// validHeaderName accepts an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
