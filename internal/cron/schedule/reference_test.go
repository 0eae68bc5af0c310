package schedule

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The brute-force reference: random expressions are generated with their
// meaning (refCron), which the reference evaluates without the parser's bit
// sets, walking the wall clock minute by minute (second by second within
// matching minutes) and resolving each matching wall time to instants by
// trying offsets and reading the wall clock back with time.In; it uses
// neither ZoneBounds nor the search of Next.

// refItem is one list item: a value, a range or a step (lo-hi/step), or a
// day-field modifier.
type refItem struct {
	lo, hi, step int
	mod          string // "L", "LW", "W" (day lo) in day-of-month; "L", "#" (day lo, n hi) in day-of-week
}

func (it refItem) has(v int) bool {
	return it.mod == "" && it.lo <= v && v <= it.hi && (v-it.lo)%it.step == 0
}

type refField []refItem

func (f refField) has(v int) bool {
	return slices.ContainsFunc(f, func(it refItem) bool { return it.has(v) })
}

type refCron struct {
	text                                  string
	sec, min, hour, dom, month, dow, year refField
	domStar, dowStar, both, fixed         bool
}

// dayMatches evaluates the day fields for y-m-d, from the OCPS text.
func (r *refCron) dayMatches(y int, m time.Month, d int) bool {
	date := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	last := time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
	wd := int(date.Weekday())
	domOK := slices.ContainsFunc(r.dom, func(it refItem) bool {
		switch it.mod {
		case "L":
			return d == last
		case "LW", "W":
			k := it.lo
			if it.mod == "LW" {
				k = last
			}
			if k > last {
				return false
			}
			switch time.Date(y, m, k, 0, 0, 0, 0, time.UTC).Weekday() {
			case time.Saturday:
				if k == 1 {
					return d == 3
				}
				return d == k-1
			case time.Sunday:
				if k == last {
					return d == k-2
				}
				return d == k+1
			}
			return d == k
		}
		return it.has(d)
	})
	dowOK := slices.ContainsFunc(r.dow, func(it refItem) bool {
		switch it.mod {
		case "L":
			return it.lo%7 == wd && d+7 > last
		case "#":
			return it.lo%7 == wd && (d+6)/7 == it.hi
		}
		return it.has(wd) || wd == 0 && it.has(7)
	})
	switch {
	case r.domStar && r.dowStar:
		return true
	case r.domStar:
		return dowOK
	case r.dowStar:
		return domOK
	case r.both:
		return domOK && dowOK
	}
	return domOK || dowOK
}

// offsetsNear lists the zone's offsets within two days of the day starting
// at the naive wall time day, sampled every 15 minutes.
func offsetsNear(loc *time.Location, day int64) []int64 {
	var offs []int64
	for u := day - 2*86400; u <= day+3*86400; u += 900 {
		_, o := time.Unix(u, 0).In(loc).Zone()
		if !slices.Contains(offs, int64(o)) {
			offs = append(offs, int64(o))
		}
	}
	return offs
}

func wallAt(loc *time.Location, u int64) int64 {
	_, o := time.Unix(u, 0).In(loc).Zone()
	return u + int64(o)
}

// runInstants resolves the matching wall time w to run instants by the rules.
func (r *refCron) runInstants(loc *time.Location, offs []int64, w int64) []int64 {
	var at []int64
	for _, o := range offs {
		if u := w - o; wallAt(loc, u) == w && !slices.Contains(at, u) {
			at = append(at, u)
		}
	}
	slices.Sort(at)
	switch {
	case len(at) > 0 && r.fixed:
		return at[:1]
	case len(at) > 0 || !r.fixed:
		return at
	}
	// A gap: find the jump over w, run at w read with the offset before it.
	for u := w - 15*3600; u < w+15*3600; u += 60 {
		if wallAt(loc, u) > w {
			_, before := time.Unix(u-60, 0).In(loc).Zone()
			return []int64{w - int64(before)}
		}
	}
	panic("no jump over a nonexistent wall time")
}

// next is the reference Next: the first run instant after t within days
// days, or false.
func (r *refCron) next(loc *time.Location, t time.Time, days int) (int64, bool) {
	const margin = 90 * 60 // more than any shift of the zones under test (1h)
	after := t.Unix()      // a whole second u is after t when u > t.Unix()
	start := wallAt(loc, after) - margin
	best, found, stop := int64(0), false, int64(1<<62)
	first := floorDiv(start, 86400)
	for day := first; day < first+int64(days) && day*86400 <= stop; day++ {
		date := time.Unix(day*86400, 0).UTC()
		if !r.year.has(date.Year()) || !r.month.has(int(date.Month())) || !r.dayMatches(date.Year(), date.Month(), date.Day()) {
			continue
		}
		offs := offsetsNear(loc, day*86400)
		for minute := int64(0); minute < 1440; minute++ {
			w := day*86400 + minute*60
			if w+59 < start || !r.hour.has(int(minute/60)) || !r.min.has(int(minute%60)) {
				continue
			}
			for s := int64(0); s < 60 && w+s <= stop; s++ {
				if !r.sec.has(int(s)) {
					continue
				}
				for _, u := range r.runInstants(loc, offs, w+s) {
					if u > after && (!found || u < best) {
						best, found, stop = u, true, w+s+margin
					}
				}
			}
		}
	}
	return best, found
}

// Generators. Values lean towards the hours and minutes that DST moves.

func genValue(t *rapid.T, min, max int, lean []int) int {
	if len(lean) > 0 && rapid.Bool().Draw(t, "lean") {
		return rapid.SampledFrom(lean).Draw(t, "v")
	}
	return rapid.IntRange(min, max).Draw(t, "v")
}

// genPlain draws a list of values, ranges and steps and writes it; names
// (month, day-of-week) are sometimes written as names, in any case.
func genPlain(t *rapid.T, min, max int, names []string, nameBase int, lean []int) (refField, string) {
	name := func(v int, rangeEnd bool) string {
		i := v - nameBase
		if names == nil || i < 0 || i >= len(names) && !(rangeEnd && v == 7) || !rapid.Bool().Draw(t, "name") {
			return fmt.Sprint(v)
		}
		s := names[i%len(names)]
		return rapid.SampledFrom([]string{s, strings.ToLower(s), s[:1] + strings.ToLower(s[1:])}).Draw(t, "case")
	}
	if rapid.IntRange(0, 3).Draw(t, "star") == 0 {
		return refField{{lo: min, hi: max, step: 1}}, "*"
	}
	var f refField
	var texts []string
	for range rapid.IntRange(1, 3).Draw(t, "items") {
		a := genValue(t, min, max, lean)
		b := genValue(t, a, max, nil)
		step := rapid.IntRange(1, max-min+1).Draw(t, "step")
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0:
			f, texts = append(f, refItem{lo: a, hi: a, step: 1}), append(texts, name(a, false))
		case 1:
			end := name(b, a > 0)
			if b == 7 && a == 0 {
				end = "7"
			}
			f, texts = append(f, refItem{lo: a, hi: b, step: 1}), append(texts, name(a, false)+"-"+end)
		case 2:
			f, texts = append(f, refItem{lo: min, hi: max, step: step}), append(texts, fmt.Sprintf("*/%d", step))
		default:
			f, texts = append(f, refItem{lo: a, hi: b, step: step}), append(texts, fmt.Sprintf("%d-%d/%d", a, b, step))
		}
	}
	return f, strings.Join(texts, ",")
}

var genCron = rapid.Custom(func(t *rapid.T) *refCron {
	r := &refCron{sec: refField{{step: 1}}, year: refField{{lo: minYear, hi: maxYear, step: 1}}}
	var texts []string
	seconds := rapid.IntRange(0, 3).Draw(t, "seconds") == 0
	if seconds {
		var s string
		r.sec, s = genPlain(t, 0, 59, nil, 0, []int{0, 30, 59})
		texts = append(texts, s)
	}
	var s string
	r.min, s = genPlain(t, 0, 59, nil, 0, []int{0, 15, 30, 45, 59})
	texts = append(texts, s)
	r.hour, s = genPlain(t, 0, 23, nil, 0, []int{0, 1, 2, 3, 22, 23})
	texts = append(texts, s)
	r.fixed = !strings.ContainsAny(s, "*/")
	texts = append(texts, genDom(t, r))
	if rapid.IntRange(0, 3).Draw(t, "every month") == 0 {
		r.month, s = genPlain(t, 1, 12, monthField.names, 1, []int{3, 4, 9, 10, 11})
	} else {
		r.month, s = refField{{lo: 1, hi: 12, step: 1}}, "*"
	}
	texts = append(texts, s)
	texts = append(texts, genDow(t, r))
	if seconds && rapid.IntRange(0, 5).Draw(t, "years") == 0 {
		a := rapid.IntRange(2015, 2050).Draw(t, "from year")
		r.year, s = refField{{lo: a, hi: a + rapid.IntRange(0, 10).Draw(t, "years"), step: rapid.IntRange(1, 3).Draw(t, "year step")}}, ""
		texts = append(texts, fmt.Sprintf("%d-%d/%d", r.year[0].lo, r.year[0].hi, r.year[0].step))
	}
	r.text = strings.Join(texts, " ")
	return r
})

func genDom(t *rapid.T, r *refCron) string {
	switch rapid.IntRange(0, 7).Draw(t, "dom kind") {
	case 0, 1, 2:
		r.domStar = true
		return rapid.SampledFrom([]string{"*", "*", "?"}).Draw(t, "dom star")
	case 3:
		if rapid.Bool().Draw(t, "LW") {
			r.dom = refField{{mod: "LW"}}
			return "LW"
		}
		d := rapid.IntRange(1, 31).Draw(t, "W day")
		r.dom = refField{{lo: d, mod: "W"}}
		return fmt.Sprintf("%dW", d)
	}
	f, s := genPlain(t, 1, 31, nil, 0, []int{1, 7, 8, 14, 15, 28, 29, 30, 31})
	if s == "*" {
		s = "1-31" // restricted, though it names every day
	}
	if rapid.Bool().Draw(t, "L") {
		f, s = append(f, refItem{mod: "L"}), s+",L"
	}
	r.dom = f
	return s
}

func genDow(t *rapid.T, r *refCron) string {
	prefix := ""
	if rapid.IntRange(0, 3).Draw(t, "both") == 0 {
		r.both, prefix = true, "+"
	}
	if rapid.IntRange(0, 2).Draw(t, "dow star") == 0 {
		r.dowStar = true
		return prefix + rapid.SampledFrom([]string{"*", "?"}).Draw(t, "star")
	}
	f, s := genPlain(t, 0, 7, dowField.names, 0, []int{0, 6, 7})
	if s == "*" {
		s = "0-7"
	}
	texts := []string{s}
	for range rapid.IntRange(0, 2).Draw(t, "modifiers") {
		d := rapid.IntRange(0, 7).Draw(t, "day")
		day := fmt.Sprint(d)
		if d < 7 && rapid.Bool().Draw(t, "named") {
			day = dowField.names[d]
		}
		if n := rapid.IntRange(0, 5).Draw(t, "nth"); n == 0 {
			f = append(f, refItem{lo: d, mod: "L"})
			texts = append(texts, day+rapid.SampledFrom([]string{"L", "#L"}).Draw(t, "last"))
		} else {
			f = append(f, refItem{lo: d, hi: n, mod: "#"})
			texts = append(texts, fmt.Sprintf("%s#%d", day, n))
		}
	}
	r.dow = f
	return prefix + strings.Join(texts, ",")
}

// refZones are the zones under test, with their transitions in the years
// checked (1986 for Kathmandu's move to +05:45).
var refZones = []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "Asia/Kathmandu"}

func transitions(t testing.TB, zone string) []time.Time {
	loc := mustZone(t, zone)
	var out []time.Time
	for at := time.Date(1985, 6, 1, 0, 0, 0, 0, loc); at.Year() < 2046; {
		_, end := at.ZoneBounds()
		if end.IsZero() {
			break
		}
		if _, o1 := end.Add(-time.Second).Zone(); end.Year() == 1986 || end.Year() >= 2018 {
			if _, o2 := end.Zone(); o1 != o2 {
				out = append(out, end)
			}
		}
		at = end.Add(24 * time.Hour)
	}
	return out
}

// TestNextMatchesReferenceP22 compares Next with the brute-force reference
// for random expressions, at random instants around the DST transitions of
// 2018-2045 (and 1986) and anywhere in 2000-2100. Each case draws ten
// expressions and ten instants for each: the 100 cases make the 10⁴ pairs of
// P22 (-short: a tenth).
func TestNextMatchesReferenceP22(t *testing.T) {
	exprs := 10
	if testing.Short() {
		exprs = 1
	}
	near, locs := map[string][]time.Time{}, map[string]*time.Location{}
	for _, zone := range refZones {
		locs[zone] = mustZone(t, zone)
		near[zone] = transitions(t, zone)
		if len(near[zone]) == 0 {
			t.Fatalf("%s: no transitions", zone)
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		for range exprs {
			checkReference(rt, genCron.Draw(rt, "cron"), locs, near)
		}
	})
}

// checkReference compares Next with the reference for r in a random zone at
// ten instants.
func checkReference(rt *rapid.T, r *refCron, locs map[string]*time.Location, near map[string][]time.Time) {
	zone := rapid.SampledFrom(refZones).Draw(rt, "zone")
	loc := locs[zone]
	c, err := Parse(r.text, loc)
	if err != nil {
		rt.Fatalf("Parse(%q): %v", r.text, err)
	}
	if c.FixedHour() != r.fixed {
		rt.Fatalf("%q: FixedHour() = %v, want %v", r.text, c.FixedHour(), r.fixed)
	}
	const days = 5 * 366
	for range 10 {
		var from time.Time
		if rapid.IntRange(0, 4).Draw(rt, "anywhere") == 0 {
			from = time.Unix(rapid.Int64Range(946684800, 4102444800).Draw(rt, "unix"), 0)
		} else {
			tr := rapid.SampledFrom(near[zone]).Draw(rt, "transition")
			from = tr.Add(time.Duration(rapid.Int64Range(-30*3600, 30*3600).Draw(rt, "seconds")) * time.Second)
		}
		from = from.Add(time.Duration(rapid.SampledFrom([]int64{0, 0, 1, 999999999}).Draw(rt, "nanos")))
		got, ok := c.Next(from)
		want, wok := r.next(loc, from, days)
		switch {
		case wok && (!ok || got.Unix() != want || got.Nanosecond() != 0):
			rt.Fatalf("%s %q from %v: Next = %v %v, reference %v", zone, r.text, from.In(loc), got, ok, time.Unix(want, 0).In(loc))
		case !wok && ok && got.Before(from.AddDate(0, 0, days-2)):
			rt.Fatalf("%s %q from %v: Next = %v, reference none within %d days", zone, r.text, from.In(loc), got, days)
		}
	}
}
