//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
)

// starts counts the gateway's starts in its pid-file.
func starts(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(strings.Fields(string(b)))
}

// waitStarts waits until the pid-file counts n starts (5 s at most; more is a failure).
func waitStarts(t *testing.T, file string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := starts(t, file)
		if got == n {
			return
		}
		if got > n || time.Now().After(deadline) {
			t.Fatalf("%d starts of the gateway, want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestE2ENoRestartExitCode: a gateway that exits 78, listed in
// gateway.no_restart_exit_codes, is failed in `schedd status` (text and JSON) with its code
// and last output lines, is logged once and not started again; `schedd restart --wait`
// starts it (and reports the new pid), and so does a config reload (SIGHUP).
func TestE2ENoRestartExitCode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	broken, pids := filepath.Join(dir, "broken"), filepath.Join(dir, "pids")
	if err := os.WriteFile(broken, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, "gateway: {no_restart_exit_codes: [78], backoff: {initial: 10ms, max: 10ms}}\nrestart: {cooldown: 0s, delay: 0s}\n")
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg},
		gateway: []string{"exit=78", "after=50ms", "exit-while=" + broken, "pid-file=" + pids}})
	failed := func(g api.Gateway) bool { return g.State == api.GatewayFailed }
	st := d.waitFor("failed", failed).Gateway
	if e := st.LastExit; e == nil || e.Code == nil || *e.Code != 78 || len(e.Output) == 0 ||
		!strings.HasPrefix(e.Output[0], "fake gateway started") {
		t.Fatalf("last exit %+v", st.LastExit)
	}
	code, out, _ := cli("status", "--json", "--socket", d.socket)
	var doc struct {
		Gateway struct {
			State    string `json:"state"`
			LastExit struct {
				Code   *int     `json:"code"`
				Output []string `json:"output"`
			} `json:"last_exit"`
		} `json:"gateway"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || doc.Gateway.State != "failed" ||
		doc.Gateway.LastExit.Code == nil || *doc.Gateway.LastExit.Code != 78 || len(doc.Gateway.LastExit.Output) == 0 {
		t.Fatalf("status --json = %d %v:\n%s", code, err, out)
	}
	code, out, _ = cli("status", "--socket", d.socket)
	if code != 0 || !strings.Contains(out, "exit (code 78)") || !strings.Contains(out, "| fake gateway started") ||
		!strings.Contains(out, "failed") {
		t.Fatalf("status = %d:\n%s", code, out)
	}
	// A backoff of 10 ms would have restarted it many times by now.
	time.Sleep(time.Second)
	if n := starts(t, pids); n != 1 {
		t.Fatalf("%d starts of a gateway that exited 78, want 1", n)
	}
	if n := strings.Count(d.out.String(), "code that means do not restart"); n != 1 {
		t.Fatalf("the failure was logged %d times, want once:\n%s", n, d.out.String())
	}

	os.Remove(broken) // fixed: the next start lives
	code, reply, errOut := restartCLI(t, d, "--now", "--wait")
	if code != 0 || reply.Result == nil || !reply.Result.OK || reply.Result.PID == 0 || reply.Result.PID == st.LastExit.PID {
		t.Fatalf("restart of a failed gateway: %d %+v %s", code, reply.Result, errOut)
	}
	waitStarts(t, pids, 2)

	// Broken again: failed again; a reload starts it.
	if err := os.WriteFile(broken, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, reply, errOut = restartCLI(t, d, "--now", "--wait"); code != 0 {
		t.Fatalf("restart: %d %+v %s", code, reply.Result, errOut)
	}
	d.waitFor("failed again", failed)
	os.Remove(broken)
	d.cmd.Process.Signal(syscall.SIGHUP)
	d.waitFor("ready after a reload", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	waitStarts(t, pids, 4)
}

// TestE2ESignalMethodHTTP: restart.method signal with an http readiness probe, against a
// gateway that restarts in process on SIGUSR2 and keeps answering /readyz 200 for 100 ms
// first: `schedd restart --wait` returns once /readyz failed and passed again, says the pid
// stayed, and so does `schedd status`.
func TestE2ESignalMethodHTTP(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	cfg := writeConfig(t, "gateway: {readiness: {http: {url: 'http://"+addr+"/readyz'}, timeout: 10s}}\n"+
		"restart: {method: signal, signal: SIGUSR2, cooldown: 0s, signal_down_wait: 3s}\n")
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{"http=" + addr, "usr2-down=700ms"}})
	pid := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady }).Gateway.PID
	code, out, errOut := cli("restart", "--now", "--wait", "--socket", d.socket)
	if want := fmt.Sprintf("restarted in process (signal): pid %d, ready in ", pid); code != 0 || !strings.HasPrefix(out, want) {
		t.Fatalf("restart --now --wait = %d %q %s, want %q...", code, out, errOut, want)
	}
	st, err := d.status()
	if err != nil || st.Restart == nil || st.Restart.Last == nil || st.Restart.Last.DurationMs < 800 ||
		st.Restart.Last.Method != "signal" || st.Gateway.PID != pid {
		t.Fatalf("status after the restart: %+v %v", st.Restart, err)
	}
	if code, out, _ = cli("status", "--socket", d.socket); code != 0 || !strings.Contains(out, fmt.Sprintf("pid %d, restarted in process", pid)) {
		t.Fatalf("status = %d:\n%s", code, out)
	}
	// One restart may ask for the other method: a fresh process, say after an upgrade.
	code, out, errOut = cli("restart", "--now", "--wait", "--method", "respawn", "--socket", d.socket)
	if want := fmt.Sprintf("pid %d -> ", pid); code != 0 || !strings.Contains(out, want) {
		t.Fatalf("restart --method respawn = %d %q %s, want %q", code, out, errOut, want)
	}
	if st, err = d.status(); err != nil || st.Restart.Last.Method != "respawn" || st.Gateway.PID == pid {
		t.Fatalf("status after --method respawn: %+v %+v %v", st.Restart.Last, st.Gateway, err)
	}
	if code, _, errOut = cli("restart", "--method", "reload", "--socket", d.socket); code != exitUsage || !strings.Contains(errOut, "--method") {
		t.Fatalf("restart --method reload = %d %s", code, errOut)
	}
	cl := client.New(d.socket)
	defer cl.Close()
	err = cl.Do(context.Background(), http.MethodPost, "/v1/restart", api.RestartRequest{Method: "reload"}, nil)
	if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, "method") {
		t.Fatalf("POST /v1/restart with method reload: %v", err)
	}
}
