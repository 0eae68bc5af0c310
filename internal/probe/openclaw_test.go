package probe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/platform"
)

// fakeOpenClawEnv turns the test binary into a fake `openclaw` CLI: it appends its
// arguments to the file $SCHEDD_FAKE_OPENCLAW_ARGS and answers as the real one does
// (openclaw@2026.9.6) in the scenario the variable names.
const fakeOpenClawEnv = "SCHEDD_FAKE_OPENCLAW"

// Replies as the real CLI prints them (stdout, exit code).
var fakeReplies = map[string]struct {
	out  string
	code int
}{
	"idle": {`{
  "safe": true,
  "counts": {"queueSize": 0, "pendingReplies": 0, "embeddedRuns": 0, "cronRuns": 0,
    "backgroundExecSessions": 0, "rootRequests": 0, "activeTasks": 0, "totalActive": 0},
  "blockers": [],
  "summary": "safe to restart now"
}`, 0},
	"busy": {`{
  "safe": false,
  "counts": {"queueSize": 1, "pendingReplies": 0, "embeddedRuns": 1, "cronRuns": 0,
    "backgroundExecSessions": 0, "rootRequests": 1, "activeTasks": 0, "totalActive": 3},
  "blockers": [{"kind": "embedded-run", "count": 1, "message": "1 embedded run"},
    {"kind": "root-request", "count": 1, "message": "1 active request"}],
  "summary": "restart deferred: 1 embedded run; 1 active request"
}`, 0},
	"unavailable": {`{
  "ok": false,
  "error": {"type": "gateway_request_error", "code": "UNAVAILABLE",
    "message": "gateway.restart.preflight unavailable during gateway suspension",
    "details": {"method": "gateway.restart.preflight", "reason": "gateway-suspending", "phase": "prepared"},
    "retryable": true, "retryAfterMs": 1000}
}`, 1},
	"garbage":     {"Gateway call: gateway.restart.preflight\nsomething went wrong\n", 0},
	"crash":       {"", 1},
	"noSafe":      {`{"counts": {}}`, 0},
	"ready":       {`{"status": "ready", "suspensionId": "09916f14", "expiresAtMs": 1796150730010, "activeCount": 0, "blockers": [], "writeCustody": []}`, 0},
	"draining":    {`{"status": "draining", "suspensionId": "2c3f", "expiresAtMs": 1770000000000, "retryAfterMs": 20000, "activeCount": 2, "blockers": [{"kind": "root-request", "count": 1, "message": "1 active request"}, {"kind": "terminal-session", "count": 1, "message": "1 open terminal session"}]}`, 0},
	"statusReady": {`{"status": "ready", "expiresAtMs": 1796150730010, "writeCustody": []}`, 0},
	"resumed":     {`{"ok": true, "status": "running", "resumed": true}`, 0},
}

func fakeOpenClaw(scenario string, args []string) int {
	if f, err := os.OpenFile(os.Getenv(fakeOpenClawEnv+"_ARGS"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		fmt.Fprintln(f, strings.Join(args, " "))
		f.Close()
	}
	if scenario == "hang" {
		time.Sleep(time.Hour)
	}
	if scenario == "crash" {
		fmt.Fprintln(os.Stderr, "Error: connect ECONNREFUSED 127.0.0.1:18789")
	}
	r := fakeReplies[scenario]
	fmt.Print(r.out)
	return r.code
}

// fakeCLI is an OpenClaw probe whose CLI is the fake above in scenario; args returns
// what each call was given.
func fakeCLI(t *testing.T, scenario string) (OpenClaw, func() []string) {
	exe, _ := os.Executable()
	log := filepath.Join(t.TempDir(), "args")
	env := platform.ChildEnv(os.Environ(), map[string]string{fakeOpenClawEnv: scenario,
		fakeOpenClawEnv + "_ARGS": log, "GORACE": "atexit_sleep_ms=0"})
	o := OpenClaw{Command: []string{exe, "--prefix-arg"}, Port: 18789, Env: env}
	return o, func() []string {
		b, _ := os.ReadFile(log)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}

func TestOpenClawIdle(t *testing.T) {
	o, args := fakeCLI(t, "idle")
	n, d, err := o.InflightDetail(t.Context())
	if err != nil || n != 0 || d == nil || d.Summary != "safe to restart now" || d.Counts["totalActive"] != 0 {
		t.Fatalf("got %d %+v %v", n, d, err)
	}
	if got := args(); !slices.Equal(got, []string{"--prefix-arg gateway call gateway.restart.preflight --json --port 18789"}) {
		t.Fatalf("args %q", got)
	}
}

func TestOpenClawBusy(t *testing.T) {
	o, _ := fakeCLI(t, "busy")
	n, d, err := o.InflightDetail(t.Context())
	if err != nil || n != 3 || d == nil || !slices.Equal(d.Blockers, []string{"1 embedded run", "1 active request"}) ||
		!strings.HasPrefix(d.Summary, "restart deferred") || d.Counts["embeddedRuns"] != 1 {
		t.Fatalf("got %d %+v %v", n, d, err)
	}
	if n, err := o.Inflight(t.Context()); n != 3 || err != nil {
		t.Fatalf("Inflight: %d %v", n, err)
	}
}

// TestOpenClawFailures: every way a call can fail is an error that says why ("not idle").
func TestOpenClawFailures(t *testing.T) {
	for sc, want := range map[string]string{
		"unavailable": "UNAVAILABLE: gateway.restart.preflight unavailable during gateway suspension",
		"garbage":     "reply is not JSON: Gateway call: gateway.restart.preflight",
		"crash":       "exit status 1: Error: connect ECONNREFUSED",
		"noSafe":      `reply has no "safe"`,
	} {
		o, _ := fakeCLI(t, sc)
		_, _, err := o.InflightDetail(t.Context())
		if ce, ok := errors.AsType[*CallError](err); !ok || !strings.Contains(err.Error(), want) || ce.Method != "gateway.restart.preflight" {
			t.Errorf("%s: error %v, want %q", sc, err, want)
		}
	}
}

func TestOpenClawTimeout(t *testing.T) {
	o, _ := fakeCLI(t, "hang")
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := o.Inflight(ctx); err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("hang: %v", err)
	}
}

func TestOpenClawNoCLI(t *testing.T) {
	o := OpenClaw{Command: []string{"schedd-no-such-openclaw"}}
	if _, err := o.Inflight(t.Context()); err == nil {
		t.Fatal("a missing CLI counts as idle")
	}
}

func TestOpenClawFence(t *testing.T) {
	o, args := fakeCLI(t, "ready")
	st, err := o.Prepare(t.Context(), "schedd-restart-1")
	if err != nil || st.Status != FenceReady || st.SuspensionID != "09916f14" || st.ExpiresAt == nil ||
		st.ExpiresAt.UnixMilli() != 1796150730010 || st.ActiveCount == nil || *st.ActiveCount != 0 {
		t.Fatalf("prepare: %+v %v", st, err)
	}
	o, args2 := fakeCLI(t, "draining")
	st, err = o.Prepare(t.Context(), "schedd-restart-1")
	if err != nil || st.Status != FenceDraining || *st.ActiveCount != 2 || len(st.Blockers) != 2 {
		t.Fatalf("draining: %+v %v", st, err)
	}
	o, args3 := fakeCLI(t, "statusReady")
	st, err = o.Status(t.Context(), "09916f14")
	if err != nil || st.Status != FenceReady || st.SuspensionID != "09916f14" {
		t.Fatalf("status: %+v %v", st, err)
	}
	o, args4 := fakeCLI(t, "resumed")
	if resumed, err := o.Resume(t.Context(), "09916f14"); !resumed || err != nil {
		t.Fatalf("resume: %v %v", resumed, err)
	}
	want := []string{
		`--prefix-arg gateway call gateway.suspend.prepare --json --port 18789 --params {"drain":true,"requestId":"schedd-restart-1","terminalPolicy":"terminate"}`,
		`--prefix-arg gateway call gateway.suspend.prepare --json --port 18789 --params {"drain":true,"requestId":"schedd-restart-1","terminalPolicy":"terminate"}`,
		`--prefix-arg gateway call gateway.suspend.status --json --port 18789 --params {"suspensionId":"09916f14"}`,
		`--prefix-arg gateway call gateway.suspend.resume --json --port 18789 --params {"suspensionId":"09916f14"}`,
	}
	got := slices.Concat(args(), args2(), args3(), args4())
	if !slices.Equal(got, want) {
		t.Fatalf("args\n%q\nwant\n%q", got, want)
	}
	o, _ = fakeCLI(t, "unavailable")
	if _, err := o.Status(t.Context(), "x"); err == nil {
		t.Fatal("status UNAVAILABLE: no error")
	}
}
