package schedule

import (
	"slices"
	"testing"
	"time"
)

// between lists the runs in (from, to), formatted in the schedule's zone.
func between(s Schedule, from, to time.Time) []string {
	var out []string
	for {
		next, ok := s.Next(from)
		if !ok || !next.Before(to) {
			return out
		}
		out = append(out, next.Format(time.RFC3339))
		from = next
	}
}

// TestNextDSTGoldenP23 pins the DST rules on the transition days: a fixed
// hour in a gap runs once, shifted by the gap; a fixed hour in an overlap
// runs once, at its first occurrence; a wildcard or step hour runs at every
// matching instant and is not shifted. The runs listed are all those in the
// open interval (from, to).
func TestNextDSTGoldenP23(t *testing.T) {
	for _, tc := range []struct {
		zone, expr, from, to string
		want                 []string
	}{
		// New York springs forward on 2026-03-08 at 02:00 EST to 03:00 EDT.
		{"America/New_York", "30 2 * * *", "2026-03-07T12:00:00-05:00", "2026-03-09T12:00:00-04:00", []string{"2026-03-08T03:30:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"America/New_York", "0 2 * * *", "2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00", []string{"2026-03-08T03:00:00-04:00"}},
		{"America/New_York", "30 30 2 * * *", "2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00", []string{"2026-03-08T03:30:30-04:00"}},
		{"America/New_York", "30 2,3 * * *", "2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00", []string{"2026-03-08T03:30:00-04:00"}},
		{"America/New_York", "0 1-3 * * *", "2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00", []string{"2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00"}},
		{"America/New_York", "0 * * * *", "2026-03-08T00:30:00-05:00", "2026-03-08T04:30:00-04:00", []string{"2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T04:00:00-04:00"}},
		{"America/New_York", "*/15 * * * *", "2026-03-08T01:00:00-05:00", "2026-03-08T03:30:00-04:00", []string{"2026-03-08T01:15:00-05:00", "2026-03-08T01:30:00-05:00", "2026-03-08T01:45:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T03:15:00-04:00"}},
		{"America/New_York", "30 */2 * * *", "2026-03-08T00:00:00-05:00", "2026-03-08T05:00:00-04:00", []string{"2026-03-08T00:30:00-05:00", "2026-03-08T04:30:00-04:00"}},
		// New York falls back on 2026-11-01 at 02:00 EDT to 01:00 EST.
		{"America/New_York", "30 1 * * *", "2026-10-31T12:00:00-04:00", "2026-11-02T12:00:00-05:00", []string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"America/New_York", "*/20 1 * * *", "2026-11-01T00:00:00-04:00", "2026-11-01T12:00:00-05:00", []string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:20:00-04:00", "2026-11-01T01:40:00-04:00"}},
		{"America/New_York", "30 2 * * *", "2026-11-01T00:00:00-04:00", "2026-11-02T00:00:00-05:00", []string{"2026-11-01T02:30:00-05:00"}},
		{"America/New_York", "0 * * * *", "2026-11-01T00:30:00-04:00", "2026-11-01T02:30:00-05:00", []string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00"}},
		{"America/New_York", "*/15 * * * *", "2026-11-01T00:59:59-04:00", "2026-11-01T02:00:00-05:00", []string{
			"2026-11-01T01:00:00-04:00", "2026-11-01T01:15:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T01:45:00-04:00",
			"2026-11-01T01:00:00-05:00", "2026-11-01T01:15:00-05:00", "2026-11-01T01:30:00-05:00", "2026-11-01T01:45:00-05:00"}},
		// From inside the overlap's first pass, a fixed hour waits for the next day.
		{"America/New_York", "30 1 * * *", "2026-11-01T01:40:00-04:00", "2026-11-02T12:00:00-05:00", []string{"2026-11-02T01:30:00-05:00"}},
		// Berlin: 2026-03-29 02:00 -> 03:00, 2026-10-25 03:00 -> 02:00.
		{"Europe/Berlin", "30 2 * * *", "2026-03-29T00:00:00+01:00", "2026-03-30T00:00:00+02:00", []string{"2026-03-29T03:30:00+02:00"}},
		{"Europe/Berlin", "30 2 * * *", "2026-10-25T00:00:00+02:00", "2026-10-26T00:00:00+01:00", []string{"2026-10-25T02:30:00+02:00"}},
		{"Europe/Berlin", "30 * * * *", "2026-10-25T01:00:00+02:00", "2026-10-25T03:00:00+01:00", []string{"2026-10-25T01:30:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-25T02:30:00+01:00"}},
		// Lord Howe moves by 30 minutes: 2026-10-04 02:00 +10:30 -> 02:30 +11.
		{"Australia/Lord_Howe", "15 2 * * *", "2026-10-04T00:00:00+10:30", "2026-10-05T00:00:00+11:00", []string{"2026-10-04T02:45:00+11:00"}},
		{"Australia/Lord_Howe", "0 2 * * *", "2026-10-04T00:00:00+10:30", "2026-10-05T00:00:00+11:00", []string{"2026-10-04T02:30:00+11:00"}},
		{"Australia/Lord_Howe", "15,45 2 * * *", "2026-10-04T00:00:00+10:30", "2026-10-05T00:00:00+11:00", []string{"2026-10-04T02:45:00+11:00"}},
		{"Australia/Lord_Howe", "*/15 * * * *", "2026-10-04T01:15:00+10:30", "2026-10-04T03:00:00+11:00", []string{"2026-10-04T01:30:00+10:30", "2026-10-04T01:45:00+10:30", "2026-10-04T02:30:00+11:00", "2026-10-04T02:45:00+11:00"}},
		// ... and back on 2026-04-05 02:00 +11 -> 01:30 +10:30.
		{"Australia/Lord_Howe", "45 1 * * *", "2026-04-05T00:00:00+11:00", "2026-04-06T00:00:00+10:30", []string{"2026-04-05T01:45:00+11:00"}},
		{"Australia/Lord_Howe", "0 * * * *", "2026-04-05T00:30:00+11:00", "2026-04-05T02:30:00+10:30", []string{"2026-04-05T01:00:00+11:00", "2026-04-05T02:00:00+10:30"}},
		{"Australia/Lord_Howe", "*/15 * * * *", "2026-04-05T01:14:59+11:00", "2026-04-05T02:00:00+10:30", []string{"2026-04-05T01:15:00+11:00", "2026-04-05T01:30:00+11:00", "2026-04-05T01:45:00+11:00", "2026-04-05T01:30:00+10:30", "2026-04-05T01:45:00+10:30"}},
		// Santiago has no midnight on 2026-09-06 (Saturday 24:00 -04 -> Sunday 01:00 -03).
		{"America/Santiago", "0 0 * * *", "2026-09-05T12:00:00-04:00", "2026-09-07T12:00:00-03:00", []string{"2026-09-06T01:00:00-03:00", "2026-09-07T00:00:00-03:00"}},
		{"America/Santiago", "30 0 * * *", "2026-09-05T12:00:00-04:00", "2026-09-06T12:00:00-03:00", []string{"2026-09-06T01:30:00-03:00"}},
		{"America/Santiago", "@weekly", "2026-09-01T00:00:00-04:00", "2026-09-10T00:00:00-03:00", []string{"2026-09-06T01:00:00-03:00"}},
		{"America/Santiago", "0 * * * *", "2026-09-05T22:59:59-04:00", "2026-09-06T02:00:00-03:00", []string{"2026-09-05T23:00:00-04:00", "2026-09-06T01:00:00-03:00"}},
		// ... and has 23:00 twice on 2026-04-04 (Saturday 24:00 -03 -> 23:00 -04).
		{"America/Santiago", "0 23 * * *", "2026-04-04T12:00:00-03:00", "2026-04-05T12:00:00-04:00", []string{"2026-04-04T23:00:00-03:00"}},
		{"America/Santiago", "30 23 * * *", "2026-04-04T12:00:00-03:00", "2026-04-05T12:00:00-04:00", []string{"2026-04-04T23:30:00-03:00"}},
		{"America/Santiago", "0 0 * * *", "2026-04-04T12:00:00-03:00", "2026-04-05T12:00:00-04:00", []string{"2026-04-05T00:00:00-04:00"}},
		{"America/Santiago", "0 * * * *", "2026-04-04T22:30:00-03:00", "2026-04-05T01:00:00-04:00", []string{"2026-04-04T23:00:00-03:00", "2026-04-04T23:00:00-04:00", "2026-04-05T00:00:00-04:00"}},
		// Kathmandu moved from +05:30 to +05:45 at the start of 1986: 00:00-00:14 do not exist.
		{"Asia/Kathmandu", "0 0 * * *", "1985-12-31T12:00:00+05:30", "1986-01-02T12:00:00+05:45", []string{"1986-01-01T00:15:00+05:45", "1986-01-02T00:00:00+05:45"}},
		{"Asia/Kathmandu", "10 0 * * *", "1985-12-31T12:00:00+05:30", "1986-01-01T12:00:00+05:45", []string{"1986-01-01T00:25:00+05:45"}},
		{"Asia/Kathmandu", "*/5 * * * *", "1985-12-31T23:50:00+05:30", "1986-01-01T00:25:00+05:45", []string{"1985-12-31T23:55:00+05:30", "1986-01-01T00:15:00+05:45", "1986-01-01T00:20:00+05:45"}},
		{"Asia/Kathmandu", "0 7 * * *", "2026-06-01T00:00:00Z", "2026-06-02T00:00:00Z", []string{"2026-06-01T07:00:00+05:45"}},
		// Sao Paulo (2018-11-04) and Cairo (2024-04-26) skipped midnight too.
		{"America/Sao_Paulo", "0 0 * * *", "2018-11-03T12:00:00-03:00", "2018-11-04T12:00:00-02:00", []string{"2018-11-04T01:00:00-02:00"}},
		{"Africa/Cairo", "0 0 * * *", "2024-04-25T12:00:00+02:00", "2024-04-26T12:00:00+03:00", []string{"2024-04-26T01:00:00+03:00"}},
		{"Africa/Cairo", "30 23 * * *", "2024-10-31T12:00:00+03:00", "2024-11-01T12:00:00+02:00", []string{"2024-10-31T23:30:00+03:00"}},
	} {
		c, err := Parse(tc.expr, mustZone(t, tc.zone))
		if err != nil {
			t.Fatal(err)
		}
		if got := between(c, mustTime(t, tc.from), mustTime(t, tc.to)); !slices.Equal(got, tc.want) {
			t.Errorf("%s %q in (%s, %s):\n got %v\nwant %v", tc.zone, tc.expr, tc.from, tc.to, got, tc.want)
		}
	}
}

// TestNextFixedHourGapRunsEveryMinuteOnceP23: a fixed hour with a minute
// wildcard runs all 60 of its minutes, shifted past the gap, each once.
func TestNextFixedHourGapRunsEveryMinuteOnceP23(t *testing.T) {
	c, err := Parse("* 2 * * *", mustZone(t, "America/New_York"))
	if err != nil {
		t.Fatal(err)
	}
	got := between(c, mustTime(t, "2026-03-08T00:00:00-05:00"), mustTime(t, "2026-03-09T00:00:00-04:00"))
	if len(got) != 60 || got[0] != "2026-03-08T03:00:00-04:00" || got[59] != "2026-03-08T03:59:00-04:00" {
		t.Errorf("got %d runs %v", len(got), got)
	}
}

// TestNextLeapYearFooterRule: in years past a zone's last listed transition
// Go's ZoneBounds is wrong on the last day of a leap year; Next must still
// move on (it used to loop forever here).
func TestNextLeapYearFooterRule(t *testing.T) {
	for _, zone := range []string{"America/New_York", "Australia/Lord_Howe", "America/Santiago"} {
		loc := mustZone(t, zone)
		c, err := Parse("0 12 31 12 *", loc)
		if err != nil {
			t.Fatal(err)
		}
		got := runs(c, time.Date(2040, 12, 30, 0, 0, 0, 0, loc), 2)
		want := []string{
			time.Date(2040, 12, 31, 12, 0, 0, 0, loc).Format(time.RFC3339),
			time.Date(2041, 12, 31, 12, 0, 0, 0, loc).Format(time.RFC3339),
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", zone, got, want)
		}
		c, _ = Parse("0 0 29 2 *", loc)
		if got := runs(c, time.Date(2036, 3, 1, 0, 0, 0, 0, loc), 2); got[1] != time.Date(2044, 2, 29, 0, 0, 0, 0, loc).Format(time.RFC3339) {
			t.Errorf("%s: Feb 29 runs %v", zone, got)
		}
	}
}

// TestNextStrictlyAfter is the schedule's half of the refire gap: Next
// never returns its argument, even on a slot, so a runner asking again right
// after a run cannot get the same instant back.
func TestNextStrictlyAfter(t *testing.T) {
	ny := mustZone(t, "America/New_York")
	origin := mustTime(t, "2026-01-01T00:00:00Z")
	for _, s := range []Schedule{
		mustParse(t, "* * * * * *", ny), mustParse(t, "*/15 * * * *", ny), mustParse(t, "30 1 * * *", ny),
		Every(time.Second, origin), Every(30*time.Minute, origin), At(origin.Add(time.Hour)),
	} {
		for _, from := range []time.Time{origin, mustTime(t, "2026-11-01T01:30:00-04:00"), mustTime(t, "2026-03-08T01:59:59.999-05:00")} {
			slot, ok := s.Next(from)
			for i := 0; ok && i < 5; i++ {
				next, more := s.Next(slot)
				if more && !next.After(slot) {
					t.Fatalf("%s: Next(%v) = %v, not after", s, slot, next)
				}
				if again, _ := s.Next(slot.Add(-time.Nanosecond)); !again.Equal(slot) {
					t.Fatalf("%s: Next just before %v = %v", s, slot, again)
				}
				slot, ok = next, more
			}
		}
	}
}

func mustParse(t testing.TB, expr string, loc *time.Location) *Cron {
	t.Helper()
	c, err := Parse(expr, loc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
