package config

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is one problem in a configuration. Line and Column are 1-based; 0 means unknown
// (Column is 0 for YAML syntax errors, whose parser reports only a line; both are 0 for a
// value that did not come from the file).
type Error struct {
	File   string // the config file; "" when unknown
	Line   int
	Column int
	Field  string // dotted path, "gateway.stop.timeout", "heartbeat.agents[0].id"; "" = the file
	Msg    string
}

// Error formats e as "file:line:column: field: message", leaving out what is unknown:
// "schedd.yaml:12:5: gateway.stop.timeout: invalid duration \"3x\" (use Go syntax like 30s or 1m30s)".
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Line > 0 {
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteByte(':')
		if e.Column > 0 {
			b.WriteString(strconv.Itoa(e.Column))
			b.WriteByte(':')
		}
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found, sorted by position. Load, Parse and Validate return it (as
// an error value of this type; match with errors.As(err, new(config.Errors))). errors.As
// also finds the first *Error through Unwrap.
type Errors []*Error

// Error lists the problems, one per line.
func (e Errors) Error() string {
	lines := make([]string, len(e))
	for i, x := range e {
		lines[i] = x.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems as errors.
func (e Errors) Unwrap() []error {
	out := make([]error, len(e))
	for i, x := range e {
		out[i] = x
	}
	return out
}

// sorted returns e sorted by line, then column (stable), without exact duplicates (an
// anchor's problems are found once per alias that uses it).
func (e Errors) sorted() Errors {
	seen := map[Error]bool{}
	var out Errors
	for _, x := range e {
		if !seen[*x] {
			seen[*x] = true
			out = append(out, x)
		}
	}
	slices.SortStableFunc(out, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return out
}

// position is where a value sits in the file. text is how many characters after col the
// value's text starts (1 past a quote), or -1 when it does not start on that line (a block
// scalar, an alias): an offset into the text maps to a column only when text >= 0.
type position struct{ line, col, text int }

// positionOf is the position of node n, as written in the file.
func positionOf(n *yaml.Node) position {
	p := position{line: n.Line, col: n.Column}
	switch {
	case n.Kind == yaml.AliasNode, n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		p.text = -1
	case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		p.text = 1
	}
	return p
}

// suggest returns the known key closest to key, or "" when none is close. Case, '-' and '_'
// are ignored first (so "resetAfter" suggests "reset_after"); then an edit distance of at
// most 2 (1 for short keys) is accepted.
func suggest(key string, known []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
	}
	nk := norm(key)
	for _, k := range known {
		if norm(k) == nk {
			return k
		}
	}
	best, bestD := "", 3 // accept distance < bestD
	switch {
	case len(key) <= 2:
		return ""
	case len(key) <= 4:
		bestD = 2
	}
	for _, k := range known {
		if d := editDistance(strings.ToLower(key), k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 20
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// unknownKeyMsg is the message for an unknown key among known.
func unknownKeyMsg(key string, known []string) string {
	if s := suggest(key, known); s != "" {
		return fmt.Sprintf("unknown key (did you mean `%s`?)", s)
	}
	return "unknown key (known keys: " + strings.Join(known, ", ") + ")"
}
