//go:build unix

package main

import (
	"slices"
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
