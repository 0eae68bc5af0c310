package deliveries

import (
	"time"

	"github.com/schedd/schedd/internal/backoff"
)

// NextAttemptAt is when an entry may be attempted again after a transient failure that
// brought it to failures (≥ 1) recorded failures, its last attempt having started at
// lastAttempt: lastAttempt plus the table's wait, jittered down, and never before now +
// retryAfter (clamped to retryAfterMax) when the destination gave a Retry-After (P8).
//
// The wait after k failures is the table's wait after k+1 (P6): upstream's eligibility,
// computeBackoffMs(retryCount+1). With the default table a first failure waits 25 s, then
// 2 m, then 10 m for every later one; its first entry, 5 s, is never waited.
func NextAttemptAt(schedule backoff.Schedule, failures int, lastAttempt, now time.Time, jitter, u float64,
	retryAfter, retryAfterMax time.Duration) time.Time {
	at := lastAttempt.Add(schedule.Jittered(failures+1, jitter, u))
	if retryAfter > 0 {
		if retryAfterMax > 0 {
			retryAfter = min(retryAfter, retryAfterMax)
		}
		if floor := now.Add(retryAfter); at.Before(floor) {
			at = floor
		}
	}
	return at
}
