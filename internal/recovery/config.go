// Package recovery gives deliveries stored in internal/queue their semantics: sinks (http,
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
package recovery

import (
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Config is the delivery policy. Zero fields take their defaults, except Jitter, which is
// taken as given (start from DefaultConfig for the production value).
type Config struct {
	// MaxRetries is the number of failed attempts after which an entry is dead-lettered (5).
	MaxRetries int
	// Schedule is the retry table (5s, 25s, 2m, 10m); the last value repeats.
	Schedule []time.Duration
	// Jitter in [0, 1] shortens each retry delay by up to that fraction (downward jitter, so
	// the table stays an upper bound). 0 disables it (parity tests).
	Jitter float64
	// PermanentPatterns are regexps added to upstream's permanent-error patterns.
	PermanentPatterns []string
	// RetryAfterMax clamps a destination's Retry-After (1 h).
	RetryAfterMax time.Duration
	// RecoveryBudget bounds the startup recovery pass (60 s); entries it does not reach are
	// deferred to the runtime without charging a retry.
	RecoveryBudget time.Duration
	// ReplaySpacing is the minimum time between two replay starts to the same sink during the
	// recovery pass (250 ms; negative: none).
	ReplaySpacing time.Duration
	// Workers bounds concurrent sends of the runtime (16).
	Workers int
	// Lease is how long a sending claim is valid (5 m); it matters to stores shared by
	// several processes.
	Lease time.Duration
	// TTL, when positive, is the default lifetime of an entry: one not delivered by then is
	// dead-lettered with reason "expired" instead of being sent (R-DLV-03). 0: no expiry.
	TTL time.Duration
	// DeliveredRetention is how long delivered tombstones are kept for idempotency (30 days;
	// negative keeps them forever). DeadRetention does the same for dead letters (0: forever).
	DeliveredRetention time.Duration
	DeadRetention      time.Duration
	// PurgeEvery is the period of the retention purge (1 h).
	PurgeEvery time.Duration
}

// Defaults.
const (
	DefaultMaxRetries         = 5
	DefaultJitter             = 0.2
	DefaultRetryAfterMax      = time.Hour
	DefaultRecoveryBudget     = 60 * time.Second
	DefaultReplaySpacing      = 250 * time.Millisecond
	DefaultWorkers            = 16
	DefaultLease              = 5 * time.Minute
	DefaultDeliveredRetention = 30 * 24 * time.Hour
	DefaultPurgeEvery         = time.Hour
)

// Runtime timing from the upstream runtime scheduler (session-delivery-queue-runtime).
const (
	// RearmFloor is the least delay before an entry that is still pending after its attempt
	// is armed again, so an unchanged due row is never polled at timer speed.
	RearmFloor = time.Second
	// StoreRetry is the delay before retrying a store read that failed.
	StoreRetry = time.Second
)

// DefaultConfig returns the production policy.
func DefaultConfig() Config {
	return Config{
		MaxRetries:         DefaultMaxRetries,
		Schedule:           DefaultSchedule(),
		Jitter:             DefaultJitter,
		RetryAfterMax:      DefaultRetryAfterMax,
		RecoveryBudget:     DefaultRecoveryBudget,
		ReplaySpacing:      DefaultReplaySpacing,
		Workers:            DefaultWorkers,
		Lease:              DefaultLease,
		DeliveredRetention: DefaultDeliveredRetention,
		PurgeEvery:         DefaultPurgeEvery,
	}
}

func (c Config) withDefaults() (Config, error) {
	if c.MaxRetries <= 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if len(c.Schedule) == 0 {
		c.Schedule = DefaultSchedule()
	}
	for _, d := range c.Schedule {
		if d < 0 {
			return c, fmt.Errorf("delivery config: negative retry delay %v", d)
		}
	}
	if c.Jitter < 0 || c.Jitter > 1 {
		return c, fmt.Errorf("delivery config: jitter %v is not in [0, 1]", c.Jitter)
	}
	if c.RetryAfterMax <= 0 {
		c.RetryAfterMax = DefaultRetryAfterMax
	}
	if c.RecoveryBudget <= 0 {
		c.RecoveryBudget = DefaultRecoveryBudget
	}
	if c.ReplaySpacing == 0 {
		c.ReplaySpacing = DefaultReplaySpacing
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.DeliveredRetention == 0 {
		c.DeliveredRetention = DefaultDeliveredRetention
	}
	if c.PurgeEvery <= 0 {
		c.PurgeEvery = DefaultPurgeEvery
	}
	return c, nil
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
