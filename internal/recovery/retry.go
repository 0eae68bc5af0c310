package recovery

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultSchedule is upstream's retry table (BACKOFF_MS); the last value repeats.
func DefaultSchedule() []time.Duration {
	return []time.Duration{5 * time.Second, 25 * time.Second, 2 * time.Minute, 10 * time.Minute}
}

// RetryDelay is the wait before the next attempt of an entry with the given number of
// recorded failures, before jitter (P6):
//
//	failures 0  → 0 (a first attempt, or the replay of an interrupted send, goes at once)
//	failures k  → schedule[min(k, len-1)]
//
// so with the default table a first failure waits 25 s, then 2 m, then 10 m for every later
// one: upstream's eligibility (computeBackoffMs(retryCount+1)). schedule[0] is the slot of
// zero failures and so is not waited in practice; it is kept for parity with upstream's table.
func RetryDelay(schedule []time.Duration, failures int) time.Duration {
	if failures <= 0 || len(schedule) == 0 {
		return 0
	}
	return max(schedule[min(failures, len(schedule)-1)], 0)
}

// Jitter shortens d by downward jitter: d·(1 − j·u), with j and u clamped to [0, 1], so the
// table value stays an upper bound and j = 0 gives d exactly.
func Jitter(d time.Duration, j, u float64) time.Duration {
	cut := clamp01(j) * clamp01(u)
	if cut == 0 || d <= 0 {
		return d
	}
	return min(time.Duration(float64(d)*(1-cut)), d)
}

func clamp01(f float64) float64 {
	if math.IsNaN(f) || f < 0 {
		return 0
	}
	return min(f, 1)
}

// NextAttemptAt is when an entry may be attempted again after a transient failure that
// brought it to failures recorded failures, its last attempt having started at lastAttempt:
// lastAttempt + Jitter(RetryDelay(schedule, failures)), and never before now + retryAfter
// (clamped to retryAfterMax) when the destination gave a Retry-After (P8).
func NextAttemptAt(schedule []time.Duration, failures int, lastAttempt, now time.Time, jitter, u float64,
	retryAfter, retryAfterMax time.Duration) time.Time {
	at := lastAttempt.Add(Jitter(RetryDelay(schedule, failures), jitter, u))
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
