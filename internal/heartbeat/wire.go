package heartbeat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// An http target on a plain http:// URL is pulsed over connections the service keeps
// itself (wireTarget), not through net/http's Transport: the Transport runs two goroutines
// per connection and hands every exchange between them and the caller, which at hundreds of
// pulses a second cost more CPU than the exchange. Here the worker that runs the pulse
// writes the request with one write and reads the reply itself; net/http still parses the
// reply. https, proxies, user info in the URL and headers net/http would refuse go through
// an *http.Client as before.

// Connection pool limits.
const (
	// wirePeekIdle: a connection idle for less is used without peeking whether the peer
	// closed it. Servers close idle connections after seconds (Node.js 5 s, nginx 75 s),
	// not milliseconds, and a burst of pulses reuses its connections every 100 ms: the
	// peek, a system call per pulse, is kept for connections that sat idle.
	wirePeekIdle = 250 * time.Millisecond
	// wireIdlePerHost is how many idle connections are kept per host: enough for a burst
	// of pulses to one target (10,000 agents every 30 s are about 83 every 250 ms), each
	// sent on a connection of its own, and for the workers' exchanges.
	wireIdlePerHost = 2 * pulseWorkers
)

// wireTarget is an http target reached over the service's own connections.
type wireTarget struct {
	addr string // host:port to dial
	req  []byte // request line and headers, up to the Content-Length value
	head bool   // a HEAD request: its reply has no body
	pool *wirePool
}

// newWireTarget returns nil when the target needs net/http: not plain http, a proxy from
// the environment, user info, a host that is not ASCII, or a header net/http would refuse.
func newWireTarget(rawURL, method string, headers map[string]string, pool *wirePool) *wireTarget {
	if pool == nil {
		return nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" || u.User != nil || u.Host == "" || !asciiPrintable(u.Host) ||
		strings.Contains(u.Host, "%") || !validToken(method) {
		return nil
	}
	if p, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err != nil || p != nil {
		return nil
	}
	host := strings.TrimSuffix(u.Host, ":")
	addr := host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	// Headers as net/http writes them: canonical names, Host and the body's length from
	// the request, the rest sorted.
	h := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"schedd-heartbeat"}}
	for k, v := range headers {
		if !validToken(k) || !validHeaderValue(v) {
			return nil
		}
		h.Set(k, v)
	}
	ua := h.Get("User-Agent")
	for _, k := range []string{"Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer"} {
		delete(h, k)
	}
	b := make([]byte, 0, 256)
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, u.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	if ua != "" {
		b = append(b, "User-Agent: "...)
		b = append(b, ua...)
		b = append(b, "\r\n"...)
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range h {
			if !yield(k) {
				return
			}
		}
	}) {
		b = append(b, k...)
		b = append(b, ": "...)
		b = append(b, strings.TrimSpace(h.Get(k))...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Content-Length: "...)
	return &wireTarget{addr: addr, req: b, head: method == http.MethodHead, pool: pool}
}

// errWireReuse marks a kept connection that could not carry the request (its write failed,
// or an earlier context's interruption may be under way): nothing reached the target, so
// the pulse is sent again on a new connection.
var errWireReuse = errors.New("kept connection unusable")

// aLongTimeAgo is a deadline that has passed: setting it interrupts a blocked read or write.
var aLongTimeAgo = time.Unix(1, 0)

// exchange sends p and returns the reply's status code and (at most maxReply bytes of) its
// body, by deadline, or soon after ctx ends. The body is only valid until the connection's
// next use: classify copies what it keeps.
func (w *wireTarget) exchange(ctx context.Context, deadline time.Time, p Pulse) (int, []byte, error) {
	for fresh := false; ; fresh = true {
		c, err := w.pool.get(ctx, deadline, w.addr, fresh)
		if err != nil {
			return 0, nil, err
		}
		if err = w.send(ctx, c, p); err == nil {
			return w.receive(ctx, deadline, c)
		}
		c.close()
		if !errors.Is(err, errWireReuse) || fresh || ctx.Err() != nil {
			return 0, nil, err
		}
	}
}

// start sends p on a kept connection when one is ready, without dialing: the first half
// of an exchange that receive completes. The connection's read deadline is readBy. ok is
// false when nothing was sent.
func (w *wireTarget) start(ctx context.Context, readBy time.Time, p Pulse) (c *wireConn, ok bool) {
	if c = w.pool.take(readBy, w.addr); c == nil {
		return nil, false
	}
	if err := w.send(ctx, c, p); err != nil {
		c.close()
		return nil, false
	}
	return c, true
}

// send writes p's request on c, whose read deadline is set: one buffer, one write. A
// request is a few hundred bytes on a connection that carries one at a time, so the write
// never waits for the peer; the read deadline bounds the exchange.
func (w *wireTarget) send(ctx context.Context, c *wireConn, p Pulse) error {
	if !c.watch(ctx) {
		return errWireReuse
	}
	c.body = p.appendJSON(c.body[:0])
	b := append(c.wbuf[:0], w.req...)
	b = strconv.AppendInt(b, int64(len(c.body)), 10)
	b = append(b, "\r\n\r\n"...)
	b = append(b, c.body...)
	c.wbuf = b
	if err := c.write(b); err != nil {
		if c.reused {
			err = fmt.Errorf("%w: %w", errWireReuse, err)
		}
		return err
	}
	c.reused = true
	return nil
}

// receive reads the reply to the request send wrote on c, by deadline, and keeps c for the
// next pulse when it can carry one.
func (w *wireTarget) receive(ctx context.Context, deadline time.Time, c *wireConn) (int, []byte, error) {
	if !c.readBy.Equal(deadline) {
		if err := c.SetReadDeadline(deadline); err != nil {
			c.close()
			return 0, nil, err
		}
		c.readBy = deadline
	}
	r, err := readWireReply(c.br, w.head, c.rbuf)
	c.rbuf = r.body[:0]
	// Bytes past the reply answer no request: the connection is out of step.
	if err == nil && r.whole && !r.close && c.br.Buffered() == 0 && ctx.Err() == nil {
		w.pool.put(c)
	} else {
		c.close()
	}
	if err != nil {
		return 0, nil, err
	}
	return r.code, r.body, nil
}

// replied waits until the reply to the request start sent begins to arrive, at most until
// the read deadline start set. It reports false when none did.
func (c *wireConn) replied() bool {
	_, err := c.br.Peek(1)
	return err == nil
}

// readReply reads r to its end into b, or up to one byte past maxReply.
func readReply(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):min(cap(b), maxReply+1)])
		b = b[:len(b)+n]
		switch {
		case err == io.EOF:
			return b, nil
		case err != nil:
			return b, err
		case len(b) > maxReply:
			return b, nil
		}
	}
}

// wireConn is one kept connection.
type wireConn struct {
	net.Conn
	addr   string
	rc     syscall.RawConn // for peerClosed; nil if the connection has none
	raw    *rawIO          // reads and writes as raw system calls (Linux), or nil
	peeked bool            // peerClosed's answer
	peek   func(fd uintptr) bool
	br     *bufio.Reader
	body   []byte    // the last pulse's JSON, reused
	wbuf   []byte    // the last request, reused
	rbuf   []byte    // the last reply body, reused
	reused bool      // a request was written before: a write error may mean the peer closed it
	idle   time.Time // when it was put back
	readBy time.Time // the read deadline set

	// The context whose end interrupts the connection (the service's, for every pulse):
	// watched once, not per pulse.
	watched context.Context
	unwatch func() bool
}

// watch makes ctx's end interrupt c. It reports false when c cannot be used: a context
// watched before ended, and its interruption may still be under way.
func (c *wireConn) watch(ctx context.Context) bool {
	if c.watched == ctx {
		return true
	}
	if c.unwatch != nil && !c.unwatch() {
		return false
	}
	c.watched = ctx
	c.unwatch = context.AfterFunc(ctx, func() { _ = c.SetDeadline(aLongTimeAgo) })
	return true
}

func (c *wireConn) close() {
	if c.unwatch != nil {
		c.unwatch()
	}
	c.Conn.Close()
}

// wirePool keeps idle connections per address, newest last.
type wirePool struct {
	// dial connects; tests replace it.
	dial func(ctx context.Context, deadline time.Time, addr string) (net.Conn, error)

	mu     sync.Mutex
	idle   map[string][]*wireConn
	closed bool
}

func newWirePool() *wirePool {
	return &wirePool{idle: make(map[string][]*wireConn), dial: dialTCP}
}

func dialTCP(ctx context.Context, deadline time.Time, addr string) (net.Conn, error) {
	d := net.Dialer{Deadline: deadline}
	return d.DialContext(ctx, "tcp", addr)
}

// get returns an idle connection to addr that the peer has not closed, or dials one (always,
// when fresh).
func (p *wirePool) get(ctx context.Context, deadline time.Time, addr string, fresh bool) (*wireConn, error) {
	if !fresh {
		if c := p.take(deadline, addr); c != nil {
			return c, nil
		}
	}
	nc, err := p.dial(ctx, deadline, addr)
	if err != nil {
		return nil, err
	}
	c := &wireConn{Conn: nc, addr: addr}
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			c.rc = rc
			c.peek = c.peekFD
		}
	}
	c.br = bufio.NewReaderSize(c.reader(), 4096)
	if err := c.SetReadDeadline(deadline); err != nil {
		c.close()
		return nil, err
	}
	c.readBy = deadline
	return c, nil
}

// take returns an idle connection to addr that the peer has not closed, with its read
// deadline set to readBy, or nil.
func (p *wirePool) take(readBy time.Time, addr string) *wireConn {
	for {
		p.mu.Lock()
		conns := p.idle[addr]
		if len(conns) == 0 {
			p.mu.Unlock()
			return nil
		}
		c := conns[len(conns)-1]
		conns[len(conns)-1] = nil
		p.idle[addr] = conns[:len(conns)-1]
		p.mu.Unlock()
		// The deadline first: a peek past an old deadline would fail.
		idle := time.Since(c.idle)
		if idle < wireMaxIdle && c.SetReadDeadline(readBy) == nil && (idle < wirePeekIdle || !c.peerClosed()) {
			c.readBy = readBy
			return c
		}
		c.close()
	}
}

// put keeps c for the next pulse to its address, closing the oldest idle connections that
// exceed the limits.
func (p *wirePool) put(c *wireConn) {
	now := time.Now()
	c.idle = now
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.close()
		return
	}
	conns := append(p.idle[c.addr], c)
	drop := 0
	for drop < len(conns)-1 && (len(conns)-drop > wireIdlePerHost || now.Sub(conns[drop].idle) >= wireMaxIdle) {
		drop++
	}
	old := slices.Clone(conns[:drop])
	p.idle[c.addr] = slices.Delete(conns, 0, drop)
	p.mu.Unlock()
	for _, o := range old {
		o.close()
	}
}

// retain closes the idle connections to addresses not in keep.
func (p *wirePool) retain(keep map[string]bool) {
	var drop []*wireConn
	p.mu.Lock()
	for addr, conns := range p.idle {
		if !keep[addr] {
			drop = append(drop, conns...)
			delete(p.idle, addr)
		}
	}
	p.mu.Unlock()
	for _, c := range drop {
		c.close()
	}
}

// closeIdle closes every idle connection; with stop, connections put back later are closed
// too.
func (p *wirePool) closeIdle(stop bool) {
	p.mu.Lock()
	idle := p.idle
	p.idle = make(map[string][]*wireConn)
	p.closed = p.closed || stop
	p.mu.Unlock()
	for _, conns := range idle {
		for _, c := range conns {
			c.close()
		}
	}
}

func asciiPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// validToken reports whether s is an HTTP token (a method or header name).
func validToken[T ~[]byte | ~string](s T) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// validHeaderValue reports whether net/http would send v: no control bytes but tab.
func validHeaderValue[T ~[]byte | ~string](v T) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// isTimeout reports whether err is a connection deadline passing.
func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
