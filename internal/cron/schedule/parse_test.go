package schedule

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// runs lists the next n run instants after from, formatted in the schedule's
// zone; "none" ends a list that ran out.
func runs(s Schedule, from time.Time, n int) []string {
	var out []string
	for range n {
		next, ok := s.Next(from)
		if !ok {
			return append(out, "none")
		}
		out = append(out, next.Format(time.RFC3339))
		from = next
	}
	return out
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestParseOCPS walks through the features of OCPS 1.0-1.4, with the
// examples the specification gives, in UTC (no DST here).
func TestParseOCPS(t *testing.T) {
	for _, tc := range []struct {
		expr, from string
		want       []string
	}{
		// 1.0: lists, ranges, steps, names, Sunday as 0 and 7, OR of the day fields.
		{"5-59/15 * * * *", "2026-01-01T00:00:00Z", []string{"2026-01-01T00:05:00Z", "2026-01-01T00:20:00Z", "2026-01-01T00:35:00Z", "2026-01-01T00:50:00Z", "2026-01-01T01:05:00Z"}},
		{"0 12 1 * MON", "2026-01-01T00:00:00Z", []string{"2026-01-01T12:00:00Z", "2026-01-05T12:00:00Z", "2026-01-12T12:00:00Z", "2026-01-19T12:00:00Z", "2026-01-26T12:00:00Z", "2026-02-01T12:00:00Z", "2026-02-02T12:00:00Z"}},
		{"0 0 * JAN-mar sun", "2026-03-25T00:00:00Z", []string{"2026-03-29T00:00:00Z", "2027-01-03T00:00:00Z"}},
		{"0 0 * * 7", "2026-01-01T00:00:00Z", []string{"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"}},
		{"0 0 * * FRI-SUN", "2026-01-01T00:00:00Z", []string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-09T00:00:00Z"}},
		{"0 0 */10 * MON", "2026-01-01T00:00:00Z", []string{"2026-01-05T00:00:00Z", "2026-01-11T00:00:00Z", "2026-01-12T00:00:00Z", "2026-01-19T00:00:00Z", "2026-01-21T00:00:00Z"}},
		{"0 0 31 * *", "2026-01-31T12:00:00Z", []string{"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z"}},
		{"0 0 29 2 *", "2026-01-01T00:00:00Z", []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"0 0 30 2 *", "2026-01-01T00:00:00Z", []string{"none"}},
		{"0\t12  * * *\t", "2026-01-01T00:00:00Z", []string{"2026-01-01T12:00:00Z", "2026-01-02T12:00:00Z"}},
		// 1.1: nicknames.
		{"@yearly", "2026-06-01T00:00:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"@annually", "2026-06-01T00:00:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"@monthly", "2026-06-01T00:00:00Z", []string{"2026-07-01T00:00:00Z"}},
		{"@weekly", "2026-06-01T00:00:00Z", []string{"2026-06-07T00:00:00Z"}},
		{"@daily", "2026-06-01T00:00:00Z", []string{"2026-06-02T00:00:00Z"}},
		{"@midnight", "2026-06-01T00:00:00Z", []string{"2026-06-02T00:00:00Z"}},
		{"@hourly", "2026-06-01T10:30:00Z", []string{"2026-06-01T11:00:00Z"}},
		// 1.2: seconds first, years last.
		{"* * * * * *", "2026-01-01T00:00:00.5Z", []string{"2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z", "2026-01-01T00:00:03Z"}},
		{"0 15 10 * * * 2025", "2024-06-01T00:00:00Z", []string{"2025-01-01T10:15:00Z", "2025-01-02T10:15:00Z"}},
		{"0 15 10 * * * 2025", "2025-12-31T11:00:00Z", []string{"none"}},
		{"0 0 12 1 1 * 2025-2030", "2026-06-01T00:00:00Z", []string{"2027-01-01T12:00:00Z", "2028-01-01T12:00:00Z", "2029-01-01T12:00:00Z", "2030-01-01T12:00:00Z", "none"}},
		{"0 0 0 1 1 * */2", "2026-06-01T00:00:00Z", []string{"2028-01-01T00:00:00Z", "2030-01-01T00:00:00Z"}},
		{"0 0 0 1 1 * 1971-2199/2", "2026-06-01T00:00:00Z", []string{"2027-01-01T00:00:00Z", "2029-01-01T00:00:00Z"}},
		{"0 0 0 1 1 * *", "2199-06-01T00:00:00Z", []string{"none"}},
		// 1.3: L, #, W.
		{"0 0 L * *", "2028-01-15T00:00:00Z", []string{"2028-01-31T00:00:00Z", "2028-02-29T00:00:00Z", "2028-03-31T00:00:00Z", "2028-04-30T00:00:00Z"}},
		{"0 0 L 2 *", "2026-01-01T00:00:00Z", []string{"2026-02-28T00:00:00Z", "2027-02-28T00:00:00Z", "2028-02-29T00:00:00Z"}},
		{"0 0 1,L * *", "2026-01-01T00:00:00Z", []string{"2026-01-31T00:00:00Z", "2026-02-01T00:00:00Z", "2026-02-28T00:00:00Z", "2026-03-01T00:00:00Z"}},
		{"0 0 * * 5L", "2026-01-01T00:00:00Z", []string{"2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z", "2026-03-27T00:00:00Z"}},
		{"0 0 * * FRI#L", "2026-01-01T00:00:00Z", []string{"2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z", "2026-03-27T00:00:00Z"}},
		{"0 0 * * 2#3", "2026-01-01T00:00:00Z", []string{"2026-01-20T00:00:00Z", "2026-02-17T00:00:00Z", "2026-03-17T00:00:00Z"}},
		{"0 0 * * MON#1", "2026-01-01T00:00:00Z", []string{"2026-01-05T00:00:00Z", "2026-02-02T00:00:00Z", "2026-03-02T00:00:00Z"}},
		{"0 0 * * 1#5", "2026-01-01T00:00:00Z", []string{"2026-03-30T00:00:00Z", "2026-06-29T00:00:00Z", "2026-08-31T00:00:00Z"}},
		{"0 0 * * MON#1,fri#L", "2026-03-07T00:00:00Z", []string{"2026-03-27T00:00:00Z", "2026-04-06T00:00:00Z", "2026-04-24T00:00:00Z"}},
		// 15W: Sunday the 15th -> Monday, Saturday the 15th -> Friday.
		{"0 12 15W * *", "2026-03-01T00:00:00Z", []string{"2026-03-16T12:00:00Z", "2026-04-15T12:00:00Z", "2026-05-15T12:00:00Z", "2026-06-15T12:00:00Z", "2026-07-15T12:00:00Z", "2026-08-14T12:00:00Z"}},
		// 1W does not leave the month: Saturday the 1st -> Monday the 3rd.
		{"0 12 1W * *", "2026-07-15T00:00:00Z", []string{"2026-08-03T12:00:00Z", "2026-09-01T12:00:00Z", "2026-10-01T12:00:00Z", "2026-11-02T12:00:00Z"}},
		// 31W: no April 31st; Sunday the 31st -> Friday the 29th.
		{"0 0 31W * *", "2026-04-01T00:00:00Z", []string{"2026-05-29T00:00:00Z", "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z"}},
		{"0 12 LW * *", "2026-05-01T00:00:00Z", []string{"2026-05-29T12:00:00Z", "2026-06-30T12:00:00Z", "2026-07-31T12:00:00Z", "2026-08-31T12:00:00Z", "2026-09-30T12:00:00Z", "2026-10-30T12:00:00Z"}},
		// 1.4: + makes the day fields an AND; ? is *.
		{"0 12 1 * +MON", "2026-01-01T00:00:00Z", []string{"2026-06-01T12:00:00Z", "2027-02-01T12:00:00Z", "2027-03-01T12:00:00Z"}},
		{"0 0 13 * +FRI", "2026-01-01T00:00:00Z", []string{"2026-02-13T00:00:00Z", "2026-03-13T00:00:00Z", "2026-11-13T00:00:00Z"}},
		{"0 0 * * +MON", "2026-01-01T00:00:00Z", []string{"2026-01-05T00:00:00Z", "2026-01-12T00:00:00Z"}},
		{"0 0 ? * ?", "2026-01-01T00:00:00Z", []string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"}},
		{"0 0 1 * ?", "2026-01-01T00:00:00Z", []string{"2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"}},
	} {
		c, err := Parse(tc.expr, time.UTC)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.expr, err)
			continue
		}
		if got := runs(c, mustTime(t, tc.from), len(tc.want)); !slices.Equal(got, tc.want) {
			t.Errorf("%q from %s:\n got %v\nwant %v", tc.expr, tc.from, got, tc.want)
		}
		if c.String() != tc.expr {
			t.Errorf("String() = %q, want %q", c.String(), tc.expr)
		}
	}
}

// TestParseErrors checks that every rejected expression names the field, the
// offending text and its column.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		expr, want string
		col        int
	}{
		{"0 7 32 * *", `day-of-month "32": out of range 1-31 (field 3, column 5)`, 5},
		{"60 * * * *", `minute "60": out of range 0-59`, 1},
		{"0 24 * * *", `hour "24": out of range 0-23`, 3},
		{"0 0 * 13 *", `month "13": out of range 1-12`, 7},
		{"0 0 * * 8", `day-of-week "8": out of range 0-7`, 9},
		{"60 0 0 * * *", `second "60": out of range 0-59 (field 1, column 1)`, 1},
		{"0 0 0 * * * 2200", `year "2200": out of range 1970-2199 (field 7`, 13},
		{"0 0 0 * * * 1969", `year "1969": out of range 1970-2199`, 13},
		{"0 0 * * 1 2030", `6 fields are read second first, a year needs all 7`, 11},
		{"0 0 0 * * * 99999999", `year "99999999": out of range 1970-2199`, 13},
		{"*/99999999 * * * *", "", 0},
		{"0 0 1#2 * *", `day-of-month "1#2": # is allowed only in day-of-week`, 5},
		{"0 0 * * 5W", `day-of-week "5W": W is allowed only in day-of-month`, 9},
		{"*/0 * * * *", `minute "*/0": the step must be 1 or more`, 1},
		{"*/x * * * *", `minute "*/x": the step "x" is not a number`, 1},
		{"0/15 * * * *", `minute "0/15": a step needs * or a range before it: write */15 or 0-59/15`, 1},
		{"0 10/10 * * *", `hour "10/10": a step needs * or a range`, 3},
		{"/30 * * * *", `minute "/30": a step needs * or a range`, 1},
		{"5-1 * * * *", `minute "5-1": the range runs backwards`, 1},
		{"0 22-2 * * *", `hour "22-2": the range runs backwards`, 3},
		{"1,,2 * * * *", `minute "1,,2": empty list item`, 1},
		{"1- * * * *", `minute "1-": a value is missing`, 1},
		{"*5 * * * *", `minute "*5": * stands alone`, 1},
		{"x * * * *", `minute "x": names are allowed only in month and day-of-week`, 1},
		{"0 JAN * * *", `hour "JAN": names are allowed only`, 3},
		{"0 0 * * MON-FOO", `day-of-week "FOO": unknown name, want SUN-SAT`, 13},
		{"0 0 * FOO *", `month "FOO": unknown name, want JAN-DEC`, 7},
		{"0 0 * * *", "", 0},
		{"* * * *", `cron expression "* * * *": 4 fields, want 5`, 1},
		{"* * * * * * * *", `8 fields`, 1},
		{"", `cron expression "": empty`, 1},
		{" \t ", `empty`, 1},
		{"0 0\n* * *", `unexpected character '\n' at column 4`, 4},
		{"0 0 * * MÖN", `unexpected character 'Ö' at column 10`, 10},
		{"@Daily", `nicknames are lower-case: @daily`, 1},
		{"@every 5m", `a nickname stands alone`, 1},
		{"@fortnightly", `unknown nickname @fortnightly`, 1},
		{"@reboot", `@reboot is not supported`, 1},
		{"CRON_TZ=UTC 0 0 * * *", `CRON_TZ=UTC prefix is not supported: set the job's timezone`, 1},
		// L, W, #: where they go, and in upper case only.
		{"0 0 l * *", `day-of-month "l": unknown value (L and W are upper-case)`, 5},
		{"0 0 * * 5l", `day-of-week "5l": unknown value (L and W are upper-case)`, 9},
		{"0 0 15w * *", `(L and W are upper-case)`, 5},
		{"0 L * * *", `hour "L": L is allowed only in day-of-month and day-of-week`, 3},
		{"0 0 * 3W *", `month "3W": W is allowed only`, 7},
		{"0 0 1-15W * *", `day-of-month "1-15W": W takes a single day, not a list or a range`, 5},
		{"0 0 1,15W * *", `W takes a single day`, 5},
		{"0 0 W * *", `day-of-month "W": a value is missing`, 5},
		{"0 0 32W * *", `day-of-month "32": out of range 1-31`, 5},
		{"0 0 L-2 * *", `day-of-month "L-2": L stands alone`, 5},
		{"0 0 * * L", `day-of-week "L": L needs a day before it here`, 9},
		{"0 0 * * 1#6", `day-of-week "1#6": #N wants N from 1 to 5`, 9},
		{"0 0 * * 1,2#0", `day-of-week "2#0": #N wants N`, 11},
		{"0 0 * * 1-5#2", `# and L take a single day`, 9},
		{"0 0 * * 1-5L", `# and L take a single day`, 9},
		{"0 0 * * 8#1", `day-of-week "8": out of range 0-7`, 9},
		// + and ?: day-of-week's first character only; the whole day field only.
		{"+0 * * * *", `minute "+0": + is allowed only as the first character of day-of-week`, 1},
		{"0 0 +1 * *", `day-of-month "+1": + is allowed only`, 5},
		{"0 0 * * 1,+2", `day-of-week "+2": + is allowed only`, 11},
		{"0 0 * * +", `day-of-week "+": + needs days after it`, 9},
		{"0 0 * * ++1", `day-of-week "+1": + is allowed only`, 10},
		{"0 ? * * *", `hour "?": ? is allowed only as the whole day-of-month or day-of-week field`, 3},
		{"0 0 ?,1 * *", `day-of-month "?": ? is allowed only as the whole field`, 5},
		{"0 0 * * 1,?", `day-of-week "?": ? is allowed only as the whole field`, 11},
	} {
		_, err := Parse(tc.expr, time.UTC)
		if tc.want == "" {
			if err != nil {
				t.Errorf("Parse(%q): %v", tc.expr, err)
			}
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) = %v, want a *ParseError", tc.expr, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || pe.Col != tc.col {
			t.Errorf("Parse(%q):\n got %v (column %d)\nwant %s (column %d)", tc.expr, err, pe.Col, tc.want, tc.col)
		}
	}
}

func TestFixedHour(t *testing.T) {
	for expr, want := range map[string]bool{
		"30 2 * * *": true, "0 1,13 * * *": true, "0 9-17 * * *": true, "*/15 2 * * *": true,
		"@daily": true, "@weekly": true, "0 0 0 * * *": true,
		"0 * * * *": false, "*/15 * * * *": false, "0 */2 * * *": false, "0 1-23/2 * * *": false,
		"0 1,*/6 * * *": false, "@hourly": false, "* * * * * *": false,
	} {
		c, err := Parse(expr, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		if c.FixedHour() != want {
			t.Errorf("%q: FixedHour() = %v, want %v", expr, c.FixedHour(), want)
		}
	}
}

func TestParseLocation(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	c, err := Parse("0 7 * * *", berlin)
	if err != nil {
		t.Fatal(err)
	}
	if c.Location() != berlin {
		t.Errorf("Location() = %v, want Europe/Berlin", c.Location())
	}
	next, _ := c.Next(mustTime(t, "2026-01-01T00:00:00Z"))
	if got := next.Format(time.RFC3339); got != "2026-01-01T07:00:00+01:00" {
		t.Errorf("next = %s, want 07:00 in Berlin", got)
	}
	if c, _ := Parse("0 7 * * *", nil); c.Location() != time.Local {
		t.Errorf("nil zone: Location() = %v, want Local", c.Location())
	}
}

// FuzzParse: Parse never panics, rejects with a *ParseError pointing into the
// expression, and what it accepts re-parses from String() to the same
// schedule, whose runs move strictly forward and fall on matching wall times.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"0 7 * * *", "*/15 * * * *", "30 2 * * *", "0 12 1 * +MON", "0 0 L * *", "0 0 LW * *",
		"0 12 15W * *", "0 0 * * 5L", "0 0 * * FRI#L", "0 0 * * 2#3", "* * * * * *",
		"0 0 0 1 1 * */2", "@daily", "@hourly", "0 0 ? * ?", "0 0 * jan-MAR sun", "0 0 30 2 *",
		"0 7 32 * *", "0/15 * * * *", "+0 * * * *",
	} {
		f.Add(s)
	}
	zone := mustZone(f, "America/New_York")
	from := []time.Time{
		time.Date(2026, 3, 8, 1, 0, 0, 0, zone),   // before the spring-forward gap
		time.Date(2026, 11, 1, 0, 30, 0, 0, zone), // before the fall-back overlap
		time.Date(2026, 11, 1, 1, 30, 0, 0, zone).Add(time.Hour),
		time.Date(2040, 12, 31, 12, 0, 0, 0, time.UTC),
	}
	f.Fuzz(func(t *testing.T, expr string) {
		c, err := Parse(expr, zone)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Col < 0 || pe.Col > len(expr)+1 || pe.Msg == "" {
				t.Fatalf("Parse(%q): %v (%#v)", expr, err, pe)
			}
			return
		}
		again, err := Parse(c.String(), zone)
		if err != nil {
			t.Fatalf("Parse(String() = %q): %v", c.String(), err)
		}
		for _, t0 := range from {
			a, aok := c.Next(t0)
			b, bok := again.Next(t0)
			if aok != bok || !a.Equal(b) {
				t.Fatalf("%q from %v: %v %v, re-parsed: %v %v", expr, t0, a, aok, b, bok)
			}
			if !aok {
				continue
			}
			if !a.After(t0) {
				t.Fatalf("%q: Next(%v) = %v, not after", expr, t0, a)
			}
			if !c.matchesOrShifted(a) {
				t.Fatalf("%q: Next(%v) = %v, whose wall time does not match", expr, t0, a)
			}
			if n, ok := c.Next(a); ok && !n.After(a) {
				t.Fatalf("%q: Next(%v) = %v, not after", expr, a, n)
			}
		}
	})
}

// matchesOrShifted reports whether the wall time of run matches the fields,
// or, for a fixed hour, is a gap's wall time shifted by the gap.
func (c *Cron) matchesOrShifted(run time.Time) bool {
	u := run.Unix()
	z := zoneAt(c.loc, u)
	if w, ok := c.nextWall(u+z.off, u+z.off+1); ok && w == u+z.off {
		return true
	}
	w, ok := c.nextWall(u+z.prev, u+z.prev+1)
	return ok && c.fixedHour && z.prev < z.off && u-z.start < z.off-z.prev && w == u+z.prev
}
