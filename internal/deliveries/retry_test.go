package deliveries

import (
	"testing"
	"time"
)

// P6 golden: with jitter off, the wait after k failures is table[min(k, 3)]; upstream's
// computeBackoffMs(retryCount+1).
func TestNextAttemptAtGolden_P6(t *testing.T) {
	last := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	wait := func(sched []time.Duration, failures int) time.Duration {
		return NextAttemptAt(sched, failures, last, last, 0, 0, 0, 0).Sub(last)
	}
	upstream := func(rc int) time.Duration { // computeBackoffMs(retryCount + 1) of the queue schedd replaces
		n := rc + 1
		ms := []time.Duration{5 * time.Second, 25 * time.Second, 2 * time.Minute, 10 * time.Minute}
		return ms[min(n-1, 3)]
	}
	want := []time.Duration{1: 25 * time.Second, 2: 2 * time.Minute, 3: 10 * time.Minute, 4: 10 * time.Minute, 5: 10 * time.Minute}
	for k := 1; k < len(want); k++ {
		if got := wait(upstreamSchedule(), k); got != want[k] || got != upstream(k) {
			t.Errorf("wait after %d failures = %v, want %v (upstream %v)", k, got, want[k], upstream(k))
		}
	}
	if got := wait(upstreamSchedule(), 1_000_000); got != 10*time.Minute {
		t.Errorf("wait after 1e6 failures = %v", got)
	}
	if got := wait(nil, 3); got != 0 {
		t.Errorf("empty table: %v", got)
	}
	if got := wait([]time.Duration{time.Minute}, 4); got != time.Minute {
		t.Errorf("one-entry table: %v", got)
	}
}

// P8: next_attempt_at >= now + Retry-After (clamped), whatever the jitter.
func TestNextAttemptAtRetryAfterFloor_P8(t *testing.T) {
	sched := upstreamSchedule()
	last := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := last.Add(2 * time.Second)
	for _, tc := range []struct {
		name     string
		failures int
		ra, max  time.Duration
		want     time.Time
	}{
		{"no hint", 1, 0, time.Hour, last.Add(25 * time.Second)},
		{"hint below table", 1, 10 * time.Second, time.Hour, last.Add(25 * time.Second)},
		{"hint above table", 1, 60 * time.Second, time.Hour, now.Add(60 * time.Second)},
		{"hint clamped", 1, 3 * time.Hour, time.Hour, now.Add(time.Hour)},
		{"after many failures", 4, 30 * time.Second, time.Hour, last.Add(10 * time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NextAttemptAt(sched, tc.failures, last, now, 0, 0, tc.ra, tc.max); !got.Equal(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for _, u := range []float64{0, 0.3, 0.999} {
				got := NextAttemptAt(sched, tc.failures, last, now, 0.5, u, tc.ra, tc.max)
				if tc.ra > 0 && got.Before(now.Add(min(tc.ra, tc.max))) {
					t.Fatalf("jitter %v broke the floor: %v", u, got)
				}
				if got.After(tc.want) {
					t.Fatalf("jitter %v went above the table: %v > %v", u, got, tc.want)
				}
			}
		})
	}
}
