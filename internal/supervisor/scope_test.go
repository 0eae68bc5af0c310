//go:build unix

package supervisor

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/probe"
)

// sigLog reads a helper-child gateway's sig-log: its lines and the helper's pid.
func sigLog(t *testing.T, file string) (lines []string, helper int) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 { // an empty file, or a line being written
			continue
		}
		if f[0] == "helper" && f[2] == "started" {
			helper, _ = strconv.Atoi(f[1])
			continue
		}
		lines = append(lines, f[0]+" "+f[2]) // the role and the signal
	}
	return lines, helper
}

// TestRealStopScope stops a gateway that runs a helper in its group, the way OpenClaw
// does, and checks which signal reached which process. With scope main only the gateway
// gets SIGTERM and stops its helper itself (with SIGINT); with scope group both get
// SIGTERM from schedd; a gateway that ignores SIGTERM with scope main is killed with its
// whole group at the stop timeout, the helper never having had a signal from schedd.
func TestRealStopScope(t *testing.T) {
	for _, tc := range []struct {
		name        string
		main        bool
		ignoreTerm  bool
		want, never []string
		reason      api.ExitReason
	}{
		{"main", true, false, []string{"leader SIGTERM", "helper SIGINT"}, []string{"helper SIGTERM"}, api.ExitStop},
		{"group", false, false, []string{"helper SIGTERM", "leader SIGTERM"}, nil, api.ExitStop},
		{"main ignoring SIGTERM", true, true, []string{"leader SIGTERM"}, []string{"helper SIGTERM", "helper SIGINT"},
			api.ExitKilledAfterTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "signals")
			opts := []string{"helper-child", "sig-log=" + file}
			if tc.ignoreTerm {
				opts = append(opts, "ignore-term")
			}
			cfg := realConfig(t, opts...)
			cfg.StopMain = tc.main
			cfg.StopTimeout = 2 * time.Second
			if tc.ignoreTerm {
				cfg.StopTimeout = 300 * time.Millisecond
			}
			h := runReal(t, cfg, false)
			h.waitFor("ready", func(st api.Gateway) bool { return st.State == api.GatewayReady })
			deadline := time.Now().Add(10 * time.Second)
			var helper int
			for helper == 0 && time.Now().Before(deadline) {
				if _, err := os.Stat(file); err == nil {
					_, helper = sigLog(t, file)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if helper == 0 {
				t.Fatal("the gateway's helper did not start")
			}
			h.stop()
			got, _ := sigLog(t, file)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("signals received = %q, want %q among them", got, w)
				}
			}
			for _, n := range tc.never {
				if slices.Contains(got, n) {
					t.Errorf("signals received = %q, want no %q", got, n)
				}
			}
			if alive(helper) {
				t.Errorf("helper %d outlived the stop", helper)
			}
			st := h.sup.Status()
			if st.LastExit == nil || st.LastExit.Reason != tc.reason {
				t.Errorf("last exit = %+v, want reason %s", st.LastExit, tc.reason)
			}
		})
	}
}

// TestRealSignalRestartWaitsForProbeDown: a real gateway restarted with SIGUSR2 keeps
// answering /readyz 200 for 100 ms, then 503 for 700 ms: the restart is done only after
// that, with the same pid.
func TestRealSignalRestartWaitsForProbeDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := realConfig(t, "http="+addr, "usr2-down=700ms")
	cfg.Readiness = Readiness{Probe: probe.HTTP{URL: "http://" + addr + "/readyz"}, Timeout: 10 * time.Second}
	cfg.SignalDownWait = 5 * time.Second
	h := runReal(t, cfg, false)
	pid := h.waitFor("ready", func(st api.Gateway) bool { return st.State == api.GatewayReady }).PID
	t0 := time.Now()
	res, err := h.sup.Reload(context.Background(), syscall.SIGUSR2)
	took := time.Since(t0)
	if err != nil || !res.OK || res.PID != pid || res.PreviousPID != pid {
		t.Fatalf("reload %+v %v", res, err)
	}
	if took < 800*time.Millisecond {
		t.Fatalf("restart done %v after SIGUSR2, before /readyz was back", took)
	}
}
