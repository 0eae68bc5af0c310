package schedule

import (
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"time"
)

// Every returns a schedule every d, anchored at origin: it runs at
// origin + k·d for whole k, so restarts do not make it drift. It follows real
// elapsed time, not the wall clock. It panics if d <= 0, as time.NewTicker
// does: config validation rejects such an interval first.
func Every(d time.Duration, origin time.Time) Schedule {
	if d <= 0 {
		panic("schedule.Every: non-positive interval")
	}
	return every{d: d, origin: origin.Round(0)}
}

type every struct {
	d      time.Duration
	origin time.Time
}

// Next returns the first origin + k·d after t; before origin, origin itself.
// It reports false only past the range of time.Duration (292 years from
// origin).
func (e every) Next(t time.Time) (time.Time, bool) {
	t = t.Round(0) // instants, not the monotonic clock
	if t.Before(e.origin) {
		return e.origin, true
	}
	elapsed := t.Sub(e.origin)
	k := elapsed/e.d + 1
	if elapsed == time.Duration(1<<63-1) || k > time.Duration(1<<63-1)/e.d {
		return time.Time{}, false
	}
	return e.origin.Add(k * e.d), true
}

func (e every) String() string { return "every " + shortDuration(e.d) }

// shortDuration writes 30m and 1h30m where time.Duration writes 30m0s and
// 1h30m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// At returns a one-shot schedule at t.
func At(t time.Time) Schedule { return at{t.Round(0)} }

type at struct{ t time.Time }

func (a at) Next(t time.Time) (time.Time, bool) {
	if a.t.After(t) {
		return a.t, true
	}
	return time.Time{}, false
}

func (a at) String() string { return "at " + a.t.Format(time.RFC3339Nano) }

// Offset is a job's stagger: a fixed offset in [0, jitter) derived from its
// name (the first 8 bytes of its SHA-256, modulo jitter), so it is the same
// across restarts and hosts and differs from job to job. It is 0 for
// jitter <= 0.
func Offset(name string, jitter time.Duration) time.Duration {
	if jitter <= 0 {
		return 0
	}
	sum := sha256.Sum256([]byte(name))
	return time.Duration(binary.BigEndian.Uint64(sum[:8]) % uint64(jitter))
}
