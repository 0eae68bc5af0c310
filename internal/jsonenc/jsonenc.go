// Package jsonenc appends JSON values byte for byte as encoding/json writes them, without
// reflection: for the hand encoders of the hot paths (the heartbeat state file and pulses,
// the delivery API's replies, the restart request), each pinned to encoding/json by its
// own tests.
package jsonenc

import (
	"encoding/json"
	"time"
	"unicode/utf8"
)

// AppendString appends s as encoding/json does (HTML characters escaped): plain printable
// ASCII directly, anything else through encoding/json.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// AppendTime appends t as time.Time's MarshalJSON does (the caller checked its year).
func AppendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = AppendRFC3339Nano(b, t)
	return append(b, '"')
}

// AppendRFC3339Nano appends t as t.AppendFormat(b, time.RFC3339Nano) does, by hand for
// UTC times (a heartbeat state file holds three or four per agent, and formatting them
// was a third of writing it).
func AppendRFC3339Nano(b []byte, t time.Time) []byte {
	y, mo, d := t.Date()
	if _, off := t.Zone(); off != 0 || y < 0 || y > 9999 {
		return t.AppendFormat(b, time.RFC3339Nano)
	}
	h, mi, sec := t.Clock()
	b = append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+mo/10), byte('0'+mo%10), '-', byte('0'+d/10), byte('0'+d%10), 'T',
		byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':', byte('0'+sec/10), byte('0'+sec%10))
	if ns := t.Nanosecond(); ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i > 0; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, 'Z')
}
