package daemon

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/schedd/schedd/internal/jsonenc"
)

// The hot request and reply of a producer, POST /v1/deliveries, without reflection: a
// decoder of DeliveryRequest and an encoder of EnqueueReply. Both stand in for
// encoding/json only where they are sure to give its result: the decoder declines what it
// does not handle (and encoding/json decodes it, with its own errors), and the encoder
// hands odd strings to encoding/json. Fuzz and property tests hold them to encoding/json's
// behaviour.

// decodeDeliveryRequest decodes body into req and reports true, or reports false (req then
// undefined) for anything it does not handle: a syntax error, an unknown or misspelled
// field, a field given twice, a null, a string with a \u escape, a control character or
// bytes that are not UTF-8, a priority that is not a plain integer.
func decodeDeliveryRequest(body []byte, req *DeliveryRequest) bool {
	d := reqDecoder{b: body}
	*req = DeliveryRequest{}
	d.space()
	if !d.eat('{') {
		return false
	}
	var seen uint8
	d.space()
	if d.eat('}') {
		return d.end()
	}
	for {
		d.space()
		key, ok := d.rawKey()
		if !ok {
			return false
		}
		d.space()
		if !d.eat(':') {
			return false
		}
		d.space()
		var bit uint8
		switch key {
		case "sink":
			bit = 1
			req.Sink, ok = d.str()
		case "idempotency_key":
			bit = 2
			req.Key, ok = d.str()
		case "data":
			bit = 4
			var s string
			s, ok = d.str()
			req.Data = &s
		case "data_base64":
			bit = 8
			var s string
			s, ok = d.str()
			req.DataBase64 = &s
		case "ttl":
			bit = 16
			req.TTL, ok = d.str()
		case "priority":
			bit = 32
			req.Priority, ok = d.integer()
		case "headers":
			bit = 64
			req.Headers, ok = d.headers()
		default:
			return false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		d.space()
		if d.eat(',') {
			continue
		}
		if d.eat('}') {
			return d.end()
		}
		return false
	}
}

type reqDecoder struct {
	b []byte
	i int
}

func (d *reqDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *reqDecoder) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// end reports whether only white space follows.
func (d *reqDecoder) end() bool {
	d.space()
	return d.i == len(d.b)
}

// rawKey reads an object key made of plain characters (no escape).
func (d *reqDecoder) rawKey() (string, bool) {
	if !d.eat('"') {
		return "", false
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			k := string(d.b[start:d.i])
			d.i++
			return k, true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return "", false
		}
		d.i++
	}
	return "", false
}

// str reads a string value: UTF-8, no control characters, escapes other than \u.
func (d *reqDecoder) str() (string, bool) {
	if !d.eat('"') {
		return "", false
	}
	start := d.i
	ascii := true
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if !ascii && !utf8.Valid(s) {
				return "", false
			}
			return string(s), true
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		d.i++
	}
	return "", false
}

// escaped continues str from the first backslash of a string that began at start.
func (d *reqDecoder) escaped(start int) (string, bool) {
	out := append([]byte(nil), d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			if !utf8.Valid(out) {
				return "", false
			}
			return string(out), true
		case c == '\\':
			if d.i+1 >= len(d.b) {
				return "", false
			}
			var r byte
			switch d.b[d.i+1] {
			case '"', '\\', '/':
				r = d.b[d.i+1]
			case 'b':
				r = '\b'
			case 'f':
				r = '\f'
			case 'n':
				r = '\n'
			case 'r':
				r = '\r'
			case 't':
				r = '\t'
			default: // \u and invalid escapes
				return "", false
			}
			out = append(out, r)
			d.i += 2
			continue
		case c < 0x20:
			return "", false
		}
		out = append(out, c)
		d.i++
	}
	return "", false
}

// integer reads a JSON integer (no fraction, no exponent) that fits an int.
func (d *reqDecoder) integer() (int, bool) {
	start := d.i
	d.eat('-')
	digits := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	if d.i == digits || d.b[digits] == '0' && d.i-digits > 1 {
		return 0, false
	}
	if d.i < len(d.b) {
		switch d.b[d.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	n, err := strconv.Atoi(string(d.b[start:d.i]))
	return n, err == nil
}

// headers reads an object of strings (a key given twice keeps its last value, as in
// encoding/json).
func (d *reqDecoder) headers() (map[string]string, bool) {
	if !d.eat('{') {
		return nil, false
	}
	h := map[string]string{}
	d.space()
	if d.eat('}') {
		return h, true
	}
	for {
		d.space()
		k, ok := d.str()
		if !ok {
			return nil, false
		}
		d.space()
		if !d.eat(':') {
			return nil, false
		}
		d.space()
		v, ok := d.str()
		if !ok {
			return nil, false
		}
		h[k] = v
		d.space()
		if d.eat(',') {
			continue
		}
		if d.eat('}') {
			return h, true
		}
		return nil, false
	}
}

// appendEnqueueReply appends what json.NewEncoder(w).Encode(EnqueueReply{created, *v})
// writes, the newline included.
func appendEnqueueReply(b []byte, created bool, v *Delivery) []byte {
	b = append(b, `{"created":`...)
	b = strconv.AppendBool(b, created)
	b = append(b, `,"id":`...)
	b = strconv.AppendInt(b, v.ID, 10)
	b = append(b, `,"sink":`...)
	b = jsonenc.AppendString(b, v.Sink)
	b = append(b, `,"idempotency_key":`...)
	b = jsonenc.AppendString(b, v.Key)
	b = append(b, `,"state":`...)
	b = jsonenc.AppendString(b, string(v.State))
	b = append(b, `,"priority":`...)
	b = strconv.AppendInt(b, int64(v.Priority), 10)
	if len(v.HeaderNames) > 0 {
		b = append(b, `,"header_names":[`...)
		for i, n := range v.HeaderNames {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonenc.AppendString(b, n)
		}
		b = append(b, ']')
	}
	b = append(b, `,"payload_size":`...)
	b = strconv.AppendInt(b, int64(v.PayloadSize), 10)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(v.Attempts), 10)
	b = append(b, `,"failures":`...)
	b = strconv.AppendInt(b, int64(v.Failures), 10)
	b = appendOptTime(b, `,"next_attempt_at":`, v.NextAttemptAt)
	b = appendOptTime(b, `,"last_attempt_at":`, v.LastAttemptAt)
	if v.LastError != "" {
		b = append(b, `,"last_error":`...)
		b = jsonenc.AppendString(b, v.LastError)
	}
	if v.DeadReason != "" {
		b = append(b, `,"dead_reason":`...)
		b = jsonenc.AppendString(b, v.DeadReason)
	}
	b = append(b, `,"created_at":`...)
	b = jsonenc.AppendTime(b, v.CreatedAt)
	b = append(b, `,"updated_at":`...)
	b = jsonenc.AppendTime(b, v.UpdatedAt)
	b = appendOptTime(b, `,"finished_at":`, v.FinishedAt)
	b = appendOptTime(b, `,"expires_at":`, v.ExpiresAt)
	if v.Quarantined {
		b = append(b, `,"quarantined":true`...)
	}
	if v.Data != nil {
		b = append(b, `,"data":`...)
		b = jsonenc.AppendString(b, *v.Data)
	}
	if v.DataBase64 != nil {
		b = append(b, `,"data_base64":`...)
		b = jsonenc.AppendString(b, *v.DataBase64)
	}
	return append(b, "}\n"...)
}

// replyEncodable reports whether appendEnqueueReply can encode v: its times are within
// the years that time.Time.MarshalJSON accepts.
func replyEncodable(v *Delivery) bool {
	ok := func(t time.Time) bool { return t.Year() >= 0 && t.Year() <= 9999 }
	opt := func(t *time.Time) bool { return t == nil || ok(*t) }
	return ok(v.CreatedAt) && ok(v.UpdatedAt) && opt(v.NextAttemptAt) && opt(v.LastAttemptAt) &&
		opt(v.FinishedAt) && opt(v.ExpiresAt)
}

func appendOptTime(b []byte, field string, t *time.Time) []byte {
	if t == nil {
		return b
	}
	return jsonenc.AppendTime(append(b, field...), *t)
}
