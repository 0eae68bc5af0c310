// Package deliveries gives deliveries stored in internal/store their semantics: sinks (http,
// exec, gateway), permanent and transient errors, the retry table, the recovery pass at
// startup with its summary, and the runtime that arms every pending entry at its due time.
//
// Life of an entry (docs/architecture.md draws it through the packages):
//
//	Enqueue (durable before it returns) → armed at next_attempt_at → MarkSending (durable,
//	with the boot epoch) → Sink.Send → delivered | dead (permanent, max_retries, expired)
//	| pending again at last_attempt + schedule[failures] (jittered down, Retry-After floor)
//	| pending unchanged (sink not ready, shutdown mid-send: nothing charged)
//
// Eligibility (P6): an entry with k recorded failures is due at lastAttemptAt +
// schedule[min(k, len-1)] (k = 0: at once; see NextAttemptAt). max_retries is the number of
// failed attempts after which the entry is dead-lettered: with the default 5, an entry that
// keeps failing is attempted 5 times.
//
// An entry found sending under an older boot epoch was interrupted mid-send: it may have
// reached its destination. It is resent at once with the same idempotency key
// (at-least-once; the receiver de-duplicates) and counted apart.
package deliveries

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Config is the delivery policy. Every field is taken as given: the daemon passes the
// config file's values, which internal/config has defaulted and checked, and a zero means
// what it means there. New refuses a value the service cannot run with.
type Config struct {
	// MaxRetries is the number of failed attempts after which an entry is dead-lettered;
	// 0 counts as 1 (one attempt).
	MaxRetries int
	// Schedule is the retry table, at least one delay; the last value repeats.
	Schedule []time.Duration
	// Jitter in [0, 1] shortens each retry delay by up to that fraction (downward jitter, so
	// the table stays an upper bound). 0 disables it (parity tests).
	Jitter float64
	// PermanentPatterns are regexps added to upstream's permanent-error patterns.
	PermanentPatterns []string
	// RetryAfterMax (> 0) clamps a destination's Retry-After.
	RetryAfterMax time.Duration
	// RecoveryBudget (> 0) bounds the startup recovery pass; entries it does not reach are
	// deferred to the runtime without charging a retry.
	RecoveryBudget time.Duration
	// ReplaySpacing is the minimum time between two replay starts to the same sink during the
	// recovery pass; 0: none.
	ReplaySpacing time.Duration
	// Workers (>= 1) bounds concurrent sends of the runtime.
	Workers int
	// TTL, when positive, is the default lifetime of an entry: one not delivered by then is
	// dead-lettered with reason "expired" instead of being sent (R-DLV-03). 0: no expiry.
	TTL time.Duration
	// DeliveredRetention is how long delivered tombstones are kept for idempotency, and
	// DeadRetention how long dead letters are kept; 0 keeps them forever.
	DeliveredRetention time.Duration
	DeadRetention      time.Duration
}

// The engine's own timing, not settings.
const (
	// ClaimLease is how long a sending claim is valid; it matters to stores shared by
	// several processes.
	ClaimLease = 5 * time.Minute
	// PurgeEvery is the period of the retention purge.
	PurgeEvery = time.Hour
	// RearmFloor is the least delay before an entry that is still pending after its attempt
	// is armed again, so an unchanged due row is never polled at timer speed.
	RearmFloor = time.Second
	// StoreRetry is the delay before retrying a store read that failed; a failed read of
	// what is near is retried after twice the last delay, up to StoreRetryMax.
	StoreRetry    = time.Second
	StoreRetryMax = time.Minute
	// Horizon is how far ahead the runtime keeps entries armed: a read of what is near
	// (store.Near) arms the entries due within it, and the rest stay in the store until the
	// horizon reaches them (see scheduler).
	Horizon = 10 * time.Minute
)

// check refuses a policy the service cannot run with, and gives MaxRetries 0 its meaning.
func (c Config) check() (Config, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("delivery config: "+format, args...)) }
	if c.MaxRetries < 0 {
		bad("max retries %d is negative", c.MaxRetries)
	}
	c.MaxRetries = max(c.MaxRetries, 1)
	if len(c.Schedule) == 0 {
		bad("the retry schedule is empty")
	}
	for _, d := range c.Schedule {
		if d < 0 {
			bad("negative retry delay %v", d)
		}
	}
	if c.Jitter < 0 || c.Jitter > 1 {
		bad("jitter %v is not in [0, 1]", c.Jitter)
	}
	if c.RetryAfterMax <= 0 {
		bad("max retry-after %v is not positive", c.RetryAfterMax)
	}
	if c.RecoveryBudget <= 0 {
		bad("recovery budget %v is not positive", c.RecoveryBudget)
	}
	if c.Workers < 1 {
		bad("workers %d is less than 1", c.Workers)
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"replay spacing", c.ReplaySpacing}, {"ttl", c.TTL}, {"delivered retention", c.DeliveredRetention},
		{"dead retention", c.DeadRetention}} {
		if f.d < 0 {
			bad("%s %v is negative", f.name, f.d)
		}
	}
	return c, errors.Join(errs...)
}

// Deps are the service's collaborators.
type Deps struct {
	// Log receives one structured line per transition (default zap.NewNop()). Lines carry
	// entry id, sink, attempt and idempotency key, never payloads or header values.
	Log *zap.Logger
	// Rand returns uniform values in [0, 1) for jitter (default math/rand/v2).
	Rand func() float64
	// Observe is told of sends, dead letters and recovery passes, for metrics.
	Observe Observer
}
