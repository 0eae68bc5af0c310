package schedule

import (
	"math"
	"time"
)

// The instants Next searches: from a day before 1970 (its first wall times
// may lie there in zones ahead of UTC) to a day after 2199.
var (
	minInstant = daysFrom(minYear, 1, 1)*86400 - 86400
	maxInstant = daysFrom(maxYear+1, 1, 1)*86400 + 86400
)

// Next returns the first run instant strictly after t, in the expression's
// zone, applying the DST rules of the package doc; false when there is none
// before the end of 2199.
func (c *Cron) Next(t time.Time) (time.Time, bool) {
	// Walk the zone's offset periods: within one, wall times and instants map
	// one to one, so finding the next matching wall time is a plain calendar
	// search. The transition that starts a period matters to a fixed hour
	// only: after a fall back, the overlap's wall times already ran in the
	// period before (skip them here); after a spring forward, the gap's wall
	// times run in this period, read with the offset before the jump.
	u := max(t.Unix()+1, minInstant) // the first whole second after t
	for u < maxInstant {
		z := zoneAt(c.loc, u)
		best, found := int64(0), false
		lo := u
		if c.fixedHour && z.prev > z.off {
			lo = max(lo, z.start+z.prev-z.off) // the overlap's second pass
		}
		if lo < z.end {
			limit := int64(math.MaxInt64)
			if z.end != math.MaxInt64 {
				limit = z.end + z.off
			}
			if w, ok := c.nextWall(lo+z.off, limit); ok {
				best, found = w-z.off, true
			}
		}
		if c.fixedHour && z.prev < z.off {
			// The gap's wall times [start+prev, start+off) run at w-prev.
			from := max(z.start+z.prev, u+z.prev)
			if w, ok := c.nextWall(from, z.start+z.off); ok && (!found || w-z.prev < best) {
				best, found = w-z.prev, true
			}
		}
		if found {
			return time.Unix(best, 0).In(c.loc), true
		}
		u = z.end
	}
	return time.Time{}, false
}

// zone is the offset period of a location holding an instant: its offset,
// the offset of the period before, and its bounds [start, end) in Unix
// seconds (math.MinInt64 and math.MaxInt64 for none).
type zone struct {
	off, prev  int64
	start, end int64
}

func zoneAt(loc *time.Location, u int64) zone {
	t := time.Unix(u, 0).In(loc)
	_, off := t.Zone()
	z := zone{off: int64(off), prev: int64(off), start: math.MinInt64, end: math.MaxInt64}
	start, end := t.ZoneBounds()
	if !start.IsZero() {
		z.start = start.Unix()
		_, prev := start.Add(-time.Second).Zone()
		z.prev = int64(prev)
	}
	if !end.IsZero() {
		z.end = end.Unix()
	}
	// Go reports an end before the instant on the last UTC day of a leap year
	// served by a zone's footer rule (golang/go#81583). That day holds no real
	// transition (the footer's are within the year): end the period at the
	// next UTC midnight, where Go is right again.
	if z.end <= u {
		z.end = (floorDiv(u, 86400) + 1) * 86400
	}
	if z.start > u {
		z.start, z.prev = math.MinInt64, z.off
	}
	return z
}
