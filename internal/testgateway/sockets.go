//go:build unix

package testgateway

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
)

// The socket options, read by serveInherited:
//
//	sockets            serve HTTP on every socket inherited with systemd's protocol
//	                   (go-systemd's activation: LISTEN_PID must be this pid); each
//	                   answer is "pid N" (after serve-delay per request); it is an error
//	                   to have none
//	sockets-file=FILE  append "pid=P LISTEN_PID=.. LISTEN_FDS=.. LISTEN_FDNAMES=.." first
//	accept-delay=D     wait D before the first accept (a slow start)
//	serve-delay=D      take D to answer each request
//	no-ready-if=FILE   with ready: send no READY=1 while FILE exists
func serveInherited(o options) {
	if f := o["sockets-file"]; f != "" {
		appendLine(f, fmt.Sprintf("pid=%d LISTEN_PID=%s LISTEN_FDS=%s LISTEN_FDNAMES=%s", os.Getpid(),
			os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDS"), os.Getenv("LISTEN_FDNAMES")))
	}
	if f := o["no-ready-if"]; f != "" {
		if _, err := os.Stat(f); err == nil {
			delete(o, "ready")
		}
	}
	if !o.has("sockets") {
		return
	}
	named, err := activation.ListenersWithNames()
	if err != nil {
		fail("inherited sockets: %v", err)
	}
	var lns []net.Listener
	var names []string
	for name, ls := range named {
		for _, ln := range ls {
			lns = append(lns, ln)
			names = append(names, name+"="+ln.Addr().String())
		}
	}
	if len(lns) == 0 {
		fail("no inherited sockets (LISTEN_PID is not this pid %d, or LISTEN_FDS is unset)", os.Getpid())
	}
	delay := o.dur("serve-delay")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		fmt.Fprintf(w, "pid %d\n", os.Getpid())
	})
	fmt.Println("fake gateway serves inherited sockets", strings.Join(names, " "), "pid", strconv.Itoa(os.Getpid()))
	srv := &http.Server{Handler: h}
	var conns sync.Map // net.Conn -> http.ConnState, until closed
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateClosed || st == http.StateHijacked {
			conns.Delete(c)
		} else {
			conns.Store(c, st)
		}
	}
	var serving sync.WaitGroup
	serving.Add(len(lns))
	drainMu.Lock()
	// drain stops accepting and answers every connection accepted so far. Not with
	// Server.Shutdown: it drops a request that arrives after it began on a connection
	// already accepted, and on a shared socket a connection is accepted at any moment.
	drain = func() {
		srv.SetKeepAlivesEnabled(false)
		for _, ln := range lns {
			ln.Close()
		}
		serving.Wait()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			left := 0
			conns.Range(func(c, st any) bool {
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
	}
	drainMu.Unlock()
	go func() {
		time.Sleep(o.dur("accept-delay"))
		for _, ln := range lns {
			go func() {
				defer serving.Done()
				srv.Serve(ln)
			}()
		}
	}()
}

var (
	drainMu sync.Mutex
	drain   = func() {}
)

// drainInherited stops serving the inherited sockets gracefully (on SIGTERM).
func drainInherited() {
	drainMu.Lock()
	d := drain
	drainMu.Unlock()
	d()
}
