package heartbeat

import (
	"fmt"
	"regexp"
	"testing"
	"time"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestWithinTable is the hand-computed window table of P19: DST days in zones whose shifts
// are unusual (a half-hour shift, midnight skipped), windows crossing midnight, 24:00, start == end and invalid input.
// Every instant is UTC; the comment gives the local wall time it maps to.
func TestWithinTable(t *testing.T) {
	type row struct {
		at   string
		want bool
		note string
	}
	for _, tc := range []struct {
		name       string
		start, end string
		tz, userTZ string
		rows       []row
		hostBerlin bool
	}{
		{name: "new york office hours", start: "09:00", end: "17:00", tz: "America/New_York", rows: []row{
			{"2026-01-15T15:00:00Z", true, "10:00 EST"},
			{"2026-01-15T23:30:00Z", false, "18:30 EST"},
			{"2026-01-15T13:59:00Z", false, "08:59 EST"},
			{"2026-07-15T13:00:00Z", true, "09:00 EDT"},
			{"2026-07-15T12:59:00Z", false, "08:59 EDT"},
			{"2026-07-15T21:00:00Z", false, "17:00 EDT, end exclusive"},
		}},
		{name: "new york spring-forward day", start: "08:00", end: "22:00", tz: "America/New_York", rows: []row{
			{"2026-03-08T11:59:00Z", false, "07:59 EDT"},
			{"2026-03-08T12:00:00Z", true, "08:00 EDT"},
			{"2026-03-09T01:59:00Z", true, "21:59 EDT"},
			{"2026-03-09T02:00:00Z", false, "22:00 EDT"},
		}},
		{name: "new york skipped hour never opens", start: "02:00", end: "03:00", tz: "America/New_York", rows: []row{
			{"2026-03-08T06:59:00Z", false, "01:59 EST"},
			{"2026-03-08T07:00:00Z", false, "03:00 EDT: 02:00-02:59 did not exist"},
			{"2026-03-09T06:00:00Z", true, "02:00 EDT the next day"},
		}},
		{name: "new york repeated hour open twice", start: "01:00", end: "02:00", tz: "America/New_York", rows: []row{
			{"2026-11-01T04:59:00Z", false, "00:59 EDT"},
			{"2026-11-01T05:00:00Z", true, "01:00 EDT"},
			{"2026-11-01T05:59:00Z", true, "01:59 EDT"},
			{"2026-11-01T06:00:00Z", true, "01:00 EST (again)"},
			{"2026-11-01T06:59:00Z", true, "01:59 EST"},
			{"2026-11-01T07:00:00Z", false, "02:00 EST"},
		}},
		{name: "new york overnight across spring forward (7 h)", start: "22:00", end: "06:00", tz: "America/New_York", rows: []row{
			{"2026-03-08T02:59:00Z", false, "21:59 EST Mar 7"},
			{"2026-03-08T03:00:00Z", true, "22:00 EST Mar 7"},
			{"2026-03-08T09:59:00Z", true, "05:59 EDT"},
			{"2026-03-08T10:00:00Z", false, "06:00 EDT"},
			{"2026-03-08T16:00:00Z", false, "12:00 EDT"},
		}},
		{name: "new york overnight across fall back (9 h)", start: "22:00", end: "06:00", tz: "America/New_York", rows: []row{
			{"2026-11-01T02:00:00Z", true, "22:00 EDT Oct 31"},
			{"2026-11-01T10:59:00Z", true, "05:59 EST"},
			{"2026-11-01T11:00:00Z", false, "06:00 EST"},
		}},
		{name: "berlin spring forward", start: "08:00", end: "22:00", tz: "Europe/Berlin", rows: []row{
			{"2026-03-28T06:59:00Z", false, "07:59 CET"},
			{"2026-03-28T07:00:00Z", true, "08:00 CET"},
			{"2026-03-29T05:59:00Z", false, "07:59 CEST"},
			{"2026-03-29T06:00:00Z", true, "08:00 CEST"},
			{"2026-03-29T19:59:00Z", true, "21:59 CEST"},
			{"2026-03-29T20:00:00Z", false, "22:00 CEST"},
		}},
		{name: "berlin repeated hour", start: "02:00", end: "03:00", tz: "Europe/Berlin", rows: []row{
			{"2026-10-24T23:59:00Z", false, "01:59 CEST"},
			{"2026-10-25T00:00:00Z", true, "02:00 CEST"},
			{"2026-10-25T00:59:00Z", true, "02:59 CEST"},
			{"2026-10-25T01:00:00Z", true, "02:00 CET (again)"},
			{"2026-10-25T01:59:00Z", true, "02:59 CET"},
			{"2026-10-25T02:00:00Z", false, "03:00 CET"},
		}},
		{name: "lord howe half-hour spring forward", start: "02:00", end: "03:00", tz: "Australia/Lord_Howe", rows: []row{
			{"2026-10-03T15:29:00Z", false, "01:59 +1030"},
			{"2026-10-03T15:30:00Z", true, "02:30 +11: 02:00-02:29 did not exist"},
			{"2026-10-03T15:59:00Z", true, "02:59 +11"},
			{"2026-10-03T16:00:00Z", false, "03:00 +11"},
		}},
		{name: "lord howe skipped half hour never opens", start: "02:00", end: "02:30", tz: "Australia/Lord_Howe", rows: []row{
			{"2026-10-03T15:29:00Z", false, "01:59 +1030"},
			{"2026-10-03T15:30:00Z", false, "02:30 +11"},
		}},
		{name: "lord howe repeated half hour", start: "01:30", end: "02:00", tz: "Australia/Lord_Howe", rows: []row{
			{"2026-04-04T14:29:00Z", false, "01:29 +11"},
			{"2026-04-04T14:30:00Z", true, "01:30 +11"},
			{"2026-04-04T14:59:00Z", true, "01:59 +11"},
			{"2026-04-04T15:00:00Z", true, "01:30 +1030 (again)"},
			{"2026-04-04T15:29:00Z", true, "01:59 +1030"},
			{"2026-04-04T15:30:00Z", false, "02:00 +1030"},
		}},
		{name: "lord howe summer and winter offsets", start: "09:00", end: "17:00", tz: "Australia/Lord_Howe", rows: []row{
			{"2026-01-14T21:59:00Z", false, "08:59 +11"},
			{"2026-01-14T22:00:00Z", true, "09:00 +11"},
			{"2026-07-14T22:29:00Z", false, "08:59 +1030"},
			{"2026-07-14T22:30:00Z", true, "09:00 +1030"},
		}},
		{name: "kathmandu quarter-hour offset", start: "08:00", end: "22:00", tz: "Asia/Kathmandu", rows: []row{
			{"2026-06-01T02:14:00Z", false, "07:59 +0545"},
			{"2026-06-01T02:15:00Z", true, "08:00 +0545"},
			{"2026-06-01T16:14:00Z", true, "21:59 +0545"},
			{"2026-06-01T16:15:00Z", false, "22:00 +0545"},
		}},
		{name: "kathmandu across midnight", start: "23:00", end: "01:00", tz: "Asia/Kathmandu", rows: []row{
			{"2026-06-01T17:14:00Z", false, "22:59"},
			{"2026-06-01T17:15:00Z", true, "23:00"},
			{"2026-06-01T19:14:00Z", true, "00:59"},
			{"2026-06-01T19:15:00Z", false, "01:00"},
		}},
		{name: "sao paulo midnight gap (2018)", start: "00:00", end: "01:00", tz: "America/Sao_Paulo", rows: []row{
			{"2018-11-04T02:59:00Z", false, "23:59 -03 Nov 3"},
			{"2018-11-04T03:00:00Z", false, "01:00 -02: midnight did not exist"},
			{"2018-11-05T02:00:00Z", true, "00:00 -02 Nov 5"},
		}},
		{name: "cairo midnight gap (2023)", start: "23:00", end: "00:30", tz: "Africa/Cairo", rows: []row{
			{"2023-04-27T20:59:00Z", false, "22:59 EET"},
			{"2023-04-27T21:00:00Z", true, "23:00 EET"},
			{"2023-04-27T21:59:00Z", true, "23:59 EET"},
			{"2023-04-27T22:00:00Z", false, "01:00 EEST: 00:00-00:59 did not exist"},
		}},
		{name: "user zone UTC until 24:00", start: "08:00", end: "24:00", tz: "user", userTZ: "UTC", rows: []row{
			{"2026-05-01T07:00:00Z", false, "07:00"},
			{"2026-05-01T08:00:00Z", true, "08:00"},
			{"2026-05-01T23:59:00Z", true, "23:59"},
			{"2026-05-02T00:00:00Z", false, "00:00"},
		}},
		{name: "overnight", start: "22:00", end: "06:00", tz: "UTC", rows: []row{
			{"2026-05-01T23:00:00Z", true, "23:00"},
			{"2026-05-01T05:30:00Z", true, "05:30"},
			{"2026-05-01T12:00:00Z", false, "12:00"},
		}},
		{name: "whole day", start: "00:00", end: "24:00", tz: "UTC", rows: []row{
			{"2026-05-01T00:00:00Z", true, "00:00"},
			{"2026-05-01T23:59:59Z", true, "23:59"},
		}},
		{name: "start equals end is never active", start: "09:00", end: "09:00", tz: "UTC", rows: []row{
			{"2026-05-01T09:00:00Z", false, "09:00"},
			{"2026-05-01T15:00:00Z", false, "15:00"},
		}},
		{name: "invalid start fails open", start: "bad", end: "09:00", tz: "UTC", rows: []row{{"2026-05-01T15:00:00Z", true, ""}}},
		{name: "end 24:30 fails open", start: "08:00", end: "24:30", tz: "UTC", rows: []row{{"2026-05-01T03:00:00Z", true, ""}}},
		{name: "start 24:00 fails open", start: "24:00", end: "08:00", tz: "UTC", rows: []row{{"2026-05-01T12:00:00Z", true, ""}}},
		{name: "single-digit hour fails open", start: "8:00", end: "09:00", tz: "UTC", rows: []row{{"2026-05-01T12:00:00Z", true, ""}}},
		{name: "unknown zone falls back to the user zone", start: "09:00", end: "17:00", tz: "Mars/Olympus", userTZ: "America/New_York", rows: []row{
			{"2026-01-15T15:00:00Z", true, "10:00 EST"},
			{"2026-01-15T23:30:00Z", false, "18:30 EST"},
		}},
		{name: "invalid user zone falls back to host", start: "09:00", end: "17:00", tz: "user", userTZ: "Nowhere/Else", hostBerlin: true, rows: []row{
			{"2026-01-15T08:00:00Z", true, "09:00 CET"},
			{"2026-01-15T07:59:00Z", false, "08:59 CET"},
		}},
		{name: "local means host", start: "09:00", end: "17:00", tz: "local", userTZ: "Asia/Kathmandu", hostBerlin: true, rows: []row{
			{"2026-01-15T08:00:00Z", true, "09:00 CET"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := time.UTC
			if tc.hostBerlin {
				host, _ = time.LoadLocation("Europe/Berlin")
			}
			ah := &ActiveHours{Start: tc.start, End: tc.end, Timezone: tc.tz}
			for _, r := range tc.rows {
				if got := Within(ah, tc.userTZ, host, utc(r.at)); got != r.want {
					t.Errorf("%s (%s): Within = %v, want %v", r.at, r.note, got, r.want)
				}
			}
		})
	}
}

func TestWithinNoActiveHours(t *testing.T) {
	if !Within(nil, "", time.UTC, time.Now()) {
		t.Fatal("no active hours must mean always active")
	}
}

var clockPattern = regexp.MustCompile(`^(?:([01]\d|2[0-3]):([0-5]\d)|24:00)$`)

// FuzzParseClock checks ParseClock against upstream's exact pattern.
func FuzzParseClock(f *testing.F) {
	for _, s := range []string{"00:00", "23:59", "24:00", "24:01", "8:00", "08:60", "12:3", "ab:cd", "", "19:5９"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, end bool) {
		m, ok := ParseClock(s, end)
		want := clockPattern.MatchString(s) && (end || s != "24:00")
		if ok != want {
			t.Fatalf("ParseClock(%q, %v) ok = %v, want %v", s, end, ok, want)
		}
		if !ok {
			return
		}
		if m < 0 || m > 1440 || (m == 1440) != (s == "24:00") {
			t.Fatalf("ParseClock(%q) = %d", s, m)
		}
		if back := fmt.Sprintf("%02d:%02d", m/60, m%60); back != s {
			t.Fatalf("ParseClock(%q) = %d, which reads back as %q", s, m, back)
		}
	})
}
