package schedule

import (
	"math/bits"
	"time"
)

// Schedule yields a job's run instants.
type Schedule interface {
	// Next returns the first run instant strictly after t and true, or false
	// when there is none (an at already past, an impossible date such as Feb 30
	// within the search horizon).
	Next(t time.Time) (time.Time, bool)
	// String is the schedule as the config wrote it ("0 7 * * *", "every 30m",
	// "at 2026-...").
	String() string
}

var _ Schedule = (*Cron)(nil)

// Cron is a parsed cron expression bound to a time zone. It does not change
// once parsed, so it is safe for concurrent use.
type Cron struct {
	expr string
	loc  *time.Location

	second, minute, hour uint64   // bit v: the value v matches
	month                uint16   // bits 1-12
	years                bitset   // bit y-minYear
	dom                  uint32   // bits 1-31
	domLast              bool     // L: the last day of the month
	domNearest           int      // NW: the weekday nearest day N; -1 for LW; 0 for none
	dow                  uint8    // bits 0-6, Sunday is 0
	dowNth               [7]uint8 // [d] bit n-1: the n-th weekday d of the month
	dowLast              uint8    // bit d: the last weekday d of the month
	domStar, dowStar     bool     // the field is * or ?
	both                 bool     // +: day-of-month and day-of-week must both match
	fixedHour            bool
}

// String returns the expression as it was parsed.
func (c *Cron) String() string { return c.expr }

// Location is the zone whose wall clock the expression reads.
func (c *Cron) Location() *time.Location { return c.loc }

// FixedHour reports whether the hour field names fixed hours (numbers and
// ranges, no * and no step). Such a job runs once per wall time: shifted by
// the gap when its wall time does not exist, at the first occurrence when it
// happens twice. Otherwise the job runs at every instant whose wall time
// matches (see the package doc).
func (c *Cron) FixedHour() bool { return c.fixedHour }

// nextWall returns the first wall time at or after from that matches the
// fields and lies before limit. Wall times are seconds since 1970-01-01 00:00
// read as a civil date and time, with no zone.
func (c *Cron) nextWall(from, limit int64) (int64, bool) {
	days := floorDiv(from, 86400)
	y, mo, d := civil(days)
	sod := int(from - days*86400)
	h, mi, s := sod/3600, sod/60%60, sod%60
	maskY, maskMo, mask := 0, 0, uint32(0)
	for {
		// Carry overflows upward, as a clock would.
		if s > 59 {
			s, mi = 0, mi+1
		}
		if mi > 59 {
			mi, h = 0, h+1
		}
		if h > 23 {
			h, d = 0, d+1
		}
		if mo > 12 {
			mo, y = 1, y+1
		}
		if d > daysIn(y, mo) {
			d, mo = 1, mo+1
			if mo > 12 {
				mo, y = 1, y+1
			}
		}
		if y > maxYear || wallOf(y, mo, d, h, mi, s) >= limit {
			return 0, false
		}
		if y < minYear || !c.years.has(y-minYear) {
			ny := c.years.next(max(y+1, minYear) - minYear)
			if ny < 0 {
				return 0, false
			}
			y, mo, d, h, mi, s = ny+minYear, 1, 1, 0, 0, 0
			continue
		}
		if m := nextBit(uint64(c.month), mo); m != mo {
			if m < 0 {
				m = 13
			}
			mo, d, h, mi, s = m, 1, 0, 0, 0
			continue
		}
		if maskY != y || maskMo != mo {
			maskY, maskMo, mask = y, mo, c.dayMask(y, mo)
		}
		if nd := nextBit(uint64(mask), d); nd != d {
			if nd < 0 {
				nd = 32
			}
			d, h, mi, s = nd, 0, 0, 0
			continue
		}
		if nh := nextBit(c.hour, h); nh != h {
			if nh < 0 {
				nh = 24
			}
			h, mi, s = nh, 0, 0
			continue
		}
		if nm := nextBit(c.minute, mi); nm != mi {
			if nm < 0 {
				nm = 60
			}
			mi, s = nm, 0
			continue
		}
		if ns := nextBit(c.second, s); ns != s {
			if ns < 0 {
				ns = 60
			}
			s = ns
			continue
		}
		return wallOf(y, mo, d, h, mi, s), true
	}
}

// dayMask returns the days of month mo of year y that match (bit d: day d).
func (c *Cron) dayMask(y, mo int) uint32 {
	n := daysIn(y, mo)
	all := uint32(1)<<(n+1) - 2
	if c.domStar && c.dowStar {
		return all
	}
	first := weekday(daysFrom(y, mo, 1))
	var dom, dow uint32
	if !c.domStar {
		dom = c.dom & all
		if c.domLast {
			dom |= 1 << n
		}
		if c.domNearest != 0 {
			dom |= nearestWeekday(c.domNearest, n, first)
		}
	}
	if !c.dowStar {
		for d := 1; d <= n; d++ {
			wd := (first + d - 1) % 7
			if c.dow&(1<<wd) != 0 || c.dowNth[wd]&(1<<((d-1)/7)) != 0 || c.dowLast&(1<<wd) != 0 && d+7 > n {
				dow |= 1 << d
			}
		}
	}
	switch {
	case c.domStar:
		return dow
	case c.dowStar:
		return dom
	case c.both:
		return dom & dow
	}
	return dom | dow
}

// nearestWeekday is the bit of the Monday-to-Friday day nearest day k (-1:
// the last day) of a month of n days starting on weekday first, without
// leaving the month; 0 when the month has no day k.
func nearestWeekday(k, n, first int) uint32 {
	if k < 0 {
		k = n
	}
	if k > n {
		return 0
	}
	switch (first + k - 1) % 7 {
	case 6: // Saturday: the Friday before, or the Monday after the 1st
		if k == 1 {
			k = 3
		} else {
			k--
		}
	case 0: // Sunday: the Monday after, or the Friday before the last day
		if k == n {
			k -= 2
		} else {
			k++
		}
	}
	return 1 << k
}

// nextBit returns the lowest set bit of mask at or above i, or -1.
func nextBit(mask uint64, i int) int {
	if i > 63 {
		return -1
	}
	if rest := mask >> i; rest != 0 {
		return i + bits.TrailingZeros64(rest)
	}
	return -1
}

// bitset holds the values of a field wider than 64 (the years).
type bitset [4]uint64

func (b *bitset) add(i int) { b[i>>6] |= 1 << (i & 63) }

func (b *bitset) addRange(lo, hi int) {
	for i := lo; i <= hi; i++ {
		b.add(i)
	}
}

func (b *bitset) has(i int) bool { return i >= 0 && i < 256 && b[i>>6]&(1<<(i&63)) != 0 }

// next returns the lowest member at or above i, or -1.
func (b *bitset) next(i int) int {
	for w := i >> 6; w < len(b) && i >= 0; w++ {
		if n := nextBit(b[w], max(i-w*64, 0)); n >= 0 {
			return w*64 + n
		}
	}
	return -1
}
