package supervisor

import (
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

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
		cfg.Ports = []string{"127.0.0.1:18789"}
		fs := newFakeStarter()
		h := start(t, cfg, fs, WithPortBusy(func(addr string) bool {
			checks.Add(1)
			if addr != cfg.Ports[0] {
				t.Errorf("checked %q, want %q", addr, cfg.Ports[0])
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

// TestPortsWaitOnlyForListed_RINPUT07 is R-INPUT-07 in the supervisor: the wait covers
// exactly the addresses of Ports. With none (gateway.ports: []) nothing is checked and the
// gateway starts at once, however busy its probe's port is; with two, the start waits
// until both are free; the port_in_use line names the setting to change.
func TestPortsWaitOnlyForListed_RINPUT07(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.Ports = []string{}
		fs := newFakeStarter()
		start(t, cfg, fs, WithPortBusy(func(addr string) bool {
			t.Errorf("checked %q with no ports to wait for", addr)
			return true
		}))
		fs.next(t)
	})
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		busy := map[string]bool{"127.0.0.1:1": true, "[::1]:2": true}
		var checked []string
		cfg := testConfig()
		cfg.Ports = []string{"127.0.0.1:1", "[::1]:2"}
		cfg.PortsFrom = "gateway.ports"
		core, logs := observer.New(zapcore.InfoLevel)
		fs := newFakeStarter()
		h := start(t, cfg, fs, WithLogger(zap.New(core)), WithPortBusy(func(addr string) bool {
			mu.Lock()
			defer mu.Unlock()
			checked = append(checked, addr)
			return busy[addr]
		}))
		h.sleepTo(10 * time.Second)
		fs.none(t)
		st := h.sup.Status()
		if st.LastExit == nil || st.LastExit.Reason != api.ExitPortInUse || !strings.Contains(st.LastExit.Error, "127.0.0.1:1, [::1]:2") {
			t.Fatalf("after the wait: last_exit %+v, want port_in_use naming both", st.LastExit)
		}
		errs := logs.FilterLevelExact(zapcore.ErrorLevel).All()
		if len(errs) != 1 || !strings.Contains(errs[0].ContextMap()["hint"].(string), "gateway.ports: []") ||
			errs[0].ContextMap()["from"] != "gateway.ports" {
			t.Fatalf("port_in_use log %+v, want one ERROR naming gateway.ports", errs)
		}
		mu.Lock()
		busy["127.0.0.1:1"] = false
		mu.Unlock()
		h.sleepTo(20 * time.Second)
		fs.none(t) // [::1]:2 is still held
		mu.Lock()
		busy["[::1]:2"] = false
		if !slices.Contains(checked, "[::1]:2") || slices.ContainsFunc(checked, func(a string) bool { return !slices.Contains(cfg.Ports, a) }) {
			t.Errorf("checked %q, want only %q", checked, cfg.Ports)
		}
		mu.Unlock()
		h.sleepTo(22 * time.Second)
		fs.next(t)
	})
}
