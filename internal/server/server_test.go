//go:build unix

package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeBackend struct{}

func (fakeBackend) Status(context.Context) api.Status {
	return api.Status{Schedd: api.Daemon{PID: 7, Version: "test"}}
}

func socketPath(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return filepath.Join(d, "s.sock")
}

// serve starts a server on a fresh socket and returns a client for it.
func serve(t *testing.T, opts Options) (*client.Client, *Server) {
	t.Helper()
	path := socketPath(t)
	ln, err := Listen(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Backend == nil {
		opts.Backend = fakeBackend{}
	}
	srv := New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	c := client.New(path)
	// Before the server stops (cleanups run last first): a connection the client dialled
	// and never used is new to the server, and its shutdown waits up to 5 s for such ones.
	t.Cleanup(c.Close)
	return c, srv
}

func TestStatus(t *testing.T) {
	c, _ := serve(t, Options{})
	st, err := c.Status(context.Background())
	if err != nil || st.Schedd.PID != 7 {
		t.Fatalf("status %+v, %v", st, err)
	}
}

// TestSocketOwnerOnly is part of R-SIG-07: the socket file is created owner-only.
func TestSocketOwnerOnly(t *testing.T) {
	c, _ := serve(t, Options{})
	fi, err := os.Stat(c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want 0600", fi.Mode().Perm())
	}
}

// TestStaleSocket is part of R-SIG-07: a socket file nobody answers on is replaced; one a
// live daemon answers on is not, and nothing else is ever removed.
func TestStaleSocket(t *testing.T) {
	path := socketPath(t)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	// Live: refuse.
	if _, err := Listen(path, 0o600); !errors.Is(err, ErrInUse) {
		t.Fatalf("Listen on a live socket: %v, want ErrInUse", err)
	}
	// Dead (listener closed without unlinking): replace.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatal("stale socket file should still exist")
	}
	ln2, err := Listen(path, 0o600)
	if err != nil {
		t.Fatalf("Listen on a stale socket: %v", err)
	}
	ln2.Close()
	// A regular file in the way is never removed.
	if err := os.WriteFile(path, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(path, 0o600); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a regular file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "data" {
		t.Fatal("the regular file was touched")
	}
}

func TestErrorShape(t *testing.T) {
	c, srv := serve(t, Options{MaxBody: 16})
	srv.Handle("POST /v1/echo", func(w http.ResponseWriter, r *http.Request) {
		var v struct {
			A int `json:"a"`
		}
		if DecodeJSON(w, r, &v) {
			WriteJSON(w, 200, v)
		}
	})
	ctx := context.Background()
	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		code               string
	}{
		{"unknown endpoint", "GET", "/v1/nope", nil, 404, api.CodeNotFound},
		{"unknown field", "POST", "/v1/echo", map[string]int{"b": 1}, 400, api.CodeBadRequest},
		{"wrong type", "POST", "/v1/echo", map[string]string{"a": "x"}, 400, api.CodeBadRequest},
		{"over the cap", "POST", "/v1/echo", map[string]string{"a": strings.Repeat("x", 100)}, 413, api.CodeTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Do(ctx, tc.method, tc.path, tc.body, nil)
			ae, ok := errors.AsType[*api.Error](err)
			if !ok || ae.Status != tc.status || ae.Code != tc.code || ae.Message == "" {
				t.Fatalf("got %v (%#v), want %d %s", err, ae, tc.status, tc.code)
			}
		})
	}
	var out struct {
		A int `json:"a"`
	}
	if err := c.Do(ctx, "POST", "/v1/echo", map[string]int{"a": 3}, &out); err != nil || out.A != 3 {
		t.Fatalf("echo: %v %+v", err, out)
	}
}

// TestPeerCheck: a connection that fails the peer check is closed before it is served.
func TestPeerCheck(t *testing.T) {
	c, _ := serve(t, Options{PeerCheck: func(net.Conn) error { return errors.New("not you") }})
	if _, err := c.Status(context.Background()); err == nil {
		t.Fatal("a refused peer got a status")
	}
}

// TestHangingClient is part of R-SIG-07: a client that connects and sends half a request
// does not hold up others, and 100 concurrent clients are all served.
func TestHangingClient(t *testing.T) {
	c, _ := serve(t, Options{RequestTimeout: time.Second})
	hang, err := net.Dial("unix", c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	fmt.Fprint(hang, "GET /v1/status HTTP/1.1\r\nHost: x\r\n") // never finished
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 100 {
		wg.Go(func() {
			if _, err := c.Status(context.Background()); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
