//go:build unix

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
	"github.com/schedd/schedd/internal/heartbeat"
	"github.com/schedd/schedd/internal/testgateway"
)

// These tests run the real daemon with exec heartbeat targets: the test binary in the
// fake gateway's pulse-log mode, which appends every pulse it gets, with its arrival time
// and SCHEDD_* variables, to a file.

// slack is how late a pulse may be on a busy test machine: it bounds the waits, never
// what the assertions call correct.
const slack = time.Second

// gotPulse is one line of the pulse log.
type gotPulse struct {
	at  time.Time
	p   heartbeat.Pulse
	env map[string]string
}

func readPulses(t *testing.T, path string) []gotPulse {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []gotPulse
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line testgateway.Pulse
		var g gotPulse
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("pulse log line %q: %v", sc.Text(), err)
		}
		if err := json.Unmarshal(line.Pulse, &g.p); err != nil {
			t.Fatalf("pulse %s: %v", line.Pulse, err)
		}
		g.at, g.env = time.Unix(0, line.AtNS), line.Env
		out = append(out, g)
	}
	return out
}

func pulsesOf(ps []gotPulse, agent string) []gotPulse {
	var out []gotPulse
	for _, p := range ps {
		if p.p.AgentID == agent {
			out = append(out, p)
		}
	}
	return out
}

// waitPulses polls the log until agent has at least n pulses (15 s at most).
func waitPulses(t *testing.T, path, agent string, n int) []gotPulse {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := pulsesOf(readPulses(t, path), agent)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent %s: %d pulses after 15s, want %d: %+v", agent, len(got), n, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkEnv: the SCHEDD_* variables say what the pulse on stdin says.
func checkEnv(t *testing.T, g gotPulse) {
	t.Helper()
	for _, kv := range heartbeat.PulseEnv(g.p) {
		k, v, _ := strings.Cut(kv, "=")
		if g.env[k] != v {
			t.Errorf("pulse %+v: %s=%q, want %q", g.p, k, g.env[k], v)
		}
	}
}

// heartbeatYAML is a config with the given heartbeat agents (YAML flow mappings), all
// pulsing the pulse-log target unless they name their own.
func heartbeatYAML(t *testing.T, log string, agents ...string) string {
	t.Helper()
	return fmt.Sprintf("heartbeat:\n  defaults:\n    every: 7d\n    target: {exec: {command: %s}}\n  agents:\n    - %s\n",
		flowList(gatewayArgv(t, "pulse-log="+log)), strings.Join(agents, "\n    - "))
}

func flowList(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = fmt.Sprintf("%q", a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func (d *testDaemon) heartbeat() api.Heartbeat {
	d.t.Helper()
	st, err := d.status()
	if err != nil || st.Heartbeat == nil {
		d.t.Fatalf("status: %v, heartbeat block %v", err, st.Heartbeat)
	}
	return *st.Heartbeat
}

func agentStatus(t *testing.T, hb api.Heartbeat, id string) api.AgentStatus {
	t.Helper()
	for _, a := range hb.Agents {
		if a.ID == id {
			return a
		}
	}
	t.Fatalf("agent %s not in status %+v", id, hb)
	return api.AgentStatus{}
}

// wake posts a wake through the control API, the way `schedd heartbeat wake` does.
func (d *testDaemon) wake(agent, reason string) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := client.New(d.socket).Do(ctx, http.MethodPost, "/v1/heartbeat/wake",
		api.HeartbeatWakeRequest{Agent: agent, Reason: reason}, nil)
	if err != nil {
		d.t.Fatalf("wake %s: %v", agent, err)
	}
}

// TestE2EHeartbeatWakes runs agents whose interval (7 days) never comes during the test,
// so only wakes pulse them: a manual wake arrives after the 250 ms coalescing window; five
// wakes in 100 ms give one pulse with the highest-priority reason; quiet hours skip with
// the reason in status and logs; a busy target (exit 75) gets the same pulse again, one
// second later, as attempt 2.
func TestE2EHeartbeatWakes(t *testing.T) {
	// Not parallel: it times pulses to within a second (slack), which other tests' load could
	// break.
	dir := shortDir(t)
	log := filepath.Join(dir, "pulses")
	busy := filepath.Join(dir, "busy")
	// A window that excludes now: it opens in two hours and lasts one (UTC).
	now := time.Now().UTC()
	quiet := fmt.Sprintf(`{id: night, active_hours: {start: "%s", end: "%s", timezone: UTC}}`,
		now.Add(2*time.Hour).Format("15:04"), now.Add(3*time.Hour).Format("15:04"))
	cfg := writeConfig(t, heartbeatYAML(t, log,
		"{id: solo, session: 'agent:solo:main'}",
		"{id: burst}",
		quiet,
		fmt.Sprintf("{id: busy, target: {exec: {command: %s}}}", flowList(gatewayArgv(t, "pulse-log="+log, "busy-once="+busy))),
	))
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{}})
	d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })

	// A manual wake (the CLI's default reason) runs when the coalescing window ends.
	t0 := time.Now()
	code, out, errOut := cli("heartbeat", "wake", "--agent", "solo", "--socket", d.socket)
	t1 := time.Now()
	if code != 0 || !strings.Contains(out, "agent solo") || !strings.Contains(out, "reason manual") {
		t.Fatalf("heartbeat wake = %d\n%s%s", code, out, errOut)
	}
	g := waitPulses(t, log, "solo", 1)[0]
	p := g.p
	if p.Reason != "manual" || p.ReasonKind != heartbeat.KindManual || p.SessionKey != "agent:solo:main" || p.Attempt != 1 ||
		p.Visibility != heartbeat.DefaultVisibility {
		t.Errorf("manual pulse %+v", p)
	}
	checkEnv(t, g)
	if lo, hi := t0.Add(heartbeat.DefaultCoalesce), t1.Add(heartbeat.DefaultCoalesce+slack); p.ScheduledAt.Before(lo) || p.ScheduledAt.After(hi) {
		t.Errorf("manual pulse started %v after the request, want the %v coalescing window (+ up to %v)",
			p.ScheduledAt.Sub(t0), heartbeat.DefaultCoalesce, slack)
	}
	if g.at.Before(p.ScheduledAt) {
		t.Errorf("the target started at %v, before the pulse's scheduled_at %v", g.at, p.ScheduledAt)
	}
	t.Logf("manual wake: the pulse started %v after the request, the target %v after that", p.ScheduledAt.Sub(t0), g.at.Sub(p.ScheduledAt))

	// Five wakes within 100 ms merge into one pulse; the action reason wins and, being
	// manual, passes the cooldown gate.
	reasons := []string{"requested", "hook:deploy", "manual", "cron:nightly", "requested"}
	first := time.Now()
	for i, r := range reasons {
		if i > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		d.wake("burst", r)
	}
	span := time.Since(first)
	waitPulses(t, log, "burst", 1)
	time.Sleep(heartbeat.DefaultCoalesce + slack) // room for a second pulse that must not come
	got := pulsesOf(readPulses(t, log), "burst")
	switch {
	case span >= heartbeat.DefaultCoalesce-50*time.Millisecond:
		t.Logf("the five wakes took %v on this machine, too long to insist on one pulse; got %d", span, len(got))
	case len(got) != 1:
		t.Errorf("five wakes in %v gave %d pulses, want 1: %+v", span, len(got), got)
	}
	if got[0].p.Reason != "manual" {
		t.Errorf("merged pulse reason %q, want manual (the highest priority; the later of equals)", got[0].p.Reason)
	}

	// Quiet hours: the wake is skipped, the reason is in status, the CLI and the log.
	d.wake("night", "manual")
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := agentStatus(t, d.heartbeat(), "night")
		if a.Last != nil {
			if a.Last.Status != api.RunSkipped || a.Last.Reason != heartbeat.SkipQuietHours {
				t.Fatalf("night last %+v, want skipped quiet-hours", a.Last)
			}
			if a.NextDueAt == nil || a.NextDueAt.Before(now.Add(time.Hour)) {
				t.Errorf("night next_due_at %v, want inside the window two hours from now", a.NextDueAt)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the wake of night was not recorded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(pulsesOf(readPulses(t, log), "night")); n != 0 {
		t.Errorf("night was pulsed %d times in quiet hours", n)
	}
	code, out, _ = cli("heartbeat", "status", "--socket", d.socket)
	if code != 0 || !strings.Contains(out, "skipped") || !strings.Contains(out, "quiet-hours") || !strings.Contains(out, "solo") {
		t.Errorf("heartbeat status = %d:\n%s", code, out)
	}
	code, out, _ = cli("status", "--socket", d.socket)
	if code != 0 || !strings.Contains(out, "heartbeat") || !strings.Contains(out, "quiet-hours") {
		t.Errorf("status = %d:\n%s", code, out)
	}
	if !d.waitLog("heartbeat skipped", `"skip_reason": "quiet-hours"`, "heartbeat pulse") {
		t.Errorf("no structured skip and pulse lines in the log:\n%s", d.out.String())
	}

	// A busy target is pulsed again a second after it answered busy: same pulse, attempt 2.
	if err := os.WriteFile(busy, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d.wake("busy", "manual")
	got = waitPulses(t, log, "busy", 2)
	a1, a2 := got[0], got[1]
	if a1.p.Attempt != 1 || a2.p.Attempt != 2 || !a2.p.ScheduledAt.Equal(a1.p.ScheduledAt) || a2.p.Reason != "manual" {
		t.Errorf("busy retry: %+v then %+v", a1.p, a2.p)
	}
	checkEnv(t, a2)
	gap := a2.at.Sub(a1.at)
	t.Logf("busy retry: attempt 2 started %v after attempt 1", gap)
	if gap < heartbeat.RetryDelay || gap > heartbeat.RetryDelay+slack {
		t.Errorf("retry %v after the busy answer, want %v (+ up to %v)", gap, heartbeat.RetryDelay, slack)
	}
	if _, err := os.Stat(busy); !os.IsNotExist(err) {
		t.Errorf("the busy file is still there: %v", err)
	}
	waitAgent(t, d, "busy", func(a api.AgentStatus) bool { return a.Last != nil && a.Last.Status == api.RunRan })
}

func waitAgent(t *testing.T, d *testDaemon, id string, cond func(api.AgentStatus) bool) api.AgentStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := agentStatus(t, d.heartbeat(), id)
		if cond(a) {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent %s: condition not met; last status %+v", id, a)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestE2EHeartbeatIntervalAndSwitch: interval pulses arrive on their slots (never early,
// exactly one interval apart); `schedd heartbeat disable` stops them, and a new daemon on
// the same state dir keeps them stopped (the switch is persisted) until `enable`.
func TestE2EHeartbeatIntervalAndSwitch(t *testing.T) {
	// Not parallel: it gives a pulse started before the switch 300ms to land, which other
	// tests' load could stretch.
	dir := shortDir(t)
	log := filepath.Join(dir, "pulses")
	cfg := writeConfig(t, heartbeatYAML(t, log, "{id: main, every: 1s}"))
	d := startDaemon(t, daemonOpts{dir: dir, args: []string{"--config", cfg}, gateway: []string{}})
	d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })

	got := waitPulses(t, log, "main", 3)
	for i, g := range got {
		if g.p.Reason != "interval" || g.p.ReasonKind != heartbeat.KindInterval || g.p.Attempt != 1 {
			t.Errorf("pulse %d: %+v", i, g.p)
		}
		checkEnv(t, g)
		if g.at.Before(g.p.ScheduledAt) {
			t.Errorf("pulse %d started at %v, before its slot %v", i, g.at, g.p.ScheduledAt)
		}
		if i > 0 && g.p.ScheduledAt.Sub(got[i-1].p.ScheduledAt)%time.Second != 0 {
			t.Errorf("slots %v and %v are not whole intervals apart", got[i-1].p.ScheduledAt, g.p.ScheduledAt)
		}
	}
	a := waitAgent(t, d, "main", func(a api.AgentStatus) bool { return a.Last != nil })
	if !a.Enabled || a.IntervalMS != 1000 || a.NextDueAt == nil || a.Last.Status != api.RunRan {
		t.Errorf("main status %+v", a)
	}

	code, out, errOut := cli("heartbeat", "disable", "--socket", d.socket)
	if code != 0 || out != "heartbeats disabled\n" {
		t.Fatalf("heartbeat disable = %d: %s%s", code, out, errOut)
	}
	noPulses := func(d *testDaemon, what string) {
		t.Helper()
		time.Sleep(300 * time.Millisecond) // a pulse started before the switch may still land
		n := len(readPulses(t, log))
		time.Sleep(2500 * time.Millisecond)
		if m := len(readPulses(t, log)); m != n {
			t.Fatalf("%s: %d pulses in 2.5s of a 1s interval", what, m-n)
		}
		if hb := d.heartbeat(); hb.Enabled {
			t.Fatalf("%s: status says enabled", what)
		}
	}
	noPulses(d, "disabled")

	// A new daemon on the same state dir: still disabled, still no pulses.
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, heartbeat.StateFileName)); err != nil {
		t.Fatalf("no state file: %v", err)
	}
	d2 := startDaemon(t, daemonOpts{dir: dir, args: []string{"--config", cfg}, gateway: []string{}})
	d2.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	code, out, _ = cli("status", "--socket", d2.socket)
	if code != 0 || !regexp.MustCompile(`(?m)^heartbeat +disabled`).MatchString(out) {
		t.Errorf("status after the restart = %d:\n%s", code, out)
	}
	noPulses(d2, "disabled, after a daemon restart")

	code, out, _ = cli("heartbeat", "enable", "--socket", d2.socket)
	if code != 0 || out != "heartbeats enabled\n" {
		t.Fatalf("heartbeat enable = %d: %s", code, out)
	}
	n := len(pulsesOf(readPulses(t, log), "main"))
	waitPulses(t, log, "main", n+1)
}
