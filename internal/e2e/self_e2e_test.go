//go:build unix

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
	"github.com/schedd/schedd/internal/handoff"
)

// startDaemonToFile is startDaemon with schedd's output in a file: a detached successor
// inherits the file, where a pipe would keep the test's reader waiting for it.
func startDaemonToFile(t *testing.T, o daemonOpts) (*testDaemon, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	logPath := filepath.Join(t.TempDir(), "schedd.log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := newDaemon(t, o)
	d.cmd.Stdout, d.cmd.Stderr = f, f
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		d.code = exitCode(d.cmd.Wait())
		close(d.done)
	}()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			d.cmd.Process.Signal(syscall.SIGKILL)
			<-d.done
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("schedd output:\n%s", b)
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := d.status(); err == nil {
			return d, logPath
		}
		select {
		case <-d.done:
			t.Fatalf("schedd exited with %d before serving", d.code)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("schedd did not serve its socket in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func restartDaemon(t *testing.T, socket string) api.SelfRespawn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out struct {
		Daemon api.SelfRespawn `json:"daemon"`
	}
	if err := client.New(socket).Do(ctx, "POST", "/v1/restart", map[string]any{"daemon": true}, &out); err != nil {
		t.Fatalf("POST /v1/restart {daemon: true}: %v", err)
	}
	return out.Daemon
}

// waitGone waits until pid has exited (a zombie counts as gone).
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still alive", what, pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestE2ESelfRespawnSpawned is the spawned mode with real processes (R-SUP-08's happy
// path, RELIABILITY lesson 5): with no service manager, `restart --daemon` checks the
// binary, starts a detached successor, stops the gateway gracefully and exits 0; the
// successor takes the state-dir lock and the socket and starts a new gateway; the old
// schedd and the old gateway are gone, and once the successor is stopped nothing of the
// tree is left.
func TestE2ESelfRespawnSpawned(t *testing.T) {
	t.Parallel()
	d, logPath := startDaemonToFile(t, daemonOpts{gateway: []string{}})
	st := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	oldPID, oldGateway := d.cmd.Process.Pid, st.Gateway.PID

	res := restartDaemon(t, d.socket)
	if res.Mode != string(handoff.Spawned) || res.PID <= 0 || res.PID == oldPID {
		t.Fatalf("result %+v, want spawned with the successor's pid", res)
	}
	succ := res.PID
	t.Cleanup(func() {
		if alive(succ) {
			syscall.Kill(succ, syscall.SIGKILL)
		}
	})
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("old schedd exit code %d, want 0", code)
	}
	waitGone(t, oldGateway, "the old gateway")

	st = d.waitFor("the successor's gateway", func(g api.Gateway) bool {
		return g.State == api.GatewayReady && g.PID != oldGateway
	})
	if st.Schedd.PID != succ {
		t.Fatalf("schedd pid %d on the socket, want the successor %d", st.Schedd.PID, succ)
	}
	lock, err := os.ReadFile(filepath.Join(d.dir, "schedd.lock"))
	if err != nil || strings.TrimSpace(string(lock)) != strconv.Itoa(succ) {
		t.Fatalf("lock file holds %q (%v), want the successor's pid %d", lock, err, succ)
	}
	if sid, _ := syscall.Getpgid(succ); sid == syscall.Getpgrp() {
		t.Fatal("the successor runs in the test's process group, not detached")
	}
	newGateway := st.Gateway.PID
	if env := readFile(t, "/proc/"+strconv.Itoa(newGateway)+"/environ"); strings.Contains(env, handoff.EnvRespawnFD) || strings.Contains(env, handoff.EnvRespawnPID) {
		t.Errorf("the new gateway inherited the hand-over variables")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.New(d.socket).Do(ctx, "POST", "/v1/stop", nil, nil); err != nil {
		t.Fatal(err)
	}
	waitGone(t, succ, "the successor")
	waitGone(t, newGateway, "the successor's gateway")
	if log, _ := os.ReadFile(logPath); !strings.Contains(string(log), "taking over") {
		t.Errorf("the successor did not log the take-over:\n%s", log)
	}
}

// TestE2ESelfRespawnCheckFails is R-SUP-08's failure path: when the binary check fails
// (the config file in use no longer validates), the daemon keeps running with the same
// gateway and the result says why.
func TestE2ESelfRespawnCheckFails(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, "gateway:\n  stop: {timeout: 5s}\n")
	d, _ := startDaemonToFile(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{}})
	st := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	if err := os.WriteFile(cfg, []byte("gateway:\n  stopp: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := restartDaemon(t, d.socket)
	if res.Mode != string(handoff.Failed) || !strings.Contains(res.Detail, "config validate") || !strings.Contains(res.Detail, "keeps running") {
		t.Fatalf("result %+v, want failed naming the config check", res)
	}
	time.Sleep(200 * time.Millisecond)
	st2 := d.waitFor("still ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	if st2.Schedd.PID != d.cmd.Process.Pid || st2.Gateway.PID != st.Gateway.PID {
		t.Fatalf("the daemon or its gateway changed: %+v %+v", st2.Schedd, st2.Gateway)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// TestE2ESelfRespawnDisabled: SCHEDD_NO_RESPAWN keeps schedd as it is.
func TestE2ESelfRespawnDisabled(t *testing.T) {
	t.Parallel()
	d, _ := startDaemonToFile(t, daemonOpts{gateway: []string{}, env: []string{"SCHEDD_NO_RESPAWN=1"}})
	d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	if res := restartDaemon(t, d.socket); res.Mode != string(handoff.Disabled) || res.PID != 0 {
		t.Fatalf("result %+v, want disabled", res)
	}
	if st, err := d.status(); err != nil || st.Schedd.PID != d.cmd.Process.Pid {
		t.Fatalf("status %+v, %v", st.Schedd, err)
	}
}
