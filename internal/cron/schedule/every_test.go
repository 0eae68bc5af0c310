package schedule

import (
	"slices"
	"testing"
	"time"
)

func TestEveryAnchoredAtOrigin(t *testing.T) {
	origin := mustTime(t, "2026-01-01T00:00:00Z")
	e := Every(30*time.Minute, origin)
	for _, tc := range []struct{ from, want string }{
		{"2025-12-31T23:00:00Z", "2026-01-01T00:00:00Z"}, // before the origin: the origin
		{"2026-01-01T00:00:00Z", "2026-01-01T00:30:00Z"}, // on a slot: the next one
		{"2026-01-01T00:29:59.999999999Z", "2026-01-01T00:30:00Z"},
		{"2026-01-01T00:31:00Z", "2026-01-01T01:00:00Z"},
		{"2026-07-04T10:45:00.5Z", "2026-07-04T11:00:00Z"},
	} {
		got, ok := e.Next(mustTime(t, tc.from))
		if !ok || got.Format(time.RFC3339) != tc.want {
			t.Errorf("Next(%s) = %v %v, want %s", tc.from, got, ok, tc.want)
		}
	}
	// A restart builds the schedule again: the slots stay on the origin's grid.
	now := time.Now()
	a, _ := Every(7*time.Minute, origin).Next(now)
	b, _ := Every(7*time.Minute, origin).Next(now)
	if !a.Equal(b) || a.Sub(origin)%(7*time.Minute) != 0 || !a.After(now) || a.Sub(now) > 7*time.Minute {
		t.Errorf("Next(now) = %v, off the grid of %v", a, origin)
	}
	if _, ok := Every(time.Nanosecond, origin).Next(origin.AddDate(300, 0, 0)); ok {
		t.Error("Next past the range of time.Duration: want false")
	}
}

// TestEveryFollowsElapsedTimeP23: an interval ignores the wall clock, so an
// hourly interval runs twice in New York's repeated hour.
func TestEveryFollowsElapsedTimeP23(t *testing.T) {
	ny := mustZone(t, "America/New_York")
	e := Every(time.Hour, time.Date(2026, 1, 1, 0, 0, 0, 0, ny))
	got := between(e, mustTime(t, "2026-11-01T00:30:00-04:00"), mustTime(t, "2026-11-01T03:30:00-05:00"))
	for i := range got {
		got[i] = mustTime(t, got[i]).In(ny).Format(time.RFC3339)
	}
	want := []string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00", "2026-11-01T03:00:00-05:00"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestEveryString(t *testing.T) {
	origin := time.Unix(0, 0)
	for d, want := range map[time.Duration]string{
		30 * time.Minute: "every 30m", 90 * time.Minute: "every 1h30m", 90 * time.Second: "every 1m30s",
		45 * time.Second: "every 45s", time.Hour: "every 1h", 24 * time.Hour: "every 24h", 1500 * time.Millisecond: "every 1.5s",
	} {
		if got := Every(d, origin).String(); got != want {
			t.Errorf("Every(%v).String() = %q, want %q", d, got, want)
		}
	}
}

func TestEveryRejectsNonPositive(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Every(0) did not panic")
		}
	}()
	Every(0, time.Now())
}

func TestAt(t *testing.T) {
	when := mustTime(t, "2026-05-01T09:30:00+02:00")
	a := At(when)
	if got, ok := a.Next(when.Add(-time.Nanosecond)); !ok || !got.Equal(when) {
		t.Errorf("Next before = %v %v, want %v", got, ok, when)
	}
	for _, from := range []time.Time{when, when.Add(time.Hour)} {
		if got, ok := a.Next(from); ok {
			t.Errorf("Next(%v) = %v, want none", from, got)
		}
	}
	if got := a.String(); got != "at 2026-05-01T09:30:00+02:00" {
		t.Errorf("String() = %q", got)
	}
}

func TestOffset(t *testing.T) {
	// The first 8 bytes of sha256("backup"), big-endian, modulo the jitter.
	if got := Offset("backup", 5*time.Minute); got != 265520850680 {
		t.Errorf("Offset(backup, 5m) = %d", got)
	}
	if got := Offset("report", time.Hour); got != 3052964497564 {
		t.Errorf("Offset(report, 1h) = %d", got)
	}
	for _, jitter := range []time.Duration{0, -time.Second} {
		if got := Offset("backup", jitter); got != 0 {
			t.Errorf("Offset(backup, %v) = %v, want 0", jitter, got)
		}
	}
	seen := map[time.Duration]bool{}
	for i := range 1000 {
		off := Offset("job-"+string(rune('a'+i%26))+time.Duration(i).String(), time.Minute)
		if off < 0 || off >= time.Minute {
			t.Fatalf("offset %v out of [0, 1m)", off)
		}
		seen[off/time.Second] = true
	}
	if len(seen) < 55 { // 1000 names over 60 one-second buckets
		t.Errorf("offsets of 1000 names fill %d of 60 seconds", len(seen))
	}
}
