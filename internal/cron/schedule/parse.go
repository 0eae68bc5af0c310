package schedule

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The year range of OCPS 1.4; a year field's * and steps expand from minYear.
const (
	minYear = 1970
	maxYear = 2199
)

// ParseError says what is wrong with a cron expression and where.
type ParseError struct {
	Field string // "minute", "day-of-week", ...; "" when the expression as a whole is wrong
	Index int    // the field's number in the expression, from 1; 0 with Field ""
	Col   int    // the byte column of Text in the expression, from 1
	Text  string // the offending text
	Msg   string // what is wrong with it
}

func (e *ParseError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("cron expression %q: %s", e.Text, e.Msg)
	}
	return fmt.Sprintf("%s %q: %s (field %d, column %d)", e.Field, e.Text, e.Msg, e.Index, e.Col)
}

// field describes one field of a cron expression.
type field struct {
	name     string
	min, max int
	base     int      // the value of bit 0 in the field's bit set
	names    []string // names[i] stands for the value i+nameBase
	nameBase int
}

var (
	secondField = &field{name: "second", max: 59}
	minuteField = &field{name: "minute", max: 59}
	hourField   = &field{name: "hour", max: 23}
	domField    = &field{name: "day-of-month", min: 1, max: 31}
	monthField  = &field{name: "month", min: 1, max: 12, nameBase: 1,
		names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}}
	dowField = &field{name: "day-of-week", max: 7,
		names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}}
	yearField = &field{name: "year", min: minYear, max: maxYear, base: minYear}
)

var nicknames = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// Parse parses a cron expression (OCPS 1.4, see the package doc) for the zone
// loc; a nil loc is the host's zone. Errors are *ParseError values naming the
// field and the column.
func Parse(expr string, loc *time.Location) (*Cron, error) {
	if loc == nil {
		loc = time.Local
	}
	c, err := parseFields(expr)
	if err != nil {
		return nil, err
	}
	c.expr, c.loc = expr, loc
	return c, nil
}

// token is a run of characters between spaces or tabs, and its column.
type token struct {
	text string
	col  int
}

func splitFields(expr string) []token {
	var toks []token
	start := -1
	for i := 0; i <= len(expr); i++ {
		if i == len(expr) || expr[i] == ' ' || expr[i] == '\t' {
			if start >= 0 {
				toks = append(toks, token{expr[start:i], start + 1})
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return toks
}

func parseFields(expr string) (*Cron, error) {
	toks := splitFields(expr)
	whole := func(msg string, args ...any) error {
		return &ParseError{Col: 1, Text: expr, Msg: fmt.Sprintf(msg, args...)}
	}
	for i, r := range expr {
		if r != ' ' && r != '\t' && (r <= ' ' || r > '~') {
			return nil, &ParseError{Col: i + 1, Text: expr, Msg: fmt.Sprintf("unexpected character %q at column %d", r, i+1)}
		}
	}
	switch {
	case len(toks) == 0:
		return nil, whole("empty")
	case len(toks) == 1 && strings.HasPrefix(toks[0].text, "@"):
		name := toks[0].text
		if pattern, ok := nicknames[name]; ok {
			return parseFields(pattern)
		}
		if name == "@reboot" {
			return nil, whole("@reboot is not supported: a schedd cron job needs a time schedule")
		}
		if _, ok := nicknames[strings.ToLower(name)]; ok {
			return nil, whole("nicknames are lower-case: %s", strings.ToLower(name))
		}
		return nil, whole("unknown nickname %s, want @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly", name)
	case strings.HasPrefix(toks[0].text, "@"):
		return nil, whole("a nickname stands alone")
	case strings.Contains(toks[0].text, "="):
		return nil, whole("a %s prefix is not supported: set the job's timezone instead", toks[0].text)
	}
	// The fields from second to year: 5 written fields leave second 0 and
	// every year, 6 leave every year.
	texts := [7]token{{text: "0"}, 6: {text: "*"}}
	first := 0
	switch len(toks) {
	case 5:
		first = 1
	case 6, 7:
	default:
		return nil, whole("%d fields, want 5 (minute hour day-of-month month day-of-week), 6 (second first) or 7 (second first, year last)", len(toks))
	}
	copy(texts[first:], toks)
	c := &Cron{}
	var sets [7]bitset
	for i, f := range []*field{secondField, minuteField, hourField, domField, monthField, dowField, yearField} {
		ft := fieldText{f: f, token: texts[i]}
		if n := i - first + 1; n >= 1 && n <= len(toks) {
			ft.index = n
		}
		var err error
		switch f {
		case domField:
			err = ft.parseDom(c, &sets[i])
		case dowField:
			err = ft.parseDow(c, &sets[i])
		default:
			err = ft.parseList(&sets[i], nil)
		}
		if err != nil {
			var pe *ParseError
			if f == dowField && len(toks) == 6 && len(ft.text) == 4 && errors.As(err, &pe) {
				pe.Msg += "; 6 fields are read second first, a year needs all 7"
			}
			return nil, err
		}
	}
	c.second, c.minute, c.hour = sets[0][0], sets[1][0], sets[2][0]
	c.dom, c.month, c.years = uint32(sets[3][0]), uint16(sets[4][0]), sets[6]
	c.dow = uint8(sets[5][0]&0x7f | sets[5][0]>>7&1) // 7 is Sunday too
	c.fixedHour = !strings.ContainsAny(texts[2].text, "*/")
	return c, nil
}

// fieldText is one field as written, for parsing and error messages.
type fieldText struct {
	f *field
	token
	index int
}

// errAt reports text found at byte offset off of the field.
func (ft fieldText) errAt(text string, off int, msg string, args ...any) error {
	return &ParseError{Field: ft.f.name, Index: ft.index, Col: ft.col + off, Text: text, Msg: fmt.Sprintf(msg, args...)}
}

// parseList parses a comma-separated list of values, ranges and steps into
// set. special, when set, may claim an item first.
func (ft fieldText) parseList(set *bitset, special func(item string, off int) (bool, error)) error {
	off := 0
	for item := range strings.SplitSeq(ft.text, ",") {
		if item == "" {
			return ft.errAt(ft.text, 0, "empty list item")
		}
		claimed := false
		if special != nil {
			var err error
			if claimed, err = special(item, off); err != nil {
				return err
			}
		}
		if !claimed {
			lo, hi, step, err := ft.parseRange(item, off)
			if err != nil {
				return err
			}
			for v := lo; v <= hi; v += step {
				set.add(v - ft.f.base)
			}
		}
		off += len(item) + 1
	}
	return nil
}

// parseRange parses *, N, A-B, */S or A-B/S found at offset off.
func (ft fieldText) parseRange(item string, off int) (lo, hi, step int, err error) {
	f := ft.f
	body, stepText, hasStep := strings.Cut(item, "/")
	step = 1
	if hasStep {
		n, ok := number(stepText)
		if !ok {
			return 0, 0, 0, ft.errAt(item, off, "the step %q is not a number", stepText)
		}
		if n < 1 {
			return 0, 0, 0, ft.errAt(item, off, "the step must be 1 or more")
		}
		step = n
	}
	if body == "*" {
		return f.min, f.max, step, nil
	}
	if body == "" && hasStep {
		return 0, 0, 0, ft.errAt(item, off, "a step needs * or a range before it: write */%s", stepText)
	}
	a, b, isRange := strings.Cut(body, "-")
	if lo, err = ft.value(a, off); err != nil {
		return 0, 0, 0, err
	}
	if !isRange {
		if hasStep {
			return 0, 0, 0, ft.errAt(item, off, "a step needs * or a range before it: write */%s or %s-%d/%s", stepText, a, f.max, stepText)
		}
		return lo, lo, 1, nil
	}
	if hi, err = ft.value(b, off+len(a)+1); err != nil {
		return 0, 0, 0, err
	}
	if f == dowField && hi == 0 && lo > 0 && strings.EqualFold(b, "SUN") {
		hi = 7 // FRI-SUN
	}
	if lo > hi {
		return 0, 0, 0, ft.errAt(body, off, "the range runs backwards (%d > %d); ranges do not wrap around", lo, hi)
	}
	return lo, hi, step, nil
}

// value parses a number or a name found at offset off.
func (ft fieldText) value(s string, off int) (int, error) {
	f := ft.f
	if n, ok := number(s); ok {
		if n < f.min || n > f.max {
			return 0, ft.errAt(s, off, "out of range %d-%d", f.min, f.max)
		}
		return n, nil
	}
	if s == "" {
		return 0, ft.errAt(ft.text, 0, "a value is missing")
	}
	if isLetters(s) && f.names != nil {
		if i := slices.Index(f.names, strings.ToUpper(s)); i >= 0 {
			return i + f.nameBase, nil
		}
		return 0, ft.errAt(s, off, "unknown name, want %s-%s or a number", f.names[0], f.names[len(f.names)-1])
	}
	return 0, ft.errAt(s, off, "%s", ft.whatIsWrong(s))
}

// whatIsWrong explains a value that is neither a number nor a name.
func (ft fieldText) whatIsWrong(s string) string {
	dayField := ft.f == domField || ft.f == dowField
	for _, r := range s {
		switch {
		case r == '+':
			return "+ is allowed only as the first character of day-of-week"
		case r == '?':
			return "? is allowed only as the whole day-of-month or day-of-week field"
		case r == 'L' || r == 'W' || r == '#':
			switch {
			case !dayField:
				return fmt.Sprintf("%c is allowed only in day-of-month and day-of-week", r)
			case r == 'W' && ft.f == dowField:
				return "W is allowed only in day-of-month"
			case r == '#' && ft.f == domField:
				return "# is allowed only in day-of-week"
			}
			return fmt.Sprintf("misplaced %c", r)
		case (r == 'l' || r == 'w') && dayField:
			return "unknown value (L and W are upper-case)"
		case r == '*':
			return "* stands alone or before a step (*/S)"
		case r == '-' || r == '/':
			return fmt.Sprintf("misplaced %c", r)
		case isLetters(string(r)):
			if ft.f.names == nil {
				return "names are allowed only in month and day-of-week"
			}
		case r < '0' || r > '9':
			return fmt.Sprintf("unexpected character %q", r)
		}
	}
	return "not a number"
}

// parseDom parses day-of-month: the list syntax plus L, LW, NW and ?.
func (ft fieldText) parseDom(c *Cron, set *bitset) error {
	if ft.text == "*" || ft.text == "?" {
		c.domStar = true
		set.addRange(1, 31)
		return nil
	}
	return ft.parseList(set, func(item string, off int) (bool, error) {
		switch {
		case item == "?":
			return false, ft.errAt(item, off, "? is allowed only as the whole field")
		case item == "L":
			c.domLast = true
			return true, nil
		case strings.HasSuffix(item, "W"):
			if item != ft.text || strings.ContainsAny(item, "-/*") {
				return false, ft.errAt(ft.text, 0, "W takes a single day, not a list or a range")
			}
			if item == "LW" {
				c.domNearest = -1
				return true, nil
			}
			n, err := ft.value(item[:len(item)-1], off)
			c.domNearest = n
			return true, err
		case strings.HasPrefix(item, "L"):
			return false, ft.errAt(item, off, "L stands alone (the last day) or as LW (the last weekday)")
		}
		return false, nil
	})
}

// parseDow parses day-of-week: a leading +, the list syntax, DL, D#N, D#L and ?.
func (ft fieldText) parseDow(c *Cron, set *bitset) error {
	if rest, ok := strings.CutPrefix(ft.text, "+"); ok {
		c.both = true
		ft.text, ft.col = rest, ft.col+1
		if rest == "" {
			return ft.errAt("+", -1, "+ needs days after it")
		}
	}
	if ft.text == "*" || ft.text == "?" {
		c.dowStar = true
		set.addRange(0, 6)
		return nil
	}
	return ft.parseList(set, func(item string, off int) (bool, error) {
		day, nth, hasNth := strings.Cut(item, "#")
		last := nth == "L"
		if !hasNth && len(item) > 1 && strings.HasSuffix(item, "L") {
			day, last = item[:len(item)-1], true
		}
		switch {
		case item == "?":
			return false, ft.errAt(item, off, "? is allowed only as the whole field")
		case item == "L":
			return false, ft.errAt(item, off, "L needs a day before it here: 5L or FRI#L is the last Friday")
		case !hasNth && !last:
			return false, nil
		case strings.ContainsAny(day, "-/*,"):
			return false, ft.errAt(item, off, "# and L take a single day, not a range")
		}
		d, err := ft.value(day, off)
		if err != nil {
			return false, err
		}
		d %= 7
		if last {
			c.dowLast |= 1 << d
			return true, nil
		}
		n, ok := number(nth)
		if !ok || n < 1 || n > 5 {
			return false, ft.errAt(item, off, "#N wants N from 1 to 5, or L for the last")
		}
		c.dowNth[d] |= 1 << (n - 1)
		return true, nil
	})
}

// number parses a run of decimal digits; a long one is just too large.
func number(s string) (int, bool) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	if len(s) > 6 {
		return math.MaxInt32, true
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func isLetters(s string) bool {
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return false
		}
	}
	return s != ""
}
