package main

import (
	"strings"
	"unicode/utf8"
)

// The CLI prints text that came from outside schedd: idempotency keys, reasons, job
// names, errors of sinks and commands, the gateway's STATUS= text and its output. Written
// to a terminal as it is, such text could move the cursor, clear the screen or set the
// window title (ESC ] 0 ; ... BEL). Every table and plain-text printer passes it through
// safe (one cell, one value) or safeText (a block of lines); --json prints the JSON as it
// is.

// safe returns s with every control character written as a visible escape: C0 controls
// (tab and newline too, which would break a table's columns and rows), DEL, C1 controls,
// the bidirectional overrides and isolates, and bytes that are not UTF-8. Ordinary
// Unicode is kept.
func safe(s string) string { return escapeControls(s, false) }

// safeText is safe for a block of lines (a payload, a task's output, a line of the
// gateway's output): it keeps newlines, tabs and CR LF line ends.
func safeText(s string) string { return escapeControls(s, true) }

func escapeControls(s string, lines bool) string {
	i := 0
	for i < len(s) {
		n, esc := mustEscape(s[i:], lines)
		if esc {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, _ := utf8.DecodeRuneInString(s[i:])
		n, esc := mustEscape(s[i:], lines)
		switch {
		case !esc:
			b.WriteString(s[i : i+n])
		case r == utf8.RuneError:
			writeHex(&b, `\x`, uint32(s[i]), 2)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			writeHex(&b, `\x`, uint32(r), 2)
		default:
			writeHex(&b, `\u`, uint32(r), 4)
		}
		i += n
	}
	return b.String()
}

// mustEscape reports how long the first rune of s is, and whether it must not reach a
// terminal as it is.
func mustEscape(s string, lines bool) (int, bool) {
	r, n := utf8.DecodeRuneInString(s)
	switch {
	case r == utf8.RuneError && n == 1:
		return n, true
	case lines && (r == '\n' || r == '\t' || r == '\r' && strings.HasPrefix(s[1:], "\n")):
		return n, false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return n, true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return n, true
	}
	return n, false
}

func writeHex(b *strings.Builder, prefix string, v uint32, digits int) {
	const hex = "0123456789abcdef"
	b.WriteString(prefix)
	for d := digits - 1; d >= 0; d-- {
		b.WriteByte(hex[(v>>(4*d))&0xf])
	}
}
