//go:build unix

package server

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/schedd/schedd/internal/testgateway"
)

// countingListener counts Accept calls.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	l.n.Add(1)
	return l.Listener.Accept()
}

// R-SUP-09 on the control API: a client connects while schedd has no descriptor left to
// accept it. The accept error (EMFILE) is logged and retried on a backoff, up to a second
// apart, instead of spinning; the server stays up and answers the waiting client once
// descriptors are free again.
func TestAcceptBackoffEMFILE_RSUP09(t *testing.T) {
	path := socketPath(t)
	ln, err := Listen(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	cl := &countingListener{Listener: ln}
	srv := New(Options{Backend: fakeBackend{}, Logger: zap.New(core)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, cl) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()

	fds := testgateway.ExhaustFDs(t)
	fds.Give(1) // the client's socket; the server has none left to accept it
	c, err := net.Dial("unix", path)
	if err != nil {
		fds.Release()
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET /v1/status HTTP/1.1\r\nHost: schedd\r\n\r\n")); err != nil {
		fds.Release()
		t.Fatal(err)
	}
	start := cl.n.Load()
	time.Sleep(1500 * time.Millisecond)
	accepts := cl.n.Load() - start
	fds.Release()

	// net/http retries a failed accept after 5 ms, doubling to 1 s: about ten tries in
	// 1.5 s; a loop without a pause makes millions.
	if accepts < 2 || accepts > 30 {
		t.Errorf("%d accept calls in 1.5 s out of descriptors, want a handful", accepts)
	}
	if n := logs.FilterMessageSnippet("too many open files").Len(); n == 0 {
		t.Errorf("no EMFILE logged; logs: %v", logs.All())
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("the waiting client got no answer once descriptors were free: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if !strings.Contains(resp.Header.Get("Content-Type"), "json") {
		t.Fatalf("reply %v", resp.Header)
	}
}
