package backoff

import "time"

// Schedule is a table of retry delays: entry n−1 is the delay before retry n,
// and the last entry repeats for every later retry.
type Schedule []time.Duration

// DeliverySchedule returns the delivery retry table: 5 s, 25 s, 2 min, then
// 10 min for every later retry (upstream BACKOFF_MS). Each call returns a new
// slice, so callers may modify it.
func DeliverySchedule() Schedule {
	return Schedule{5 * time.Second, 25 * time.Second, 2 * time.Minute, 10 * time.Minute}
}

// At returns the delay before retry n: 0 for n ≤ 0 (the first attempt does
// not wait), s[n−1] while n ≤ len(s), and the last entry after that. An empty
// Schedule gives 0, and a negative entry counts as 0.
//
// This matches upstream computeBackoffMs: for [DeliverySchedule], 0→0, 1→5 s,
// 2→25 s, 3→2 min, 4 and later→10 min.
func (s Schedule) At(n int) time.Duration {
	if n <= 0 || len(s) == 0 {
		return 0
	}
	return max(s[min(n-1, len(s)-1)], 0)
}

// Jittered returns At(n) shortened by downward jitter: d·(1 − jitter·rnd),
// with jitter and rnd clamped to [0, 1]. The table value stays an upper bound,
// jitter 0 (or rnd 0) gives exactly At(n), and jitter 1 spreads the delay
// uniformly over (0, d].
func (s Schedule) Jittered(n int, jitter, rnd float64) time.Duration {
	d := s.At(n)
	cut := clamp01(jitter) * clamp01(rnd)
	if cut == 0 {
		return d
	}
	return min(durationOf(float64(d)*(1-cut)), d)
}
