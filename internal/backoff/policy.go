package backoff

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Policy is an exponential backoff. The delay for attempt n is
// base = Initial·Factor^max(n−1, 0), plus a random extra of up to Jitter·base,
// capped at Max. Attempts 0 and 1 therefore both get Initial (plus jitter).
//
// The zero Policy gives a delay of 0 for every attempt.
type Policy struct {
	// Initial is the base delay of attempts 0 and 1.
	Initial time.Duration
	// Max caps every delay, jitter included. Zero or negative makes every
	// delay 0.
	Max time.Duration
	// Factor multiplies the base delay per attempt; 1 keeps it constant.
	Factor float64
	// Jitter is the largest random extra, as a fraction of the base delay.
	// Jitter only adds: 0.2 spreads a 10 s base over [10 s, 12 s].
	Jitter float64
}

// Delay returns the delay for attempt (see [Policy]), using rnd, a random
// value in [0, 1), to pick the jitter: 0 adds nothing, values near 1 add
// almost Jitter·base.
//
// Delay never panics and never returns a value outside [0, max(Max, 0)],
// whatever attempt, rnd or the policy fields are. Fields that [Policy.Validate]
// rejects are first moved to their nearest valid value (a NaN Factor or one
// below 1 counts as 1; a NaN Jitter as 0); rnd is clamped to [0, 1].
//
// Upstream rounds delays to whole milliseconds; Delay keeps nanoseconds.
func (p Policy) Delay(attempt int, rnd float64) time.Duration {
	limit := p.Max
	if limit <= 0 || p.Initial <= 0 {
		return 0
	}
	base := float64(p.Initial)
	if attempt > 1 && p.Factor > 1 {
		base *= math.Pow(p.Factor, float64(attempt-1)) // +Inf once it overflows
	}
	if base >= float64(limit) {
		return limit // jitter only adds, so the cap already holds
	}
	d := base + base*clamp01(p.Jitter)*clamp01(rnd)
	return min(durationOf(d), limit)
}

// Validate reports the fields of p that are out of range, each error naming
// its field. Initial must not be negative, Max must be at least Initial,
// Factor must be finite and at least 1, and Jitter must be in [0, 1].
func (p Policy) Validate() error {
	var errs []error
	if p.Initial < 0 {
		errs = append(errs, fmt.Errorf("initial %v: must not be negative", p.Initial))
	}
	if p.Max < max(p.Initial, 0) {
		errs = append(errs, fmt.Errorf("max %v: must be at least initial (%v)", p.Max, p.Initial))
	}
	if math.IsInf(p.Factor, 0) || !(p.Factor >= 1) {
		errs = append(errs, fmt.Errorf("factor %v: must be finite and at least 1", p.Factor))
	}
	if !(p.Jitter >= 0 && p.Jitter <= 1) {
		errs = append(errs, fmt.Errorf("jitter %v: must be in [0, 1]", p.Jitter))
	}
	return errors.Join(errs...)
}

// clamp01 moves x into [0, 1]; NaN becomes 0.
func clamp01(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	return min(x, 1)
}

// durationOf converts nanoseconds to a Duration, rounding to the nearest
// nanosecond and saturating: NaN and values ≤ 0 give 0, values beyond the
// Duration range give the largest Duration.
func durationOf(ns float64) time.Duration {
	if !(ns > 0) {
		return 0
	}
	if ns >= 1<<63 {
		return math.MaxInt64
	}
	// Below 2^63 the nearest float64 is at most 2^63−1024, so this fits.
	return time.Duration(math.Round(ns))
}
