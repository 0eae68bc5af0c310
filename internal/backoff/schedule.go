package backoff

import "time"

// Schedule is a table of retry delays: entry k−1 is the wait after the k-th failure in a
// row, and the last entry repeats for every later failure. Upstream's cron error backoff
// [30s 1m 5m 15m 60m] is one; the delivery retry table is another (see recovery, which
// keeps upstream's shift by one).
type Schedule []time.Duration

// After returns the wait after the k-th failure in a row: s[k−1] while k ≤ len(s), the
// last entry after that, and 0 for k ≤ 0 (nothing has failed) or an empty Schedule. A
// negative entry counts as 0. This is upstream's computeBackoffMs(k).
func (s Schedule) After(k int) time.Duration {
	if k <= 0 || len(s) == 0 {
		return 0
	}
	return max(s[min(k-1, len(s)-1)], 0)
}

// Jittered returns After(k) shortened by downward jitter: d·(1 − jitter·rnd), with jitter
// and rnd clamped to [0, 1]. The table value stays an upper bound, jitter 0 (or rnd 0)
// gives exactly After(k), and jitter 1 spreads the delay uniformly over (0, d].
func (s Schedule) Jittered(k int, jitter, rnd float64) time.Duration {
	d := s.After(k)
	cut := clamp01(jitter) * clamp01(rnd)
	if cut == 0 {
		return d
	}
	return min(durationOf(float64(d)*(1-cut)), d)
}
