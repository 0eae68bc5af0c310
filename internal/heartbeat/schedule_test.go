package heartbeat

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestPhaseStableAndInRange(t *testing.T) {
	for _, interval := range []time.Duration{time.Millisecond, time.Second, 30 * time.Minute, 24 * time.Hour} {
		for _, id := range []string{"main", "ops", "agent-with-a-long-name"} {
			p := Phase("seed", id, interval)
			if p != Phase("seed", id, interval) {
				t.Fatalf("phase of %s not stable", id)
			}
			if p < 0 || p >= interval {
				t.Fatalf("phase %v of %s outside [0, %v)", p, id, interval)
			}
		}
	}
	if Phase("a", "main", time.Hour) == Phase("b", "main", time.Hour) &&
		Phase("a", "ops", time.Hour) == Phase("b", "ops", time.Hour) {
		t.Fatal("the seed does not change phases")
	}
}

func TestNextSlot(t *testing.T) {
	at := func(s string) time.Time { return utc("2026-05-01T" + s + "Z") }
	for _, tc := range []struct{ now, want string }{
		{"10:10:00", "10:15:00"},
		{"10:15:00", "11:15:00"}, // exactly on a slot: the next one, never now
		{"10:14:59", "10:15:00"},
		{"10:15:00.001", "11:15:00"},
	} {
		if got := NextSlot(at(tc.now), time.Hour, 15*time.Minute); !got.Equal(at(tc.want)) {
			t.Errorf("NextSlot(%s) = %v, want %s", tc.now, got, tc.want)
		}
	}
}

func TestResolveNextDue(t *testing.T) {
	now := utc("2026-05-01T10:10:00Z")
	kept := utc("2026-05-01T10:40:00Z")
	fresh := utc("2026-05-01T10:15:00Z")
	for _, tc := range []struct {
		name string
		prev *Slot
		want time.Time
	}{
		{"no previous state", nil, fresh},
		{"unchanged and in the future: kept", &Slot{time.Hour, 15 * time.Minute, kept}, kept},
		{"in the past: fresh slot", &Slot{time.Hour, 15 * time.Minute, now.Add(-time.Minute)}, fresh},
		{"due exactly now: fresh slot", &Slot{time.Hour, 15 * time.Minute, now}, fresh},
		{"interval changed", &Slot{2 * time.Hour, 15 * time.Minute, kept}, fresh},
		{"phase changed", &Slot{time.Hour, 16 * time.Minute, kept}, fresh},
	} {
		if got := ResolveNextDue(now, time.Hour, 15*time.Minute, tc.prev); !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSeekActive(t *testing.T) {
	w := NewWindow(&ActiveHours{Start: "08:00", End: "22:00", Timezone: "UTC"}, "", time.UTC)
	start := utc("2026-05-01T22:15:00Z")
	if got := SeekActive(start, 30*time.Minute, w.Within); !got.Equal(utc("2026-05-02T08:15:00Z")) {
		t.Errorf("30m slots from 22:15: %v, want 08:15 next day", got)
	}
	inside := utc("2026-05-01T12:00:00Z")
	if got := SeekActive(inside, 30*time.Minute, w.Within); !got.Equal(inside) {
		t.Errorf("an active start must be kept, got %v", got)
	}
	// Short intervals step at least a minute, staying on the interval's grid.
	if got := SeekActive(utc("2026-05-01T21:59:50Z"), 10*time.Second, w.Within); !got.Equal(utc("2026-05-01T21:59:50Z")) {
		t.Errorf("21:59:50 is active, got %v", got)
	}
	got := SeekActive(utc("2026-05-01T22:00:10Z"), 10*time.Second, w.Within)
	if !got.Equal(utc("2026-05-02T08:00:10Z")) {
		t.Errorf("10s slots from 22:00:10: %v, want 08:00:10", got)
	}
	never := NewWindow(&ActiveHours{Start: "09:00", End: "09:00"}, "", time.UTC)
	if got := SeekActive(start, time.Hour, never.Within); !got.Equal(start) {
		t.Errorf("no active slot within 7 days must return start, got %v", got)
	}
}

func TestAdvanceDue(t *testing.T) {
	now := utc("2026-05-01T10:10:00Z")
	always := Window{}.Within
	// An interval run 5 min before a slot (an interval after a manual run, off the slots):
	// not that slot, which would run the agent twice within minutes.
	if got := advanceDue(now, KindInterval, time.Hour, 15*time.Minute, always); !got.Equal(utc("2026-05-01T11:15:00Z")) {
		t.Errorf("interval advance: %v, want the slot after the near one", got)
	}
	// An interval run on its slot (or late by less than half an interval): the next slot.
	if got := advanceDue(utc("2026-05-01T10:15:00.004Z"), KindInterval, time.Hour, 15*time.Minute, always); !got.Equal(utc("2026-05-01T11:15:00Z")) {
		t.Errorf("interval advance on the slot: %v", got)
	}
	// 40 min before a slot: that slot (more than half an interval away).
	if got := advanceDue(utc("2026-05-01T10:35:00Z"), KindInterval, time.Hour, 15*time.Minute, always); !got.Equal(utc("2026-05-01T11:15:00Z")) {
		t.Errorf("interval advance 40 min before a slot: %v", got)
	}
	if got := advanceDue(now, KindManual, time.Hour, 15*time.Minute, always); !got.Equal(utc("2026-05-01T11:10:00Z")) {
		t.Errorf("manual advance: %v, want now + interval", got)
	}
}

func TestCooldown(t *testing.T) {
	t0 := utc("2026-05-01T10:00:00Z")
	sec := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Second))) }
	for _, tc := range []struct {
		name   string
		kind   ReasonKind
		starts []time.Time
		now    time.Time
		until  time.Time
		reason string
	}{
		{"first run is free", KindExecEvent, nil, t0, time.Time{}, ""},
		{"min spacing", KindExecEvent, []time.Time{t0}, sec(29.999), sec(30), SkipMinSpacing},
		{"spacing passed", KindExecEvent, []time.Time{t0}, sec(30), time.Time{}, ""},
		{"cron spaced too", KindCron, []time.Time{t0}, sec(10), sec(30), SkipMinSpacing},
		{"other spaced too", KindOther, []time.Time{t0}, sec(10), sec(30), SkipMinSpacing},
		{"manual exempt", KindManual, []time.Time{t0}, sec(1), time.Time{}, ""},
		{"interval exempt", KindInterval, []time.Time{t0}, sec(1), time.Time{}, ""},
		{"flood", KindHook, []time.Time{sec(0), sec(31), sec(40), sec(45), sec(50)}, sec(59), sec(60.001), SkipFlood},
		{"flood window passed", KindHook, []time.Time{sec(0), sec(1), sec(2), sec(3), sec(4)}, sec(60), time.Time{}, ""},
		{"flood uses the last five", KindHook, []time.Time{sec(-100), sec(0), sec(1), sec(2), sec(3), sec(4)}, sec(59), sec(60.001), SkipFlood},
		{"manual exempt from flood", KindManual, []time.Time{sec(0), sec(1), sec(2), sec(3), sec(4)}, sec(5), time.Time{}, ""},
	} {
		until, reason, deferred := cooldown(tc.kind, tc.starts, tc.now)
		if deferred != (tc.reason != "") || reason != tc.reason || !until.Equal(tc.until) {
			t.Errorf("%s: (%v, %q, %v), want (%v, %q)", tc.name, until, reason, deferred, tc.until, tc.reason)
		}
	}
}

func TestRecordStartKeepsRing(t *testing.T) {
	var starts []time.Time
	t0 := utc("2026-05-01T10:00:00Z")
	for i := range 10 {
		starts = recordStart(starts, t0.Add(time.Duration(i)*time.Second))
	}
	if len(starts) != startRing || !starts[0].Equal(t0.Add(4*time.Second)) {
		t.Fatalf("ring %v", starts)
	}
}

func TestRecordStartDropsWhatTheGateCannotSee(t *testing.T) {
	t0 := utc("2026-05-01T10:00:00Z")
	starts := recordStart(nil, t0)
	starts = recordStart(starts, t0.Add(50*time.Second))
	starts = recordStart(starts, t0.Add(100*time.Second))
	if len(starts) != 2 || !starts[0].Equal(t0.Add(50*time.Second)) {
		t.Fatalf("starts %v: want the two within a minute of the last", starts)
	}
	starts = recordStart(starts, t0.Add(time.Hour))
	if len(starts) != 1 {
		t.Fatalf("starts %v after an hour", starts)
	}
}

// TestRecordStartPruningKeepsDecisions: the cooldown gate decides the same with the pruned
// ring as with the full history of run starts, for any history and any later instant.
func TestRecordStartPruningKeepsDecisions(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		t0 := utc("2026-05-01T10:00:00Z")
		var full, ring []time.Time
		at := t0
		for _, gap := range rapid.SliceOfN(rapid.Int64Range(0, 120_000), 1, 20).Draw(t, "gaps_ms") {
			at = at.Add(time.Duration(gap) * time.Millisecond)
			full = append(full, at)
			ring = recordStart(ring, at)
		}
		now := at.Add(time.Duration(rapid.Int64Range(0, 120_000).Draw(t, "now_ms")) * time.Millisecond)
		kind := rapid.SampledFrom([]ReasonKind{KindExecEvent, KindHook, KindCron, KindWake, KindOther}).Draw(t, "kind")
		u1, r1, d1 := cooldown(kind, full, now)
		u2, r2, d2 := cooldown(kind, ring, now)
		if d1 != d2 || r1 != r2 || !u1.Equal(u2) {
			t.Fatalf("full history (%v, %q, %v), ring %v gives (%v, %q, %v)", u1, r1, d1, ring, u2, r2, d2)
		}
	})
}

// TestPhaseOnGrid: phases are whole PhaseGrid steps (shorter intervals: milliseconds), and
// 10,000 agents still spread evenly over a 30 s interval.
func TestPhaseOnGrid(t *testing.T) {
	every := 30 * time.Second
	buckets := map[time.Duration]int{}
	for i := range 10000 {
		p := Phase("seed", fmt.Sprintf("a%05d", i), every)
		if p%PhaseGrid != 0 || p < 0 || p >= every {
			t.Fatalf("phase %v of a%05d is off the grid or outside [0, %v)", p, i, every)
		}
		buckets[p]++
	}
	steps := int(every / PhaseGrid)
	// 10 bursts a second of about 33 pulses: small enough that the last pulse of a burst
	// is not held back by the CPU the others take.
	if steps != 300 {
		t.Errorf("%d grid points in %v, want 300 (a 100 ms grid)", steps, every)
	}
	if len(buckets) != steps {
		t.Errorf("%d distinct phases, want all %d grid points used", len(buckets), steps)
	}
	for p, n := range buckets {
		if mean := 10000 / steps; n > 3*mean {
			t.Errorf("%d agents on phase %v, mean %d: not spread", n, p, mean)
		}
	}
	for _, every := range []time.Duration{time.Millisecond, 70 * time.Millisecond} {
		if p := Phase("seed", "main", every); p < 0 || p >= every {
			t.Errorf("phase %v for a %v interval", p, every)
		}
	}
	if p := Phase("seed", "main", 70*time.Millisecond); p%time.Millisecond != 0 {
		t.Errorf("phase %v is not whole milliseconds", p)
	}
}
