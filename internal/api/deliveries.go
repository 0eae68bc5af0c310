package api

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// DeliveryState is where a delivery is in its life.
type DeliveryState string

// The delivery states.
const (
	DeliveryPending   DeliveryState = "pending"   // waiting for its next attempt
	DeliverySending   DeliveryState = "sending"   // an attempt is under way
	DeliveryDelivered DeliveryState = "delivered" // sent; its payload is gone
	DeliveryDead      DeliveryState = "dead"      // dead-lettered with a reason
)

// Valid reports whether s is one of the delivery states.
func (s DeliveryState) Valid() bool {
	switch s {
	case DeliveryPending, DeliverySending, DeliveryDelivered, DeliveryDead:
		return true
	}
	return false
}

// DeliveryRequest is the body of POST /v1/deliveries (or one element of its array form).
type DeliveryRequest struct {
	// Sink names a key of deliveries.sinks. Required.
	Sink string `json:"sink"`
	// Key is the idempotency key; schedd makes one when it is empty. The same key again
	// returns the entry that holds it (200) instead of storing a second one. It must be
	// text a sink receives as it is: see KeyProblem.
	Key string `json:"idempotency_key,omitempty"`
	// Headers are sent with the delivery (http and gateway sinks). Their values are secrets:
	// no reply, log or status shows them.
	Headers  map[string]string `json:"headers,omitempty"`
	Priority int               `json:"priority,omitempty"` // lower is sent first; default 0
	// The payload: Data as text, or DataBase64 for bytes; at most one of them (none: empty).
	// Data must be valid UTF-8 in the request's JSON: a body whose data holds bytes that
	// are not (or an escaped UTF-16 surrogate without its pair) is refused, never altered.
	Data       *string `json:"data,omitempty"`
	DataBase64 *string `json:"data_base64,omitempty"`
	// TTL overrides deliveries.ttl for this entry (a Go duration).
	TTL string `json:"ttl,omitempty"`
}

// MaxKeyLen is the longest idempotency key, in bytes.
const MaxKeyLen = 255

// KeyProblem says what keeps key from being an idempotency key that every sink receives
// as it was given (in the Idempotency-Key header, in SCHEDD_IDEMPOTENCY_KEY), or "" when
// nothing does. An empty key is fine: schedd makes one. A key is refused when it is blank,
// longer than MaxKeyLen bytes, not UTF-8, holds a control character (NUL, CR, LF, tab,
// ESC, DEL, U+0080 to U+009F: a header cannot carry them) or begins or ends with white
// space (a header loses it). The message does not quote the key.
func KeyProblem(key string) string {
	switch {
	case key == "":
		return ""
	case strings.TrimSpace(key) == "":
		return "is blank: give a key with visible characters, or none for schedd to make one"
	case len(key) > MaxKeyLen:
		return fmt.Sprintf("is %d bytes long: at most %d", len(key), MaxKeyLen)
	case !utf8.ValidString(key):
		return "is not valid UTF-8"
	}
	if i := strings.IndexFunc(key, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(key[i:])
		return fmt.Sprintf("has the control character %U at byte %d: a sink cannot receive it", r, i)
	}
	first, _ := utf8.DecodeRuneInString(key)
	last, _ := utf8.DecodeLastRuneInString(key)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return "begins or ends with white space, which a sink's header loses"
	}
	return ""
}

// Delivery is an entry as the API shows it: header names only, never their values; the
// payload only in the reply of GET /v1/deliveries/{id}.
type Delivery struct {
	ID            int64         `json:"id"`
	Sink          string        `json:"sink"`
	Key           string        `json:"idempotency_key"`
	State         DeliveryState `json:"state"`
	Priority      int           `json:"priority"`
	HeaderNames   []string      `json:"header_names,omitempty"`
	PayloadSize   int           `json:"payload_size"`
	Attempts      int           `json:"attempts"`
	Failures      int           `json:"failures"`
	NextAttemptAt *time.Time    `json:"next_attempt_at,omitempty"`
	LastAttemptAt *time.Time    `json:"last_attempt_at,omitempty"`
	LastError     string        `json:"last_error,omitempty"`
	DeadReason    string        `json:"dead_reason,omitempty"`
	CreatedAt     time.Time     `json:"created_at"`
	UpdatedAt     time.Time     `json:"updated_at"`
	FinishedAt    *time.Time    `json:"finished_at,omitempty"`
	ExpiresAt     *time.Time    `json:"expires_at,omitempty"`
	Quarantined   bool          `json:"quarantined,omitempty"`
	// Data or DataBase64 is the payload (GET /v1/deliveries/{id} only; a delivered entry
	// keeps no payload).
	Data       *string `json:"data,omitempty"`
	DataBase64 *string `json:"data_base64,omitempty"`
}

// EnqueueReply is the reply of POST /v1/deliveries: 201 with created true once the entry is
// durable, or 200 with the entry that already holds the idempotency key.
type EnqueueReply struct {
	Created bool `json:"created"`
	Delivery
}

// MaxBatch is the most entries one POST /v1/deliveries with an array may carry.
const MaxBatch = 1000

// BatchReply is the reply (200) of POST /v1/deliveries with an array of entries: one
// result per entry, in the request's order. The entries it stored were stored in one
// commit; an entry with an error was not stored, and did not keep the others out.
type BatchReply struct {
	Created  int           `json:"created"`  // entries stored by this request
	Existing int           `json:"existing"` // entries whose key schedd held already: nothing stored
	Failed   int           `json:"failed"`   // entries refused, each with its error
	Results  []BatchResult `json:"results"`
}

// BatchResult is one entry of a batch: the id of its delivery (created false when the
// key was held already), or the error that kept it out, with the code and message that a
// request of that entry alone would have had, the message naming the entry's index
// (`[3].sink: is required`).
type BatchResult struct {
	ID      int64  `json:"id,omitempty"`
	Created bool   `json:"created"`
	Error   *Error `json:"error,omitempty"`
}

// DeliveryList is the reply of GET /v1/deliveries. NextCursor, when not zero, is the cursor
// of the next page.
type DeliveryList struct {
	Deliveries []Delivery `json:"deliveries"`
	NextCursor int64      `json:"next_cursor,omitempty"`
}

// PurgeRequest is the body of POST /v1/deliveries/purge.
type PurgeRequest struct {
	State     DeliveryState `json:"state,omitempty"`      // dead (default) or delivered
	OlderThan string        `json:"older_than,omitempty"` // finished more than this long ago (Go duration; default 0s: all)
	// Limit, from 1 to MaxPurgeLimit, purges at most this many, the oldest first; 0 purges
	// all. A client purging many entries goes in batches and reports its progress.
	Limit int `json:"limit,omitempty"`
}

// MaxPurgeLimit is the largest limit of one POST /v1/deliveries/purge.
const MaxPurgeLimit = 100_000

// PurgeReply is the reply of POST /v1/deliveries/purge.
type PurgeReply struct {
	Purged int `json:"purged"`
}

// RecoverRequest is the body of POST /v1/recover.
type RecoverRequest struct {
	DryRun bool `json:"dry_run"`
	// Progress asks for the reply as newline-delimited JSON: a RecoverProgress line after
	// each page of entries read, and a last one with the report or the error that ended it.
	Progress bool `json:"progress,omitempty"`
}

// RecoverProgress is one line of POST /v1/recover with progress: the live entries read so
// far; the last line carries the report, or the error that ended the pass.
type RecoverProgress struct {
	Scanned int             `json:"scanned"`
	Report  *RecoveryReport `json:"report,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Store states of Deliveries.
const (
	StoreOpen      = "open"
	StoreNotOpened = "not_opened"
)

// Deliveries is the `deliveries` block of the status.
//
// failed counts dead letters. disk_full is true while the store refuses enqueues for lack of
// space; enqueue_error is the last enqueue the store failed, kept until one succeeds;
// read_error says that the counts are not fresh, the store being unreadable.
type Deliveries struct {
	Pending         int              `json:"pending"`
	Sending         int              `json:"sending"`
	Failed          int              `json:"failed"`
	Delivered       int              `json:"delivered"`
	Quarantined     int              `json:"quarantined"`
	OldestPendingAt *time.Time       `json:"oldest_pending_at"`
	LastRecovery    *RecoverySummary `json:"last_recovery"`
	Store           string           `json:"store"`
	// StoreState is "open", or "not_opened" while the store's file is not opened yet (no
	// delivery was ever enqueued: the file is created by the first enqueue).
	StoreState  string `json:"store_state"`
	Path        string `json:"path,omitempty"`
	Synchronous string `json:"synchronous"`
	// HostID is the host a shared (postgres) store claims under; Connected whether that
	// store's last contact with its database succeeded. Both are absent for sqlite.
	HostID       string      `json:"host_id,omitempty"`
	Connected    *bool       `json:"connected,omitempty"`
	DiskFull     bool        `json:"disk_full"`
	EnqueueError *StoreError `json:"enqueue_error"`
	// ReadError is set while the store cannot be read for the status (its database cannot
	// be reached): since At, with the last failure's message. The counts and the oldest
	// pending entry are then the ones read last, before At.
	ReadError *StoreError `json:"read_error,omitempty"`
	Sinks     []string    `json:"sinks"`
	Epoch     int64       `json:"epoch,omitempty"`
}

// StoreError is a failure of the store, kept for the status.
type StoreError struct {
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// RecoverySummary is the account of one recovery pass. Every entry live at scan start (pending, or
// left sending by a dead epoch) is counted in exactly one bucket, so the buckets add up to
// Scanned (P5):
//
//	recovered            sent and delivered
//	failed               sent and failed (retry scheduled, or dead-lettered), or no such sink
//	interrupted          left sending by a crash, resent with the same idempotency key
//	                     (whatever the result of that send)
//	skipped_max_retries  already out of retries: dead-lettered unsent
//	expired              past its TTL: dead-lettered unsent
//	deferred_backoff     not due yet
//	deferred_not_ready   its sink (the gateway) was not ready: nothing charged
//	deferred_budget      the time budget ran out (or schedd stopped) first: nothing charged
//	deferred_error       the store failed on it: nothing charged
//	already_gone         delivered, dead-lettered or dropped meanwhile
//	would_replay         dry run only: would be sent
//
// Deferred entries stay pending and are taken over by the runtime.
type RecoverySummary struct {
	Scanned           int       `json:"scanned"`
	Recovered         int       `json:"recovered"`
	Failed            int       `json:"failed"`
	SkippedMaxRetries int       `json:"skipped_max_retries"`
	DeferredBackoff   int       `json:"deferred_backoff"`
	DeferredBudget    int       `json:"deferred_budget"`
	DeferredNotReady  int       `json:"deferred_not_ready"`
	DeferredError     int       `json:"deferred_error"`
	AlreadyGone       int       `json:"already_gone"`
	Interrupted       int       `json:"interrupted"`
	Expired           int       `json:"expired"`
	WouldReplay       int       `json:"would_replay,omitempty"`
	DryRun            bool      `json:"dry_run,omitempty"`
	At                time.Time `json:"at"`
	DurationMS        int64     `json:"duration_ms"`
}

// Total adds up the buckets; it equals Scanned.
func (s RecoverySummary) Total() int {
	return s.Recovered + s.Failed + s.SkippedMaxRetries + s.DeferredBackoff + s.DeferredBudget +
		s.DeferredNotReady + s.DeferredError + s.AlreadyGone + s.Interrupted + s.Expired + s.WouldReplay
}

// RecoveryAction is what a (dry-run) recovery pass does with one entry.
type RecoveryAction struct {
	ID     int64     `json:"id"`
	Sink   string    `json:"sink"`
	Action string    `json:"action"`
	Reason string    `json:"reason,omitempty"`
	DueAt  time.Time `json:"due_at,omitzero"`
}

// RecoveryReport is a recovery pass's summary, with the per-entry actions for a dry run.
type RecoveryReport struct {
	RecoverySummary
	Actions   []RecoveryAction `json:"actions,omitempty"`
	Truncated bool             `json:"truncated,omitempty"`
}
