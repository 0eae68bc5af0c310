package backoff

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// P6 golden values: upstream computeBackoffMs 0→0, 1→5 s, 2→25 s, 3→2 min, 4→10 min, 5→10 min.
func TestScheduleAt(t *testing.T) {
	s := DeliverySchedule()
	tests := []struct {
		n    int
		want time.Duration
	}{
		{math.MinInt, 0},
		{-1, 0},
		{0, 0},
		{1, 5 * time.Second},
		{2, 25 * time.Second},
		{3, 2 * time.Minute},
		{4, 10 * time.Minute},
		{5, 10 * time.Minute},
		{1_000_000, 10 * time.Minute},
		{math.MaxInt, 10 * time.Minute},
	}
	for _, tt := range tests {
		if got := s.At(tt.n); got != tt.want {
			t.Errorf("DeliverySchedule().At(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
	if got := Schedule(nil).At(3); got != 0 {
		t.Errorf("empty Schedule.At(3) = %v, want 0", got)
	}
	if got := (Schedule{time.Second, -time.Second}).At(2); got != 0 {
		t.Errorf("negative entry: At(2) = %v, want 0", got)
	}
}

func TestDeliveryScheduleIsACopy(t *testing.T) {
	s := DeliverySchedule()
	s[0] = time.Hour
	if got := DeliverySchedule().At(1); got != 5*time.Second {
		t.Fatalf("DeliverySchedule().At(1) = %v after changing an earlier copy, want 5s", got)
	}
}

func TestScheduleJittered(t *testing.T) {
	s := DeliverySchedule()
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
		{"first attempt stays 0", 0, 1, 0.5, 0},
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

// P13 for tables: 0 ≤ Jittered ≤ At(n) for every table, n, jitter and rnd,
// and jitter 0 is exact (P6 parity).
func TestScheduleJitteredCapP13(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := Schedule(rapid.SliceOf(rapid.Map(rapid.Int64(), func(v int64) time.Duration {
			return time.Duration(v)
		})).Draw(t, "schedule"))
		n := anyAttempt.Draw(t, "n")
		jitter := anyFloat.Draw(t, "jitter")
		rnd := unitRand.Draw(t, "rnd")
		at := s.At(n)
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
	s := DeliverySchedule()
	d := s.At(2)
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
