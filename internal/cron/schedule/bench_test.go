package schedule

import (
	"testing"
	"time"
)

// BenchmarkNext measures one Next call: common 5-field cases on an ordinary
// day, the same across a DST transition, and the worst case, a pattern that
// never matches (the search runs to the end of 2199).
func BenchmarkNext(b *testing.B) {
	for _, bc := range []struct{ name, zone, expr, from string }{
		{"daily", "Europe/Berlin", "0 7 * * *", "2026-06-10T12:00:00+02:00"},
		{"quarter-hour", "Europe/Berlin", "*/15 * * * *", "2026-06-10T12:01:00+02:00"},
		{"weekdays", "Europe/Berlin", "30 8 * * MON-FRI", "2026-06-12T09:00:00+02:00"},
		{"dst-gap-fixed", "America/New_York", "30 2 * * *", "2026-03-08T01:59:00-05:00"},
		{"dst-overlap-fixed", "America/New_York", "30 1 * * *", "2026-11-01T01:40:00-04:00"},
		{"dst-overlap-quarter", "America/New_York", "*/15 * * * *", "2026-11-01T01:50:00-04:00"},
		{"dst-lord-howe", "Australia/Lord_Howe", "15 2 * * *", "2026-10-04T01:00:00+10:30"},
		{"never", "Europe/Berlin", "0 0 30 2 *", "2026-06-10T12:00:00+02:00"},
	} {
		c := mustParse(b, bc.expr, mustZone(b, bc.zone))
		from := mustTime(b, bc.from)
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				c.Next(from)
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for b.Loop() {
		if _, err := Parse("0 30 8 1-15W * MON-FRI", time.UTC); err == nil {
			b.Fatal("parsed a W in a range")
		}
		if _, err := Parse("*/15 8-18 * JAN-NOV +MON#1,FRI#L", time.UTC); err != nil {
			b.Fatal(err)
		}
	}
}
