package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/schedd/schedd/internal/api"
)

// readBody reads the whole request body, and leaves it for DecodeJSON to read
// again; false after writing the 413 (over control.max_body) or 400 reply.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= 64<<20 {
		buf.Grow(int(n) + 1) // +1: ReadFrom wants room to see the end
	}
	if _, err := buf.ReadFrom(r.Body); err != nil {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			WriteError(w, http.StatusRequestEntityTooLarge, api.CodeTooLarge,
				fmt.Sprintf("request body is over the %d byte limit", mbe.Limit))
		} else {
			WriteError(w, http.StatusBadRequest, api.CodeBadRequest, "read the request body: "+err.Error())
		}
		return nil, false
	}
	body := buf.Bytes()
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
}

// firstByte returns the first byte of b that is not JSON white space (0 if there is none).
func firstByte(b []byte) byte {
	if i := bytes.IndexFunc(b, func(r rune) bool { return !strings.ContainsRune(" \t\r\n", r) }); i >= 0 {
		return b[i]
	}
	return 0
}

// alteredText finds the first thing in the JSON text raw that encoding/json would not
// decode as sent but replace with U+FFFD, in silence: bytes that are not UTF-8, or an
// escaped UTF-16 surrogate without its other half. It returns what it found ("" if
// nothing). raw is valid JSON, so a backslash is always an escape within a string.
func alteredText(raw []byte) string {
	if !utf8.Valid(raw) {
		for i := 0; i < len(raw); {
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n == 1 {
				return fmt.Sprintf("is not valid UTF-8 (the byte 0x%02x)", raw[i])
			}
			i += n
		}
	}
	for i := 0; ; {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 || i+j+6 > len(raw) {
			return ""
		}
		i += j
		if raw[i+1] != 'u' {
			i += 2
			continue
		}
		u := hex4(raw[i+2 : i+6])
		switch {
		case u >= 0xD800 && u < 0xDC00:
			if i+12 <= len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
				if v := hex4(raw[i+8 : i+12]); v >= 0xDC00 && v < 0xE000 {
					i += 12
					continue
				}
			}
			fallthrough
		case u >= 0xDC00 && u < 0xE000:
			return fmt.Sprintf(`holds %s, half of a UTF-16 surrogate pair without the other half: not text`, raw[i:i+6])
		}
		i += 6
	}
}

// hex4 reads four hex digits (-1 if they are not).
func hex4(b []byte) int {
	n := 0
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		n = n<<4 | int(c)
	}
	return n
}

// requestText checks the text of one delivery request, obj (a JSON object that decoded):
// a message naming the field whose text JSON decoding would alter, or "".
func requestText(obj []byte) string {
	what := alteredText(obj)
	if what == "" {
		return ""
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(obj, &fields) == nil {
		// Field names match case-insensitively, as encoding/json matches them.
		for _, name := range []string{"sink", "idempotency_key", "headers", "data", "data_base64", "ttl", "priority"} {
			for k, v := range fields {
				if w := alteredText(v); w != "" && strings.EqualFold(k, name) {
					return textMessage(name, w)
				}
			}
		}
	}
	return "the request " + what + "; JSON text must be UTF-8: send bytes as data_base64 (standard base64)"
}

func textMessage(field, what string) string {
	msg := field + ": " + what
	if field == "data" {
		return msg + "; send bytes that are not UTF-8 text as data_base64 (standard base64), never as data"
	}
	return msg + "; it must be UTF-8 text"
}

// batchText is requestText for each element of the JSON array body (one that decoded):
// the message of the entries whose text JSON decoding would alter, by index; nil when
// there is none.
func batchText(body []byte) map[int]string {
	if alteredText(body) == "" {
		return nil
	}
	var elems []json.RawMessage
	if json.Unmarshal(body, &elems) != nil {
		return nil
	}
	out := map[int]string{}
	for i, e := range elems {
		if msg := requestText(e); msg != "" {
			out[i] = msg
		}
	}
	return out
}
