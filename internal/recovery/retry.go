package recovery

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/schedd/schedd/internal/backoff"
)

// DefaultSchedule is upstream's retry table (BACKOFF_MS); the last value repeats.
func DefaultSchedule() []time.Duration {
	return []time.Duration{5 * time.Second, 25 * time.Second, 2 * time.Minute, 10 * time.Minute}
}

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

// maxRetryAfter caps a parsed Retry-After before any configured clamp, so that arithmetic on
// it cannot overflow.
const maxRetryAfter = 365 * 24 * time.Hour

// ParseRetryAfter reads an HTTP Retry-After value (RFC 9110 §10.2.3): delta-seconds or an
// HTTP-date, relative to now. A date in the past gives 0. ok is false for anything else.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		for i := 0; i < len(v); i++ {
			if v[i] < '0' || v[i] > '9' {
				return 0, false
			}
		}
		secs, err := strconv.ParseUint(v, 10, 64)
		if err != nil || secs > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true // too large to represent: as large as we allow
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), maxRetryAfter), true
}
