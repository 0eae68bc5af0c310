package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
)

// Polling for a busy port starts at portPollMin and doubles up to portPollMax.
const (
	portPollMin = 50 * time.Millisecond
	portPollMax = time.Second
)

// portInUse reports whether something still holds addr: a connection opens, or a bind to
// it fails with EADDRINUSE (a socket bound but not listening, or Linux's view of a
// listener on the wildcard address). Other bind errors (not a local address, a privileged
// port) say nothing about the gateway and count as free.
func portInUse(addr string) bool {
	if c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond); err == nil {
		c.Close()
		return true
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return errors.Is(err, syscall.EADDRINUSE)
	}
	ln.Close()
	return false
}

// busyPorts returns the addresses of cfg.Ports that are still in use.
func (s *Supervisor) busyPorts() []string {
	var busy []string
	for _, addr := range s.cfg.Ports {
		if s.portBusy(addr) {
			busy = append(busy, addr)
		}
	}
	return busy
}

// waitPortFree waits, before a start, until the addresses the gateway binds are free, for
// PortWait at most (R-CHILD-18): an old gateway or an orphan of it that still listens
// would make the new one fail to bind and crash loop, or, with SO_REUSEPORT, run beside
// it. Requests are answered meanwhile; a restart request joins pending. It returns the
// outcome that ends this start (stopped, or port_in_use) and end=false when all are free.
func (s *Supervisor) waitPortFree(ctx context.Context, pending []request) (outcome, []request, bool) {
	busy := s.busyPorts()
	if len(busy) == 0 {
		return outcome{}, pending, false
	}
	s.log.Warn("the gateway's port is still in use; waiting for it to be released before starting the gateway",
		zap.Strings("address", busy), zap.Duration("up_to", PortWait), zap.String("from", s.cfg.PortsFrom))
	deadline := time.Now().Add(PortWait)
	delay := portPollMin
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return outcome{stopped: true}, pending, true
		case <-s.notifyc: // no gateway: nothing to hear from
		case r := <-s.reqc:
			close(r.ack)
			if r.kind == reqRestart || r.kind == reqReload {
				pending = append(pending, r)
			}
		case <-t.C:
			if busy = s.busyPorts(); len(busy) == 0 {
				s.log.Info("the gateway's port is free again", zap.Strings("address", s.cfg.Ports))
				return outcome{}, pending, false
			}
			left := time.Until(deadline)
			if left <= 0 {
				e := api.Exit{Reason: api.ExitPortInUse, At: time.Now(),
					Error: fmt.Sprintf("%s still in use after %s", strings.Join(busy, ", "), PortWait)}
				s.log.Error("the gateway's port is still in use; not starting a second gateway on it",
					zap.Strings("address", busy), zap.Duration("waited", PortWait),
					zap.String("from", s.cfg.PortsFrom), zap.String("hint", portHint))
				s.recordExit(e)
				failRestarts(pending, "port in use: "+e.Error)
				return outcome{exit: e}, nil, true
			}
			delay = min(2*delay, portPollMax)
			t.Reset(min(delay, left))
		}
	}
}

// portHint is the way out of a wait for a port that another process serves on purpose.
const portHint = "if another process serves this port on purpose (a proxy, a health sidecar), " +
	"set gateway.ports to the addresses the gateway itself binds, or gateway.ports: [] to start it without waiting"
