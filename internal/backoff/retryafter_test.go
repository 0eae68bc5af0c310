package backoff

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 120 * time.Second, true},
		{" 7 ", 7 * time.Second, true},
		{"0", 0, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"Sunday, 01-Mar-26 12:01:00 GMT", time.Minute, true}, // RFC 850
		{"Sun Mar  1 12:00:30 2026", 30 * time.Second, true},  // asctime
		{"99999999999999999999999", maxRetryAfter, true},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"", 0, false},
	} {
		got, ok := ParseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "Wed, 21 Oct 2015 07:28:00 GMT", "", "-1", "1e9", "99999999999999999999"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := ParseRetryAfter(s, now)
		if d < 0 || d > maxRetryAfter {
			t.Fatalf("ParseRetryAfter(%q) = %v out of range", s, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v with ok=false", s, d)
		}
	})
}
