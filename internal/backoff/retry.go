package backoff

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// RetryConfig controls [Retry]. Use [DefaultRetryConfig] for upstream's
// defaults and [ResolveRetryConfig] to lay user settings over them.
//
// The delay after failed attempt n (1-based) is computed as upstream does:
//
//	base  = max(hint, MinDelay)        when RetryAfter gives a hint
//	        MinDelay·2^(n−1)           otherwise
//	delay = clamp(jitter(min(base, MaxDelay)), MinDelay, MaxDelay)
//
// where jitter(d) = d·(1 + (2f−1)·Jitter) for a random f in [0, 1).
// The arithmetic saturates instead of overflowing.
type RetryConfig struct {
	// Attempts is the largest number of calls of fn; values below 1 mean 1.
	Attempts int
	// MinDelay is the delay after the first failure, doubling after each
	// further failure, and the floor of every delay. Negative means 0.
	MinDelay time.Duration
	// MaxDelay caps every delay, Retry-After hints included. Zero or
	// negative means no cap. If MaxDelay is below MinDelay, MaxDelay wins.
	MaxDelay time.Duration
	// Jitter spreads each delay symmetrically by up to ±Jitter of it
	// (clamped to [0, 1]) before the MinDelay/MaxDelay clamp. 0 disables it.
	Jitter float64
	// ShouldRetry, if set, is asked after each failed attempt (1-based)
	// except the last; false stops Retry at once with that error. nil
	// retries every error.
	ShouldRetry func(err error, attempt int) bool
	// RetryAfter, if set, extracts a server's retry hint from an error;
	// ok false means the error carries none.
	RetryAfter func(err error) (d time.Duration, ok bool)
	// OnRetry, if set, is called before each wait with the delay chosen.
	OnRetry func(RetryInfo)
	// Label names the operation in RetryInfo.
	Label string
	// Rand returns random values in [0, 1) for jitter. nil uses
	// math/rand/v2's Float64. It is only called when Jitter > 0.
	Rand func() float64
}

// RetryInfo describes a retry that [Retry] is about to wait for.
type RetryInfo struct {
	// Attempt is the attempt that just failed, from 1.
	Attempt int
	// MaxAttempts is the configured number of attempts (at least 1).
	MaxAttempts int
	// Delay is how long Retry waits before the next attempt.
	Delay time.Duration
	// Err is the error of the failed attempt.
	Err error
	// Label is RetryConfig.Label.
	Label string
}

// DefaultRetryConfig returns upstream's retry defaults: 3 attempts, delays
// from 300 ms doubling up to 30 s, no jitter.
func DefaultRetryConfig() RetryConfig {
	return RetryConfig{Attempts: 3, MinDelay: 300 * time.Millisecond, MaxDelay: 30 * time.Second}
}

// RetryOverrides are optional retry settings in upstream's units, laid over
// a RetryConfig by [ResolveRetryConfig]. A nil field, NaN or ±Inf keeps the
// default. Go 1.26's new(expr) builds a field: RetryOverrides{Jitter: new(0.1)}.
type RetryOverrides struct {
	// Attempts is rounded to the nearest integer, then raised to at least 1.
	Attempts *float64
	// MinDelayMs is in milliseconds, rounded, then raised to at least 0.
	MinDelayMs *float64
	// MaxDelayMs is in milliseconds, rounded, then raised to at least the
	// resolved MinDelay.
	MaxDelayMs *float64
	// Jitter is clamped to [0, 1].
	Jitter *float64
}

// ResolveRetryConfig lays o over defaults with upstream's clamps
// (resolveRetryConfig): Attempts at least 1, MinDelay at least 0, MaxDelay at
// least MinDelay, Jitter in [0, 1]. The clamps apply to defaults' values as
// well, so a non-positive default MaxDelay ("no cap") becomes MinDelay unless
// MinDelay is 0. The callbacks, Label and Rand are taken from defaults.
//
// Examples from upstream, with defaults [DefaultRetryConfig] and o written as
// {Attempts, MinDelayMs, MaxDelayMs, Jitter}:
//
//	{2.6, 10.4, 99.8, 0.4} → {3, 10ms, 100ms, 0.4}
//	{0, 250, 100, −1}      → {1, 250ms, 250ms, 0}
//	{NaN, +Inf, NaN, 2}    → {3, 300ms, 30s, 1}
func ResolveRetryConfig(defaults RetryConfig, o RetryOverrides) RetryConfig {
	c := defaults

	c.Attempts = max(defaults.Attempts, 1)
	if v, ok := finite(o.Attempts); ok {
		switch v = math.Round(v); {
		case v < 1:
			c.Attempts = 1
		case v >= math.MaxInt:
			c.Attempts = math.MaxInt
		default:
			c.Attempts = int(v)
		}
	}

	c.MinDelay = max(defaults.MinDelay, 0)
	if v, ok := finite(o.MinDelayMs); ok {
		c.MinDelay = millis(v)
	}

	c.MaxDelay = defaults.MaxDelay
	if v, ok := finite(o.MaxDelayMs); ok {
		c.MaxDelay = millis(v)
	}
	c.MaxDelay = max(c.MaxDelay, c.MinDelay)

	c.Jitter = clamp01(defaults.Jitter)
	if v, ok := finite(o.Jitter); ok {
		c.Jitter = clamp01(v)
	}
	return c
}

// Retry calls fn with attempt = 1, 2, … until it returns a nil error, and
// returns that result. It stops early and returns fn's last error unchanged
// when cfg.Attempts calls have failed or cfg.ShouldRetry returns false.
// Between attempts it calls cfg.OnRetry and waits the delay described at
// [RetryConfig]; a delay of 0 retries at once.
//
// When ctx ends, Retry returns at once without another attempt. Its error
// then matches ctx.Err() with errors.Is, and also the last error of fn if
// there was one. A ctx that has already ended means fn is never called.
func Retry[T any](ctx context.Context, fn func(ctx context.Context, attempt int) (T, error), cfg RetryConfig) (T, error) {
	var zero T
	attempts := max(cfg.Attempts, 1)
	rnd := cfg.Rand
	if rnd == nil {
		rnd = rand.Float64
	}
	var lastErr error
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return zero, interrupted(err, attempt-1, lastErr)
		}
		v, err := fn(ctx, attempt)
		if err == nil {
			return v, nil
		}
		lastErr = err
		if attempt >= attempts || (cfg.ShouldRetry != nil && !cfg.ShouldRetry(err, attempt)) {
			return zero, err
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return zero, interrupted(ctxErr, attempt, err)
		}
		var hint time.Duration
		var hasHint bool
		if cfg.RetryAfter != nil {
			hint, hasHint = cfg.RetryAfter(err)
		}
		var f float64
		if cfg.Jitter > 0 {
			f = rnd()
		}
		d := cfg.delay(attempt, hint, hasHint, f)
		if cfg.OnRetry != nil {
			cfg.OnRetry(RetryInfo{Attempt: attempt, MaxAttempts: attempts, Delay: d, Err: err, Label: cfg.Label})
		}
		if err := Sleep(ctx, d); err != nil {
			return zero, interrupted(err, attempt, lastErr)
		}
	}
}

// delay returns the wait after failed attempt (1-based) as described at
// RetryConfig, with rnd in [0, 1) choosing the jitter.
func (c RetryConfig) delay(attempt int, hint time.Duration, hasHint bool, rnd float64) time.Duration {
	lo := max(c.MinDelay, 0)
	var base float64
	switch {
	case hasHint:
		base = float64(max(hint, lo))
	case lo > 0 && attempt > 1:
		base = float64(lo) * math.Exp2(float64(attempt-1)) // +Inf once it overflows
	default:
		base = float64(lo)
	}
	if c.MaxDelay > 0 {
		base = min(base, float64(c.MaxDelay))
	}
	if j := clamp01(c.Jitter); j > 0 && !math.IsInf(base, 1) {
		base *= 1 + (2*clamp01(rnd)-1)*j
	}
	d := max(durationOf(base), lo)
	if c.MaxDelay > 0 {
		d = min(d, c.MaxDelay)
	}
	return d
}

// Sleep waits for d or until ctx ends, whichever comes first, and returns
// ctx.Err() in the second case. A d of zero or less returns nil at once, even
// if ctx has already ended.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// interrupted is Retry's error when ctx ends after failed attempt n
// (0 if fn was never called).
func interrupted(ctxErr error, n int, lastErr error) error {
	if lastErr == nil {
		return ctxErr
	}
	return fmt.Errorf("%w after attempt %d: %w", ctxErr, n, lastErr)
}

// finite returns *p when p is set and finite.
func finite(p *float64) (float64, bool) {
	if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) {
		return 0, false
	}
	return *p, true
}

// millis converts upstream milliseconds to a Duration: rounded to a whole
// millisecond, at least 0, saturating at the largest Duration.
func millis(ms float64) time.Duration {
	return durationOf(math.Round(ms) * float64(time.Millisecond))
}
