package heartbeat

import (
	"strings"
	"time"

	_ "time/tzdata" // IANA zones resolve in minimal containers too
)

// ActiveHours limits heartbeats to a daily wall-clock window [Start, End).
type ActiveHours struct {
	Start    string // "HH:MM", 00:00-23:59, inclusive
	End      string // "HH:MM" or "24:00", exclusive
	Timezone string // "user" (default), "local" or an IANA zone
}

// ParseClock reads "HH:MM" (00:00-23:59) or, when end is true, also "24:00", and returns
// the minute of the day (24:00 is 1440). It matches ^(?:([01]\d|2[0-3]):([0-5]\d)|24:00)$.
func ParseClock(s string, end bool) (minute int, ok bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, false
	}
	if s == "24:00" {
		return 1440, end
	}
	h1, h2, m1, m2 := s[0], s[1], s[3], s[4]
	if !isDigit(h1) || !isDigit(h2) || !isDigit(m1) || !isDigit(m2) || m1 > '5' {
		return 0, false
	}
	h := int(h1-'0')*10 + int(h2-'0')
	if h > 23 {
		return 0, false
	}
	return h*60 + int(m1-'0')*10 + int(m2-'0'), true
}

// ResolveLocation picks the zone active hours are read in: "" or "user" means userTZ when
// it names a zone, else host; "local" means host; any other name is used when it is a
// known IANA zone, else it falls back to "user". host nil means UTC.
func ResolveLocation(tz, userTZ string, host *time.Location) *time.Location {
	if host == nil {
		host = time.UTC
	}
	tz = strings.TrimSpace(tz)
	switch tz {
	case "local":
		return host
	case "", "user":
	default:
		if loc, ok := loadZone(tz); ok {
			return loc
		}
	}
	if loc, ok := loadZone(strings.TrimSpace(userTZ)); ok {
		return loc
	}
	return host
}

func loadZone(name string) (*time.Location, bool) {
	if name == "" || name == "Local" {
		return nil, false
	}
	loc, err := time.LoadLocation(name)
	return loc, err == nil
}

type windowMode uint8

const (
	windowAlways windowMode = iota
	windowNever
	windowRange
)

// Window is active hours resolved once: minutes of the day and a location. Its zero value
// is always active.
type Window struct {
	mode       windowMode
	start, end int
	loc        *time.Location
}

// NewWindow resolves ah. nil, or an invalid start or end, gives an always-active window
// (fail open); start == end gives a window that is never active.
func NewWindow(ah *ActiveHours, userTZ string, host *time.Location) Window {
	if ah == nil {
		return Window{}
	}
	start, okStart := ParseClock(strings.TrimSpace(ah.Start), false)
	end, okEnd := ParseClock(strings.TrimSpace(ah.End), true)
	if !okStart || !okEnd {
		return Window{}
	}
	if start == end {
		return Window{mode: windowNever}
	}
	return Window{mode: windowRange, start: start, end: end, loc: ResolveLocation(ah.Timezone, userTZ, host)}
}

// Valid reports whether ah parses; false means NewWindow fails open.
func (ah *ActiveHours) Valid() bool {
	if ah == nil {
		return true
	}
	_, okStart := ParseClock(strings.TrimSpace(ah.Start), false)
	_, okEnd := ParseClock(strings.TrimSpace(ah.End), true)
	return okStart && okEnd
}

// Within reports whether t falls inside the window, at minute granularity in the window's
// zone. A window whose end is not after its start crosses midnight.
func (w Window) Within(t time.Time) bool {
	switch w.mode {
	case windowAlways:
		return true
	case windowNever:
		return false
	}
	lt := t.In(w.loc)
	cur := lt.Hour()*60 + lt.Minute()
	if w.end > w.start {
		return w.start <= cur && cur < w.end
	}
	return cur >= w.start || cur < w.end
}

// Within reports whether t is inside ah, resolving its zone as NewWindow does. It is pure:
// the result depends only on its arguments.
func Within(ah *ActiveHours, userTZ string, host *time.Location, t time.Time) bool {
	return NewWindow(ah, userTZ, host).Within(t)
}
