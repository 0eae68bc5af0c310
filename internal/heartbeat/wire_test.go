package heartbeat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// rawTarget is an HTTP/1.1 target written on bare TCP, so tests control every byte of the
// reply and how the connection ends. reply gets the request (head and body) and returns
// the bytes to answer with and whether to close the connection after them.
type rawTarget struct {
	ln       net.Listener
	accepted atomic.Int32
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
	reply    func(head string, body []byte) (answer string, closeAfter bool)
}

func newRawTarget(t testing.TB, reply func(head string, body []byte) (string, bool)) *rawTarget {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rt := &rawTarget{ln: ln, reply: reply}
	rt.wg.Go(rt.serve)
	t.Cleanup(rt.close)
	return rt
}

func (rt *rawTarget) url() string { return "http://" + rt.ln.Addr().String() + "/pulse" }

func (rt *rawTarget) serve() {
	for {
		c, err := rt.ln.Accept()
		if err != nil {
			return
		}
		rt.accepted.Add(1)
		rt.mu.Lock()
		rt.conns = append(rt.conns, c)
		rt.mu.Unlock()
		rt.wg.Go(func() { rt.serveConn(c) })
	}
}

func (rt *rawTarget) serveConn(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		var head strings.Builder
		length := 0
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			head.WriteString(line)
			if line == "\r\n" {
				break
			}
			if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
				length, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		body := make([]byte, length)
		if _, err := io.ReadFull(br, body); err != nil {
			return
		}
		answer, closeAfter := rt.reply(head.String(), body)
		if _, err := io.WriteString(c, answer); err != nil || closeAfter {
			return
		}
	}
}

// closeConns closes the target's side of every connection, as a server closing idle
// connections does.
func (rt *rawTarget) closeConns() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, c := range rt.conns {
		c.Close()
	}
	rt.conns = nil
}

func (rt *rawTarget) close() {
	rt.ln.Close()
	rt.closeConns()
	rt.wg.Wait()
}

func newTestWire(t testing.TB, url, method string, headers map[string]string) *wireTarget {
	t.Helper()
	pool := newWirePool()
	t.Cleanup(func() { pool.closeIdle(true) })
	w := newWireTarget(url, method, headers, pool)
	if w == nil {
		t.Fatalf("%s: no wire target", url)
	}
	return w
}

// BenchmarkWireExchange is one pulse over a kept connection to a target on loopback that
// answers 204 at once: what the daemon spends per pulse on HTTP (the target's work, in the
// same process here, is included).
func BenchmarkWireExchange(b *testing.B) {
	rt := newRawTarget(b, func(string, []byte) (string, bool) { return "HTTP/1.1 204 No Content\r\nDate: x\r\n\r\n", false })
	w := newTestWire(b, rt.url(), http.MethodPost, nil)
	p := samplePulse()
	b.ReportAllocs()
	for b.Loop() {
		if code, _, err := w.exchange(b.Context(), time.Now().Add(time.Minute), p); err != nil || code != 204 {
			b.Fatal(code, err)
		}
	}
}

// pulseOnce sends one pulse over w and fails the test on a transport error.
func pulseOnce(t *testing.T, w *wireTarget) (int, string) {
	t.Helper()
	code, body, err := w.exchange(t.Context(), time.Now().Add(5*time.Second), samplePulse())
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	return code, string(body)
}

func TestWireKeepsConnection(t *testing.T) {
	pulsesOnOneConnection(t, 20)
}

// pulsesOnOneConnection sends n pulses to a target that answers 204 and fails the test
// unless each got its 204 and all went over one kept connection.
func pulsesOnOneConnection(t *testing.T, n int) *wireTarget {
	t.Helper()
	rt := newRawTarget(t, func(string, []byte) (string, bool) { return "HTTP/1.1 204 No Content\r\n\r\n", false })
	w := newTestWire(t, rt.url(), http.MethodPost, nil)
	for range n {
		if code, _ := pulseOnce(t, w); code != 204 {
			t.Fatalf("status %d, want 204", code)
		}
	}
	if got := rt.accepted.Load(); got != 1 {
		t.Fatalf("%d connections for %d pulses, want 1", got, n)
	}
	return w
}

// TestWirePeerClosedIdle: a target that closes a kept connection while it is idle (as
// servers with a keep-alive timeout do) costs a new connection, never a failed pulse.
func TestWirePeerClosedIdle(t *testing.T) {
	rt := newRawTarget(t, func(string, []byte) (string, bool) { return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false })
	w := newTestWire(t, rt.url(), http.MethodPost, nil)
	for i := range 3 {
		if code, body := pulseOnce(t, w); code != 200 || body != "ok" {
			t.Fatalf("pulse %d: %d %q", i, code, body)
		}
		rt.closeConns()
		time.Sleep(wirePeekIdle) // idle long enough to be peeked at before reuse
	}
	if n := rt.accepted.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
}

// brokenConn fails every write after the first, as a connection the peer reset does.
type brokenConn struct {
	net.Conn
	writes int
}

func (c *brokenConn) Write(b []byte) (int, error) {
	if c.writes++; c.writes > 1 {
		return 0, syscall.ECONNRESET
	}
	return c.Conn.Write(b)
}

// TestWireRetriesFailedWrite: a write that fails on a kept connection reached nobody, so
// the pulse goes out again on a new connection (as net/http retries requests it did not
// write).
func TestWireRetriesFailedWrite(t *testing.T) {
	rt := newRawTarget(t, func(string, []byte) (string, bool) { return "HTTP/1.1 204 No Content\r\n\r\n", false })
	w := newTestWire(t, rt.url(), http.MethodPost, nil)
	dials := 0
	w.pool.dial = func(ctx context.Context, deadline time.Time, addr string) (net.Conn, error) {
		dials++
		c, err := dialTCP(ctx, deadline, addr)
		return &brokenConn{Conn: c}, err
	}
	for i := range 3 {
		if code, _ := pulseOnce(t, w); code != 204 {
			t.Fatalf("pulse %d: %d", i, code)
		}
	}
	if dials != 3 {
		t.Fatalf("%d dials, want 3 (each kept connection breaks on its second write)", dials)
	}
}

func TestWireReplies(t *testing.T) {
	big := strings.Repeat("x", maxReply+10)
	for _, tc := range []struct {
		name   string
		reply  string
		code   int
		body   string
		reused bool // the next pulse goes over the same connection
		bad    bool // the exchange fails
	}{
		{"204", "HTTP/1.1 204 No Content\r\nServer: x\r\n\r\n", 204, "", true, false},
		{"length", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\ncontent-length: 21\r\n\r\n{\"status\":\"ok-empty\"}", 200, `{"status":"ok-empty"}`, true, false},
		{"bytes past the body", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabc", 200, "ab", false, false},
		{"LF only", "HTTP/1.1 200 OK\nContent-Length: 3\n\nabc", 200, "abc", true, false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: t\r\n\r\n", 200, "abcde", false, false},
		{"interim 103", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nz", 200, "z", true, false},
		{"close", "HTTP/1.1 503 Busy\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n", 503, "", false, false},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 200, "", false, false},
		{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", 200, "", true, false},
		{"no length", "HTTP/1.1 500 Oops\r\n\r\nall of it", 500, "all of it", false, false},
		{"too long", "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(big)) + "\r\n\r\n" + big, 200, big[:maxReply], false, false},
		{"no reason", "HTTP/1.1 429\r\nContent-Length: 0\r\n\r\n", 429, "", true, false},
		{"bad status", "HTTP/2 200 OK\r\n\r\n", 0, "", false, true},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, "", false, true},
		{"two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 0, "", false, true},
		{"gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 0, "", false, true},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", 0, "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			rt := newRawTarget(t, func(string, []byte) (string, bool) {
				if n++; n == 1 {
					return tc.reply, tc.bad || tc.name == "no length" || tc.name == "short body"
				}
				return "HTTP/1.1 204 No Content\r\n\r\n", false
			})
			w := newTestWire(t, rt.url(), http.MethodPost, nil)
			code, body, err := w.exchange(t.Context(), time.Now().Add(5*time.Second), samplePulse())
			if (err != nil) != tc.bad || code != tc.code || string(body) != tc.body {
				t.Fatalf("got %d %q (%d bytes) %v", code, truncate(string(body), 40), len(body), err)
			}
			if code, _ := pulseOnce(t, w); code != 204 {
				t.Fatalf("next pulse: %d", code)
			}
			if reused := rt.accepted.Load() == 1; reused != tc.reused {
				t.Fatalf("connection reused %v, want %v", reused, tc.reused)
			}
		})
	}
}

// TestWireHEAD: a HEAD reply has no body, whatever its Content-Length says.
func TestWireHEAD(t *testing.T) {
	rt := newRawTarget(t, func(head string, _ []byte) (string, bool) {
		if !strings.HasPrefix(head, "HEAD /pulse HTTP/1.1\r\n") {
			return "HTTP/1.1 400 Bad\r\nContent-Length: 0\r\n\r\n", false
		}
		return "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", false
	})
	w := newTestWire(t, rt.url(), http.MethodHead, nil)
	for range 2 {
		if code, body := pulseOnce(t, w); code != 200 || body != "" {
			t.Fatalf("%d %q", code, body)
		}
	}
}

// TestWireRequestMatchesNetHTTP: the request written by hand is the one net/http writes
// for the same target (method, URI, Host, headers, body), but for net/http's
// Accept-Encoding.
func TestWireRequestMatchesNetHTTP(t *testing.T) {
	got := make(chan *http.Request, 1)
	bodies := make(chan string, 1)
	rt := newRawTarget(t, func(head string, body []byte) (string, bool) {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(head)))
		if err != nil {
			t.Error(err)
		}
		got <- r
		bodies <- string(body)
		return "HTTP/1.1 204 No Content\r\n\r\n", false
	})
	headers := map[string]string{"authorization": "Bearer s3cret", "X-Trim": "  padded\t", "content-type": "application/x-pulse",
		"Host": "ignored.example", "Content-Length": "999", "X-Empty": ""}
	for _, method := range []string{"POST", "PUT", "PATCH"} {
		target := &HTTPTarget{URL: rt.url() + "/sub%20dir?a=1&b=%2F", Method: method, Headers: headers}
		var reqs [2]*http.Request
		var bs [2]string
		for i, wire := range []bool{true, false} {
			h := newTestHTTPPulser(t, wire, target)
			if res := h.pulse(t.Context(), deadline(h), samplePulse()); res.outcome != outcomeRan {
				t.Fatalf("%s wire=%v: %+v", method, wire, res)
			}
			reqs[i], bs[i] = <-got, <-bodies
		}
		w, n := reqs[0], reqs[1]
		n.Header.Del("Accept-Encoding")
		if w.Method != n.Method || w.RequestURI != n.RequestURI || w.Host != n.Host || w.ContentLength != n.ContentLength ||
			fmt.Sprint(w.Header) != fmt.Sprint(n.Header) || bs[0] != bs[1] {
			t.Fatalf("%s: wire request\n%s %s %s %d %v %s\nnet/http request\n%s %s %s %d %v %s", method,
				w.Method, w.RequestURI, w.Host, w.ContentLength, w.Header, bs[0], n.Method, n.RequestURI, n.Host, n.ContentLength, n.Header, bs[1])
		}
	}
}

func TestWireOnlyForPlainHTTP(t *testing.T) {
	pool := newWirePool()
	for _, tc := range []struct {
		url     string
		headers map[string]string
		wire    bool
	}{
		{"http://127.0.0.1:8080/hooks/wake", nil, true},
		{"http://localhost/hooks", map[string]string{"X-Key": "v"}, true},
		{"https://127.0.0.1:8443/hooks", nil, false},
		{"http://user:pw@127.0.0.1/hooks", nil, false},
		{"http://bücher.example/", nil, false},
		{"http://[fe80::1%25eth0]:80/", nil, false},
		{"http://127.0.0.1/", map[string]string{"X-Key": "a\nb"}, false},
		{"http://127.0.0.1/", map[string]string{"Bad Name": "v"}, false},
		{"unix:///tmp/sock", nil, false},
	} {
		if w := newWireTarget(tc.url, http.MethodPost, tc.headers, pool); (w != nil) != tc.wire {
			t.Errorf("%s %v: wire %v, want %v", tc.url, tc.headers, w != nil, tc.wire)
		}
	}
	if w := newWireTarget("http://127.0.0.1:8080/x", http.MethodPost, nil, nil); w != nil {
		t.Error("no pool (Deps.HTTPClient given): want net/http")
	}
}

// FuzzWireReply: whatever bytes a target answers with, a reply the hand reader accepts
// is one net/http reads alike (status and body), and the reader never panics.
func FuzzWireReply(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.0 503 Busy\r\n\r\n{\"status\":\"skipped\"}",
		"HTTP/1.1 103 Early\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := readWireReply(bufio.NewReader(bytes.NewReader(data)), false, nil)
		if err != nil {
			return
		}
		br := bufio.NewReader(bytes.NewReader(data))
		resp, nerr := http.ReadResponse(br, nil)
		for nerr == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != 101 {
			resp, nerr = http.ReadResponse(br, nil)
		}
		if nerr != nil {
			t.Fatalf("hand reader took %q (code %d), net/http did not: %v", data, r.code, nerr)
		}
		body, berr := io.ReadAll(io.LimitReader(resp.Body, maxReply))
		if resp.StatusCode != r.code || (berr == nil && r.whole && string(body) != string(r.body)) {
			t.Fatalf("reply %q: hand reader %d %q, net/http %d %q (%v)", data, r.code, r.body, resp.StatusCode, body, berr)
		}
	})
}

// TestServiceWireBursts runs a service on real time against a target on bare TCP: a wake
// of every agent sends their pulses over kept connections and reads the replies in the
// handler; a reply slower than wireWait, and one that says busy, are finished by the
// workers; every pulse is recorded with its outcome, and the connections are kept.
func TestServiceWireBursts(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	rt := newRawTarget(t, func(_ string, body []byte) (string, bool) {
		var p Pulse
		if err := json.Unmarshal(body, &p); err != nil {
			return "HTTP/1.1 400 Bad\r\nContent-Length: 0\r\n\r\n", true
		}
		mu.Lock()
		got[p.AgentID]++
		mu.Unlock()
		switch p.AgentID {
		case "slow":
			time.Sleep(3 * wireWait)
		case "event":
			return "HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n{\"status\":\"sent\"}", false
		}
		return "HTTP/1.1 204 No Content\r\n\r\n", false
	})
	ids := []string{"a", "b", "c", "slow", "event"}
	cfg := Config{Seed: testSeed, Defaults: AgentConfig{Every: "1h", Target: &Target{HTTP: &HTTPTarget{URL: rt.url()}}}}
	for _, id := range ids {
		cfg.Agents = append(cfg.Agents, AgentConfig{ID: id})
	}
	svc, err := New(cfg, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer runService(t, svc)()
	for round := 1; round <= 3; round++ {
		if err := svc.Wake(WakeRequest{Reason: "manual"}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			st, n := svc.Status(), 0
			for _, a := range st.Agents {
				if a.Last != nil && a.Last.Status == StatusRan {
					n++
				}
			}
			mu.Lock()
			all := len(got) == len(ids)
			for _, c := range got {
				all = all && c == round
			}
			mu.Unlock()
			if all && n == len(ids) && !svc.inflightAny() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: pulses %v, status %+v", round, got, st.Agents)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for _, a := range svc.Status().Agents {
		if a.ID == "event" && (a.Event == nil || a.Event.Status != EventSent) {
			t.Errorf("event agent: %+v", a.Event)
		}
	}
	if n := rt.accepted.Load(); n > int32(len(ids)) {
		t.Errorf("%d connections for %d agents", n, len(ids))
	}
}

// inflightAny reports whether a pulse is in flight.
func (s *Service) inflightAny() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.order {
		if a.inflight {
			return true
		}
	}
	return false
}
