package heartbeat

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseEvery(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "5", want: 5 * time.Minute},
		{in: "5m", want: 5 * time.Minute},
		{in: "2h", want: 2 * time.Hour},
		{in: " 30M ", want: 30 * time.Minute},
		{in: "1.5", want: 90 * time.Second},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "2m500ms", want: 2*time.Minute + 500*time.Millisecond},
		{in: "1d", want: 24 * time.Hour},
		{in: "1.5s", want: 1500 * time.Millisecond},
		{in: "0.0004s", want: 0},
		{in: "0.0006s", want: time.Millisecond},
		{in: "1h0.5ms", want: time.Hour + time.Millisecond}, // summed, then rounded
		{in: "0", want: 0},
		{in: "0m", want: 0},
		{in: "250ms", want: 250 * time.Millisecond},
		{in: "", bad: true},
		{in: "oops", bad: true},
		{in: "1h30", bad: true},
		{in: "1h 30m", bad: true},
		{in: "-5m", bad: true},
		{in: "+5m", bad: true},
		{in: ".5m", bad: true},
		{in: "5.m", bad: true},
		{in: "5w", bad: true},
		{in: "m", bad: true},
		{in: "5mm", bad: true},
		{in: "9999999999999999999999d", bad: true},
	} {
		got, err := ParseEvery(tc.in)
		if tc.bad {
			if !errors.Is(err, ErrInvalidEvery) {
				t.Errorf("ParseEvery(%q) = %v, %v; want ErrInvalidEvery", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseEvery(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestResolveInterval(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"": 0, // no interval: the config always gives one

		"0m":   0,
		"oops": 0,
		"5":    5 * time.Minute,
		"2h":   2 * time.Hour,
	} {
		if got, _ := resolveInterval(in); got != want {
			t.Errorf("resolveInterval(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestFormatEvery(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                    "0",
		90 * time.Minute:                     "1h30m",
		2*time.Minute + 500*time.Millisecond: "2m500ms",
		49 * time.Hour:                       "2d1h",
	} {
		if got := FormatEvery(d); got != want {
			t.Errorf("FormatEvery(%v) = %q, want %q", d, got, want)
		}
	}
}

// FuzzParseEvery checks the grammar never panics, never yields a negative interval, and
// that what it accepts survives a FormatEvery round trip (R-INPUT-16; more seeds in
// testdata/fuzz).
func FuzzParseEvery(f *testing.F) {
	for _, s := range []string{"5", "30m", "1h30m", "2m500ms", "1.5", "0", "", "oops", "1h30", "1d2h3m4s5ms", "99999999999d", "0.5ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseEvery(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidEvery) {
				t.Fatalf("ParseEvery(%q): error %v does not wrap ErrInvalidEvery", s, err)
			}
			return
		}
		if d < 0 || d%time.Millisecond != 0 {
			t.Fatalf("ParseEvery(%q) = %v", s, d)
		}
		again, err := ParseEvery(FormatEvery(d))
		if err != nil || again != d {
			t.Fatalf("round trip of %q: %v -> %q -> %v, %v", s, d, FormatEvery(d), again, err)
		}
		if strings.TrimSpace(s) == "" {
			t.Fatalf("blank input %q accepted", s)
		}
	})
}
