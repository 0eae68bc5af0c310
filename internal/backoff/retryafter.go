package backoff

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

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
