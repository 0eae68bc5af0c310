//go:build unix

package e2e

import (
	"errors"
	"net"
	"os"
	"runtime"
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
	t.Parallel()
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
	t.Parallel()
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

// killSchedd SIGKILLs the daemon, as the OOM killer or `kill -9` would, and waits for it.
func (d *testDaemon) killSchedd() {
	d.t.Helper()
	d.cmd.Process.Signal(syscall.SIGKILL)
	d.wait(10 * time.Second)
}

// TestE2EKilledAndRestarted_RSUP01 is R-SUP-01: schedd is SIGKILLed while its gateway and
// the gateway's grandchild (which ignores SIGTERM) run, and its service manager starts it
// again on the same state dir. The new schedd finds the old gateway in gateway.pid and
// stops what is left of its group before it starts its own: exactly one gateway afterwards.
// Linux kills the old leader with schedd (its parent-death signal), not the grandchild;
// on macOS neither dies, and the same record stops both.
func TestE2EKilledAndRestarted_RSUP01(t *testing.T) {
	t.Parallel()
	gc := t.TempDir() + "/grandchild"
	cfg := writeConfig(t, "gateway:\n  stop: {timeout: 2s}\n") // the grandchild ignores SIGTERM
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{"grandchild=" + gc}})
	old := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady }).Gateway.PID
	rec := strings.Fields(readFile(t, d.dir+"/gateway.pid"))
	if len(rec) != 2 || rec[0] != strconv.Itoa(old) {
		t.Fatalf("gateway.pid holds %q, want the pid %d and its start time", rec, old)
	}
	var grandchild int
	for deadline := time.Now().Add(5 * time.Second); grandchild == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		grandchild, _ = strconv.Atoi(strings.TrimSpace(readFile(t, gc)))
	}
	if grandchild == 0 {
		t.Fatal("the gateway's grandchild did not start")
	}
	d.killSchedd()

	d2 := startDaemon(t, daemonOpts{dir: d.dir, args: []string{"--config", cfg}, gateway: []string{}})
	st := d2.waitFor("a new gateway", func(g api.Gateway) bool { return g.State == api.GatewayReady && g.PID != old })
	waitGone(t, old, "the old gateway")
	waitGone(t, grandchild, "the old gateway's grandchild")
	if !alive(st.Gateway.PID) {
		t.Fatalf("the new gateway %d is not running", st.Gateway.PID)
	}
	if !d2.waitLog("stopped the gateway an earlier schedd left running") {
		t.Errorf("the new schedd does not say it stopped the old gateway:\n%s", d2.out.String())
	}
	d2.cmd.Process.Signal(syscall.SIGTERM)
	if code := d2.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if _, err := os.Stat(d.dir + "/gateway.pid"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("gateway.pid left after a clean stop: %v", err)
	}
}

// TestE2EGatewayDiesWithSchedd_RSUP02 is R-SUP-02: schedd is SIGKILLed and nobody starts
// it again; the gateway must not live on unsupervised. On Linux its parent-death signal
// (SIGKILL, tied to the thread that forked it) ends it within a few seconds. macOS has no
// such signal: there the next schedd stops it through gateway.pid.
func TestE2EGatewayDiesWithSchedd_RSUP02(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("no parent-death signal here; the gateway is stopped by the next schedd")
	}
	d := startDaemon(t, daemonOpts{gateway: []string{}})
	pid := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady }).Gateway.PID
	d.killSchedd()
	begin := time.Now()
	waitGone(t, pid, "the gateway")
	if took := time.Since(begin); took > 3*time.Second {
		t.Fatalf("the gateway outlived schedd by %v, want under 3 s", took)
	}
}

// TestE2EDiesMidRestart_RSUP04 is R-SUP-04: schedd is SIGKILLed in the middle of a
// restart, while the old gateway drains (it takes 3 s to exit) and before the new one is
// started. Started again on the same state dir, schedd runs one new gateway, and the
// interrupted restart shows in its status as completed, under its original reason.
func TestE2EDiesMidRestart_RSUP04(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, "gateway:\n  stop: {timeout: 20s}\n  readiness: {notify: {}, timeout: 30s}\n")
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{"ready", "term-delay=3s"}})
	old := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady }).Gateway.PID
	asked := make(chan struct{})
	go func() { cli("restart", "--now", "--reason", "new model", "--socket", d.socket); close(asked) }()
	d.waitFor("the old gateway draining", func(g api.Gateway) bool { return g.State == api.GatewayStopping })
	if rec := readFile(t, d.dir+"/restart.json"); !strings.Contains(rec, "new model") {
		t.Fatalf("no record of the restart in progress: %q", rec)
	}
	d.killSchedd()
	<-asked // the client fails with its schedd

	d2 := startDaemon(t, daemonOpts{dir: d.dir, args: []string{"--config", cfg}, gateway: []string{"ready"}})
	st := d2.waitFor("a new gateway", func(g api.Gateway) bool { return g.State == api.GatewayReady && g.PID != old })
	waitGone(t, old, "the old gateway")
	st, err := d2.status()
	if err != nil {
		t.Fatal(err)
	}
	last := st.Restart.Last
	if last == nil || !last.OK || last.Mode != "recovered" || last.Reason != "new model" ||
		last.PreviousPID != old || last.PID != st.Gateway.PID {
		t.Fatalf("restart.last %+v, want the interrupted restart completed by gateway %d", last, st.Gateway.PID)
	}
	if _, err := os.Stat(d.dir + "/restart.json"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("restart.json left after the restart completed: %v", err)
	}
}
