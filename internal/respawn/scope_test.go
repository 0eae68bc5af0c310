//go:build unix

package respawn

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
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
		name       string
		main       bool
		ignoreTerm bool
		want       []string
		reason     api.ExitReason
	}{
		{"main", true, false, []string{"leader SIGTERM", "helper SIGINT"}, api.ExitStop},
		{"group", false, false, []string{"helper SIGTERM", "leader SIGTERM"}, api.ExitStop},
		{"main ignoring SIGTERM", true, true, []string{"leader SIGTERM"}, api.ExitKilledAfterTimeout},
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
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("signals received = %q, want %q", got, want)
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
