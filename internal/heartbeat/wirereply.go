package heartbeat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The reply to a pulse is read by hand, without net/http's Response, header map and body
// readers: a target answers hundreds of pulses a second and only the status, the framing
// of the body and whether the connection stays open matter. A reply this reader does not
// take (a malformed one, a transfer coding other than chunked) fails the pulse and closes
// the connection, as net/http would fail it.

// errBadReply is wrapped by every reply this reader refuses.
var errBadReply = errors.New("malformed reply")

// maxReplyHead caps a reply's status line and headers, as net/http's default does.
const maxReplyHead = 1 << 20

// wireReply is a parsed reply.
type wireReply struct {
	code  int
	body  []byte // at most maxReply bytes
	whole bool   // body is the whole body and the connection is at the next reply
	close bool   // the connection must not be reused
}

// readWireReply reads one reply from br into body's buffer. head says the request was a
// HEAD (its reply has no body). Interim 1xx replies other than 101 are skipped.
func readWireReply(br *bufio.Reader, head bool, body []byte) (wireReply, error) {
	for {
		r, err := readWireHead(br)
		if err != nil {
			return r.wireReply, err
		}
		if r.code >= 100 && r.code < 200 && r.code != 101 {
			continue
		}
		r.body = body[:0]
		switch {
		case head || r.code == 204 || r.code == 304 || r.code == 101:
			r.whole = true
			r.close = r.close || r.code == 101
		case r.chunked:
			err = r.readChunked(br)
		case r.length >= 0:
			err = r.readLength(br)
		default:
			// No length: the body runs to the end of the connection.
			r.close = true
			r.body, err = readReply(br, r.body)
			if err == nil && len(r.body) > maxReply {
				r.body = r.body[:maxReply]
			}
		}
		return r.wireReply, err
	}
}

// replyHead is a reply's status and framing.
type replyHead struct {
	wireReply
	length  int64 // -1: not given
	chunked bool
}

func readWireHead(br *bufio.Reader) (replyHead, error) {
	h := replyHead{length: -1}
	line, n, err := readLine(br, 0)
	if err != nil {
		return h, err
	}
	// HTTP/1.x NNN[ reason]
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || line[8] != ' ' || (len(line) > 12 && line[12] != ' ') {
		return h, fmt.Errorf("%w: status line %q", errBadReply, truncate(string(line), 40))
	}
	minor := line[7]
	code, ok := atoi3(line[9:12])
	if !ok || code < 100 || (minor != '0' && minor != '1') {
		return h, fmt.Errorf("%w: status line %q", errBadReply, truncate(string(line), 40))
	}
	h.code = code
	keepAlive := false
	close := false
	for {
		line, n, err = readLine(br, n)
		if err != nil {
			return h, err
		}
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte{':'})
		if !ok || len(name) == 0 || !validToken(name) || !validHeaderValue(value) {
			return h, fmt.Errorf("%w: header line %q", errBadReply, truncate(string(line), 40))
		}
		value = bytes.Trim(value, " \t")
		switch {
		case equalFold(name, "content-length"):
			v, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || v < 0 || (h.length >= 0 && h.length != v) {
				return h, fmt.Errorf("%w: Content-Length %q", errBadReply, truncate(string(value), 40))
			}
			h.length = v
		case equalFold(name, "transfer-encoding"):
			// Only chunked, and only in HTTP/1.1 (HTTP/1.0 has no transfer codings).
			if !equalFold(value, "chunked") || h.chunked || minor == '0' {
				return h, fmt.Errorf("%w: Transfer-Encoding %q", errBadReply, truncate(string(value), 40))
			}
			h.chunked = true
		case equalFold(name, "connection"):
			for tok := range bytes.SplitSeq(value, []byte{','}) {
				tok = bytes.Trim(tok, " \t")
				close = close || equalFold(tok, "close")
				keepAlive = keepAlive || equalFold(tok, "keep-alive")
			}
		}
	}
	h.close = close || (minor == '0' && !keepAlive)
	if h.chunked {
		h.length = -1  // Transfer-Encoding wins over Content-Length (RFC 9112 6.3)
		h.close = true // such a message may have been smuggled: do not trust what follows
	}
	return h, nil
}

// readLine returns the next line without its CRLF (or LF). n counts the head's bytes so
// far, which may not exceed maxReplyHead. The line is only valid until the next read.
func readLine(br *bufio.Reader, n int) ([]byte, int, error) {
	line, err := br.ReadSlice('\n')
	n += len(line)
	if errors.Is(err, bufio.ErrBufferFull) || n > maxReplyHead {
		return nil, n, fmt.Errorf("%w: header line too long", errBadReply)
	}
	if err != nil {
		if err == io.EOF && n > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, n, err
	}
	line = line[:len(line)-1]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, n, nil
}

// readLength reads a body of h.length bytes, keeping at most maxReply of them.
func (h *replyHead) readLength(br *bufio.Reader) error {
	if h.length > maxReply {
		// Keep maxReply bytes; the rest is not worth reading to keep the connection.
		h.close = true
		h.body = grow(h.body, maxReply)
		_, err := io.ReadFull(br, h.body)
		return unexpectedEOF(err)
	}
	h.body = grow(h.body, int(h.length))
	if _, err := io.ReadFull(br, h.body); err != nil {
		return unexpectedEOF(err)
	}
	h.whole = true
	return nil
}

// readChunked reads a chunked body, keeping at most maxReply bytes of it.
func (h *replyHead) readChunked(br *bufio.Reader) error {
	n := 0
	for {
		line, m, err := readLine(br, n)
		if err != nil {
			return unexpectedEOF(err)
		}
		n = m
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i] // chunk extensions are ignored
		}
		size, err := strconv.ParseUint(string(bytes.Trim(line, " \t")), 16, 62)
		if err != nil {
			return fmt.Errorf("%w: chunk size %q", errBadReply, truncate(string(line), 20))
		}
		if size == 0 {
			break
		}
		if uint64(len(h.body))+size > maxReply {
			h.close = true
			keep := maxReply - len(h.body)
			start := len(h.body)
			h.body = grow(h.body, maxReply)
			_, err := io.ReadFull(br, h.body[start:start+keep])
			return unexpectedEOF(err)
		}
		start := len(h.body)
		h.body = grow(h.body, start+int(size))
		if _, err := io.ReadFull(br, h.body[start:]); err != nil {
			return unexpectedEOF(err)
		}
		if line, n, err = readLine(br, n); err != nil || len(line) != 0 {
			return fmt.Errorf("%w: chunk not followed by CRLF", errBadReply)
		}
	}
	for { // trailers, then the empty line
		line, m, err := readLine(br, n)
		if err != nil {
			return unexpectedEOF(err)
		}
		n = m
		if len(line) == 0 {
			break
		}
	}
	h.whole = true
	return nil
}

// grow returns b resized to n bytes, keeping its content.
func grow(b []byte, n int) []byte {
	if n <= cap(b) {
		return b[:n]
	}
	return append(b[:cap(b)], make([]byte, n-cap(b))...)[:n]
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// atoi3 parses three decimal digits.
func atoi3(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// equalFold reports whether b is s in any case; s is lower-case ASCII.
func equalFold[T ~[]byte | ~string](b T, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
