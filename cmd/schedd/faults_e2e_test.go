//go:build unix

package main

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// TestE2ELongDrain_RCHILD11 is R-CHILD-11 with real processes: the gateway takes 2 s to
// exit on SIGTERM, within its 6 s stop timeout. It is not killed, its exit is a plain stop,
// and schedd asks its own service manager (a test NOTIFY_SOCKET) for the stop timeout plus
// the group wait, so systemd's TimeoutStopSec does not cut the drain short either.
func TestE2ELongDrain_RCHILD11(t *testing.T) {
	sm := newFakeServiceManager(t)
	life := t.TempDir() + "/life"
	cfg := writeConfig(t, "gateway:\n  stop: {timeout: 6s}\n  readiness: {notify: {}, timeout: 30s}\n")
	d := startDaemon(t, daemonOpts{
		args:    []string{"--config", cfg},
		gateway: []string{"ready", "term-delay=2s", "life-file=" + life},
		env:     []string{"NOTIFY_SOCKET=" + sm.path},
	})
	d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	start := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Fatalf("schedd exited %v after SIGTERM, before the gateway's 2 s drain", took)
	}
	if !strings.Contains(readFile(t, life), "exit ") {
		t.Fatalf("the gateway did not finish its drain:\n%s", readFile(t, life))
	}
	out := d.out.String()
	if strings.Contains(out, string(api.ExitKilledAfterTimeout)) || strings.Contains(out, "killing its process group") {
		t.Fatalf("the draining gateway was killed:\n%s", out)
	}
	if m := sm.messages(); !slices.Contains(m, "EXTEND_TIMEOUT_USEC=11000000") {
		t.Fatalf("no EXTEND_TIMEOUT_USEC=11000000 (6 s + 5 s) to the service manager: %q", m)
	}
}

// TestE2EPortStillBound_RCHILD18 is R-CHILD-18 with real processes: an orphan (here the
// test) still listens on the port the readiness probe names. schedd starts no gateway
// while it is held, so there is no bind-failure crash loop and never two gateways on
// it; once it is released exactly one gateway starts and becomes ready.
func TestE2EPortStillBound_RCHILD18(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	pids := t.TempDir() + "/pids"
	cfg := writeConfig(t, "gateway:\n  readiness: {http: {url: \"http://"+addr+"/readyz\"}, timeout: 30s}\n")
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{"http=" + addr, "pid-file=" + pids}})
	if !d.waitLog("the gateway's port is still in use", addr) {
		t.Fatalf("no log of the busy port:\n%s", d.out.String())
	}
	time.Sleep(time.Second)
	if st, err := d.status(); err != nil || st.Gateway.PID != 0 || readFile(t, pids) != "" {
		t.Fatalf("a gateway was started on a busy port: %+v %v, pids %q", st.Gateway, err, readFile(t, pids))
	}
	ln.Close()
	st := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	if got := strings.Fields(readFile(t, pids)); len(got) != 1 || got[0] != strconv.Itoa(st.Gateway.PID) {
		t.Fatalf("gateways started %q, want just %d", got, st.Gateway.PID)
	}
}
