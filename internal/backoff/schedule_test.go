package backoff

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The tables schedd uses, as upstream has them: delivery retries (BACKOFF_MS) and the cron
// error backoff.
var (
	deliveryTable = Schedule{5 * time.Second, 25 * time.Second, 2 * time.Minute, 10 * time.Minute}
	cronTable     = Schedule{30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}
)

// TestScheduleAfter: the wait after the k-th failure is entry k−1, the last entry repeats,
// nothing failed waits nothing; upstream computeBackoffMs: 0→0, 1→5 s, 2→25 s, 3→2 min,
// 4→10 min, 5→10 min.
func TestScheduleAfter(t *testing.T) {
	tests := []struct {
		name string
		s    Schedule
		k    int
		want time.Duration
	}{
		{"delivery", deliveryTable, math.MinInt, 0},
		{"delivery", deliveryTable, -1, 0},
		{"delivery", deliveryTable, 0, 0},
		{"delivery", deliveryTable, 1, 5 * time.Second},
		{"delivery", deliveryTable, 2, 25 * time.Second},
		{"delivery", deliveryTable, 3, 2 * time.Minute},
		{"delivery", deliveryTable, 4, 10 * time.Minute},
		{"delivery", deliveryTable, 5, 10 * time.Minute},
		{"delivery", deliveryTable, 1_000_000, 10 * time.Minute},
		{"delivery", deliveryTable, math.MaxInt, 10 * time.Minute},
		{"cron", cronTable, 1, 30 * time.Second},
		{"cron", cronTable, 2, time.Minute},
		{"cron", cronTable, 5, time.Hour},
		{"cron", cronTable, 6, time.Hour},
		{"empty", nil, 3, 0},
		{"one entry", Schedule{time.Minute}, 4, time.Minute},
		{"negative entry", Schedule{time.Second, -time.Second}, 2, 0},
	}
	for _, tt := range tests {
		if got := tt.s.After(tt.k); got != tt.want {
			t.Errorf("%s: After(%d) = %v, want %v", tt.name, tt.k, got, tt.want)
		}
	}
}

func TestScheduleJittered(t *testing.T) {
	s := deliveryTable
	tests := []struct {
		name        string
		n           int
		jitter, rnd float64
		want        time.Duration
	}{
		{"jitter 0 is exact", 2, 0, 0.7, 25 * time.Second},
		{"rnd 0 is exact", 2, 0.2, 0, 25 * time.Second},
		{"downward 20%", 2, 0.2, 0.5, 22500 * time.Millisecond},
		{"downward 20% near max", 4, 0.2, 0.999, 480120 * time.Millisecond},
		{"full jitter", 3, 1, 0.25, 90 * time.Second},
		{"no failure waits nothing", 0, 1, 0.5, 0},
		{"jitter NaN is 0", 2, math.NaN(), 0.5, 25 * time.Second},
		{"rnd NaN is 0", 2, 0.5, math.NaN(), 25 * time.Second},
		{"jitter above 1 is 1", 1, 3, 0.5, 2500 * time.Millisecond},
		{"negative jitter is 0", 1, -3, 0.5, 5 * time.Second},
		{"rnd 1 with full jitter", 1, 1, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.Jittered(tt.n, tt.jitter, tt.rnd); got != tt.want {
				t.Errorf("Jittered(%d, %v, %v) = %v, want %v", tt.n, tt.jitter, tt.rnd, got, tt.want)
			}
		})
	}
}

// P13 for tables: 0 ≤ Jittered ≤ After(n) for every table, n, jitter and rnd,
// and jitter 0 is exact (P6 parity).
func TestScheduleJitteredCapP13(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := Schedule(rapid.SliceOf(rapid.Map(rapid.Int64(), func(v int64) time.Duration {
			return time.Duration(v)
		})).Draw(t, "schedule"))
		n := anyAttempt.Draw(t, "n")
		jitter := anyFloat.Draw(t, "jitter")
		rnd := unitRand.Draw(t, "rnd")
		at := s.After(n)
		if d := s.Jittered(n, jitter, rnd); d < 0 || d > at {
			t.Fatalf("Jittered(%d, %v, %v) = %v, want within [0, %v]", n, jitter, rnd, d, at)
		}
		if d := s.Jittered(n, 0, rnd); d != at {
			t.Fatalf("Jittered(%d, 0, %v) = %v, want exactly %v", n, rnd, d, at)
		}
	})
}

// P15: full jitter is uniform over (0, d]; 20% downward jitter over [0.8d, d].
func TestScheduleJitterDistributionP15(t *testing.T) {
	s := deliveryTable
	d := s.After(2)
	t.Run("full", func(t *testing.T) {
		xs := sampleDurations(t, 100_000, 0, d, func(u float64) time.Duration { return s.Jittered(2, 1, u) })
		if k := ksUniform(xs, 0, float64(d)); k > ksCritical01 {
			t.Errorf("KS statistic √n·D = %.3f > %.3f: not uniform over (0, %v]", k, ksCritical01, d)
		}
	})
	t.Run("20 percent", func(t *testing.T) {
		lo := d * 8 / 10
		xs := sampleDurations(t, 100_000, lo, d, func(u float64) time.Duration { return s.Jittered(2, 0.2, u) })
		if k := ksUniform(xs, float64(lo), float64(d)); k > ksCritical01 {
			t.Errorf("KS statistic √n·D = %.3f > %.3f: not uniform over [%v, %v]", k, ksCritical01, lo, d)
		}
	})
}
