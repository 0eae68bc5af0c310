//go:build unix

package early

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// listenFor listens on a socket of its own and returns the request of
// `schedd restart --now --wait` to it.
func listenFor(t *testing.T) (net.Listener, Request) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	r, ok := Parse([]string{"--now", "--wait", "--socket", sock}, os.Getenv)
	if !ok {
		t.Fatal("not a plain form")
	}
	return ln, r
}

// TestSendAndTake: the request goes out as HTTP/1.1 the daemon's server reads, and the
// client takes its connection only for the same request; a request with no one listening
// is not sent.
func TestSendAndTake(t *testing.T) {
	ln, r := listenFor(t)
	sock := r.Socket
	sent = send(r, 0)
	if sent == nil {
		t.Fatal("not sent")
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(req.Body)
	if req.Method != "POST" || req.URL.Path != "/v1/restart" || req.Header.Get("Content-Type") != "application/json" ||
		!req.Close || string(got) != `{"now":true,"wait":true,"source":"cli"}` {
		t.Fatalf("read %s %s %v close=%v %s", req.Method, req.URL.Path, req.Header, req.Close, got)
	}

	if f := Take(sock, "POST", "/v1/restart", []byte(`{"source":"cli"}`)); f != nil || sent != nil {
		t.Fatal("another request took the early connection")
	}
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the early connection of a request not taken is still open: %v", err)
	}

	sent = send(r, 0)
	if f := Take(sock, "POST", "/v1/restart", r.Body); f == nil {
		t.Fatal("the same request did not take the early connection")
	} else {
		f.Close()
	}
	if Take(sock, "POST", "/v1/restart", r.Body) != nil {
		t.Fatal("taken twice")
	}

	r.Socket = filepath.Join(t.TempDir(), "nobody.sock")
	if send(r, 0) != nil {
		t.Fatal("sent with no one listening")
	}
}

// TestSendHoldsForTheReply: with a hold, send returns once the daemon's reply begins to
// arrive, and the reply is still whole on the connection for the control client (the wait
// peeks); with a daemon that says nothing, send gives up after the hold and the connection
// is nonblocking again, as the control client's poller needs it.
func TestSendHoldsForTheReply(t *testing.T) {
	ln, r := listenFor(t)

	const reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
	done := make(chan *Request)
	go func() { done <- send(r, 60e9) }()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, reply)
	c.Close()
	var got *Request
	select {
	case got = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("send still waits, 10 s after the reply came")
	}
	if got == nil {
		t.Fatal("not sent")
	}
	b, err := io.ReadAll(got.conn)
	got.conn.Close()
	if err != nil || string(b) != reply {
		t.Fatalf("read %q, %v after the hold; want the whole reply", b, err)
	}

	go func() { done <- send(r, 20e6) }()
	c, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got = <-done // no reply: only the hold ends the wait
	if got == nil {
		t.Fatal("not sent")
	}
	defer got.conn.Close()
	sc, err := got.conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	sc.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) })
	if err != nil || flags&unix.O_NONBLOCK == 0 {
		t.Fatalf("flags %#x, %v: the connection is left blocking", flags, err)
	}
}
