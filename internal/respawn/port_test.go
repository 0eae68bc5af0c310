package respawn

import (
	"net"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// TestPortStillBound_RCHILD18 is R-CHILD-18: while something still holds the gateway's
// port no gateway is started; after the bounded wait (10 s) the start fails as port_in_use
// and waits out the backoff, polling the port at most once a second; once the port is
// released exactly one gateway starts.
func TestPortStillBound_RCHILD18(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var busy atomic.Bool
		var checks atomic.Int32
		busy.Store(true)
		cfg := testConfig()
		cfg.Port = "127.0.0.1:18789"
		fs := newFakeStarter()
		h := start(t, cfg, fs, WithPortBusy(func(addr string) bool {
			checks.Add(1)
			if addr != cfg.Port {
				t.Errorf("checked %q, want %q", addr, cfg.Port)
			}
			return busy.Load()
		}))
		fs.none(t)
		if st := h.state(); st != api.GatewayStarting {
			t.Fatalf("state %s while the port is busy, want starting", st)
		}
		h.sleepTo(10 * time.Second)
		st := h.sup.Status()
		if st.State != api.GatewayBackoff || st.LastExit == nil || st.LastExit.Reason != api.ExitPortInUse {
			t.Fatalf("after the wait: %+v last_exit %+v, want backoff after port_in_use", st, st.LastExit)
		}
		fs.none(t)
		h.sleepTo(15 * time.Second) // the backoff (1 s) is over: waiting for the port again
		fs.none(t)
		if n := checks.Load(); n > 30 {
			t.Fatalf("%d port checks in 15 s: a tight loop", n)
		}
		busy.Store(false)
		h.sleepTo(16 * time.Second)
		fs.next(t)
		fs.none(t)
		if st := h.state(); st != api.GatewayReady {
			t.Fatalf("state %s once the port is free, want ready", st)
		}
	})
}

// TestPortInUse checks the real probe against a listener, and a free port.
func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if !portInUse(addr) {
		t.Fatalf("%s has a listener but counts as free", addr)
	}
	ln.Close()
	if portInUse(addr) {
		t.Fatalf("%s is free but counts as in use", addr)
	}
}
