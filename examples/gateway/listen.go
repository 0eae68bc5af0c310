package main

import (
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
)

// listeners are the sockets the gateway serves on: the ones it inherited with systemd's
// protocol (schedd's gateway.sockets, a systemd .socket unit; LISTEN_PID must be this
// process) or, without any, a socket of its own on addr.
func listeners(addr string) []net.Listener {
	lns, err := activation.Listeners()
	if err != nil {
		log.Fatalf("inherited sockets: %v", err)
	}
	var out []net.Listener
	for _, ln := range lns {
		if ln != nil { // a passed socket that is not a stream listener
			out = append(out, ln)
		}
	}
	if len(out) > 0 {
		return out
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatalf("listen: %v", err)
	}
	return []net.Listener{ln}
}

// server serves HTTP on shared listeners and drains without losing a request.
type server struct {
	srv     *http.Server
	lns     []net.Listener
	serving sync.WaitGroup
	conns   sync.Map // net.Conn -> http.ConnState, until closed
}

func newServer(h http.Handler, lns []net.Listener) *server {
	s := &server{lns: lns, srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}}
	s.srv.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateClosed || st == http.StateHijacked {
			s.conns.Delete(c)
		} else {
			s.conns.Store(c, st)
		}
	}
	return s
}

func (s *server) serve() {
	for _, ln := range s.lns {
		s.serving.Go(func() { s.srv.Serve(ln) })
	}
}

// drain stops accepting and answers every connection accepted so far, up to timeout.
// Not http.Server.Shutdown: it drops a request that arrives after it began on a
// connection already accepted, and on a socket shared with the next gateway (schedd's
// restart.overlap) connections are accepted up to the moment the listener closes. The
// connections still queued stay in the socket for the next gateway.
func (s *server) drain(timeout time.Duration) {
	s.srv.SetKeepAlivesEnabled(false)
	for _, ln := range s.lns {
		ln.Close()
	}
	s.serving.Wait()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		left := 0
		s.conns.Range(func(c, st any) bool {
			if st == http.StateIdle {
				c.(net.Conn).Close()
			}
			left++
			return true
		})
		if left == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	log.Printf("drain: connections still open after %s", timeout)
}
