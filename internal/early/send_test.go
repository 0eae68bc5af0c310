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
)

// TestSendAndTake: the request goes out as HTTP/1.1 the daemon's server reads, and the
// client takes its connection only for the same request; a request with no one listening
// is not sent.
func TestSendAndTake(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r, ok := Parse([]string{"--now", "--wait", "--socket", sock}, os.Getenv)
	if !ok {
		t.Fatal("not a plain form")
	}
	sent = send(r)
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

	sent = send(r)
	if f := Take(sock, "POST", "/v1/restart", r.Body); f == nil {
		t.Fatal("the same request did not take the early connection")
	} else {
		f.Close()
	}
	if Take(sock, "POST", "/v1/restart", r.Body) != nil {
		t.Fatal("taken twice")
	}

	r.Socket = filepath.Join(t.TempDir(), "nobody.sock")
	if send(r) != nil {
		t.Fatal("sent with no one listening")
	}
}
