//go:build unix

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/restart"
)

// restartCLI runs `schedd restart ARGS --json` against d and decodes the reply.
func restartCLI(t *testing.T, d *testDaemon, args ...string) (int, api.RestartReply, string) {
	t.Helper()
	code, out, errOut := cli(append([]string{"restart", "--json", "--socket", d.socket}, args...)...)
	var reply api.RestartReply
	if out != "" {
		if err := json.Unmarshal([]byte(out), &reply); err != nil {
			t.Fatalf("restart --json output %q: %v", out, err)
		}
	}
	return code, reply, errOut
}

// lifeSpan is one gateway's life from its life-file.
type lifeSpan struct {
	pid         int
	start, exit int64
}

func readLives(t *testing.T, path string) []lifeSpan {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byPID := map[int]*lifeSpan{}
	var order []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kind string
		var pid int
		var at int64
		if _, err := fmt.Sscan(sc.Text(), &kind, &pid, &at); err != nil {
			t.Fatalf("life file line %q: %v", sc.Text(), err)
		}
		if byPID[pid] == nil {
			byPID[pid] = &lifeSpan{pid: pid}
			order = append(order, pid)
		}
		if kind == "start" {
			byPID[pid].start = at
		} else {
			byPID[pid].exit = at
		}
	}
	var out []lifeSpan
	for _, pid := range order {
		out = append(out, *byPID[pid])
	}
	return out
}

// noOverlap asserts that no two gateways ever lived at the same time.
func noOverlap(t *testing.T, lives []lifeSpan) {
	t.Helper()
	for i := 1; i < len(lives); i++ {
		prev := lives[i-1]
		if prev.exit == 0 || lives[i].start < prev.exit {
			t.Fatalf("gateway %d started before gateway %d exited: %+v", lives[i].pid, prev.pid, lives)
		}
	}
}

// TestE2ESignalStorm is R-SIG-01: 1,000 SIGUSR1 in about a second: the daemon lives, at
// most one restart runs and one waits, the signals it received are counted, restarts stay
// few, gateways never overlap, and no goroutine is left behind.
func TestE2ESignalStorm(t *testing.T) {
	// Not parallel: its 1,000 signals must arrive in about a second, which other tests' load
	// could stretch.
	life := filepath.Join(t.TempDir(), "life")
	cfg := writeConfig(t, "restart: {delay: 100ms, cooldown: 500ms}\n")
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{"life-file=" + life}})
	d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	before, _ := d.status()
	stormBegan := time.Now()
	for range 1000 {
		if err := d.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			t.Fatalf("schedd died during the storm: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	storm := time.Since(stormBegan)
	// Let the follow-up run, then settle.
	var st = before
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		s, err := d.status()
		if err != nil {
			t.Fatalf("status after the storm: %v", err)
		}
		st = s
		if st.Restart.Pending == nil && !st.Restart.InProgress && st.Gateway.State == api.GatewayReady {
			break
		}
	}
	rs := st.Restart
	got := rs.Requests[api.SourceSignal]
	if got < 1 || got > 1000 {
		t.Fatalf("signal requests counted %d", got)
	}
	served := 0
	for _, r := range rs.History {
		served += r.Requests
	}
	if int64(served) != got {
		t.Fatalf("restarts served %d requests, %d were counted", served, got)
	}
	// About 1 s of signals, 100 ms delay, 500 ms cooldown: a handful of restarts, not
	// hundreds; at most one per cooldown while the signals come, and the follow-up (a
	// loaded machine stretches the storm, and so the bound).
	if n, most := st.Gateway.Restarts, int(storm/(500*time.Millisecond))+2; n < 1 || n > most {
		t.Fatalf("%d restarts for a storm of %v, want 1 to %d", n, storm.Round(time.Millisecond), most)
	}
	if g := st.Schedd.Goroutines; g > before.Schedd.Goroutines+5 {
		t.Fatalf("goroutines %d after the storm, %d before", g, before.Schedd.Goroutines)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	noOverlap(t, readLives(t, life))
}

// TestE2ESignalDuringRestart is R-SIG-02: SIGUSR1 while a restart is in progress becomes
// exactly one follow-up; the children never overlap.
func TestE2ESignalDuringRestart(t *testing.T) {
	t.Parallel()
	life := filepath.Join(t.TempDir(), "life")
	cfg := writeConfig(t, "gateway: {readiness: {notify: {}, timeout: 30s}}\nrestart: {delay: 0s, cooldown: 0s}\n")
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg},
		gateway: []string{"ready", "ready-delay=700ms", "life-file=" + life}})
	d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	d.cmd.Process.Signal(syscall.SIGUSR1)
	st := d.waitFor("restart in progress", func(g api.Gateway) bool { return g.State == api.GatewayStarting })
	if !st.Restart.InProgress {
		t.Fatalf("restart block %+v", st.Restart)
	}
	for range 3 {
		d.cmd.Process.Signal(syscall.SIGUSR1)
		time.Sleep(10 * time.Millisecond)
	}
	st2, _ := d.status()
	if p := st2.Restart.Pending; p == nil || !p.FollowUp {
		t.Fatalf("no follow-up pending: %+v", st2.Restart)
	}
	d.waitFor("two restarts", func(g api.Gateway) bool { return g.Restarts == 2 && g.State == api.GatewayReady })
	time.Sleep(300 * time.Millisecond)
	final, _ := d.status()
	if final.Gateway.Restarts != 2 || final.Restart.Pending != nil {
		t.Fatalf("after the follow-up: restarts %d, pending %+v", final.Gateway.Restarts, final.Restart.Pending)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.wait(30 * time.Second)
	noOverlap(t, readLives(t, life))
}

// TestE2ESignalsDuringStartup is R-SIG-03: SIGUSR1 sent in a tight loop while schedd
// starts never kills it. The loop begins as soon as the Go runtime has installed its
// handler (SigCgt in /proc), which covers everything schedd does at startup: reading
// flags and the config, the lock, the sockets, the first gateway start.
func TestE2ESignalsDuringStartup(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	for i := range 5 {
		d := newDaemon(t, daemonOpts{gateway: []string{}})
		if err := d.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := d.cmd.Process.Pid
		exited := make(chan error, 1)
		go func() { exited <- d.cmd.Wait() }()
		for !sigCaught(pid, syscall.SIGUSR1) {
			time.Sleep(50 * time.Microsecond)
		}
		sent := 0
		deadline := time.Now().Add(10 * time.Second)
		for {
			if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
				break
			}
			sent++
			if _, err := d.status(); err == nil && sent > 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("schedd did not come up")
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("run %d: schedd died after %d signals: %v\n%s", i, sent, err, d.out.String())
		case <-time.After(100 * time.Millisecond):
		}
		d.cmd.Process.Signal(syscall.SIGTERM)
		if err := <-exited; err != nil {
			t.Fatalf("run %d: exit after SIGTERM: %v\n%s", i, err, d.out.String())
		}
	}
}

// sigCaught reports whether pid has a handler for sig (SigCgt in /proc/PID/status).
func sigCaught(pid int, sig syscall.Signal) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "SigCgt:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<(uint(sig)-1)) != 0
		}
	}
	return false
}

// inflightGateway starts a daemon whose gateway reports its in-flight count from a file.
func inflightGateway(t *testing.T, yaml string, extra ...string) (*testDaemon, string) {
	t.Helper()
	dir := t.TempDir()
	inflight := filepath.Join(dir, "inflight")
	if err := os.WriteFile(inflight, []byte("3"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, yaml)
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg},
		gateway: append([]string{"inflight-file=" + inflight}, extra...)})
	d.waitFor("ready with 3 in flight", func(g api.Gateway) bool {
		return g.State == api.GatewayReady && g.Inflight != nil && *g.Inflight == 3
	})
	return d, inflight
}

const deferYAML = `restart:
  delay: 0s
  cooldown: 0s
  defer_until_idle: {idle: {notify: {}}, poll: 50ms, max_wait: %s}
`

// TestE2ESigtermDuringDeferredRestart is R-SIG-04: SIGUSR1 while the gateway is busy
// defers the restart; SIGTERM then wins: the deferred restart is cancelled, the gateway is
// stopped once, gracefully, and schedd exits 0.
func TestE2ESigtermDuringDeferredRestart(t *testing.T) {
	t.Parallel()
	life := filepath.Join(t.TempDir(), "life")
	d, _ := inflightGateway(t, fmt.Sprintf(deferYAML, "1m"), "life-file="+life)
	d.cmd.Process.Signal(syscall.SIGUSR1)
	waitStatus(t, d, "deferred", func(st statusDoc) bool {
		return st.Restart.Pending != nil && st.Restart.Pending.DeferredSince != nil
	})
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	lives := readLives(t, life)
	if len(lives) != 1 || lives[0].exit == 0 {
		t.Fatalf("want exactly one gateway, stopped gracefully once: %+v", lives)
	}
	if !strings.Contains(d.out.String(), "pending restart cancelled by the stop") {
		t.Fatalf("log does not say the restart was cancelled:\n%s", d.out.String())
	}
}

type statusDoc = struct {
	Schedd  any
	Gateway api.Gateway
	Restart *api.Restart
}

func waitStatus(t *testing.T, d *testDaemon, what string, cond func(st statusDoc) bool) statusDoc {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := d.status()
		doc := statusDoc{Gateway: st.Gateway, Restart: st.Restart}
		if err == nil && st.Restart != nil && cond(doc) {
			return doc
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %+v %v", what, st.Restart, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestE2ERestartWhileCrashLooping is R-SIG-06: `schedd restart` while the gateway crash
// loops is accepted and answered deterministically, and the supervisor survives.
func TestE2ERestartWhileCrashLooping(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, "gateway: {crash_loop: {failures: 2, window: 1m}}\nrestart: {cooldown: 0s}\n")
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{"exit=1", "after=50ms"}})
	d.waitFor("crash_looping", func(g api.Gateway) bool { return g.State == api.GatewayCrashLooping })
	code, reply, errOut := restartCLI(t, d, "--now", "--wait", "--reason", "operator")
	if reply.Result == nil {
		t.Fatalf("no result (exit %d): %s", code, errOut)
	}
	if reply.Result.OK != (code == 0) {
		t.Fatalf("exit %d but ok=%v", code, reply.Result.OK)
	}
	if st, err := d.status(); err != nil || st.Restart.Last == nil || st.Restart.Last.Reason != "operator" {
		t.Fatalf("status after the restart: %+v %v", st.Restart, err)
	}
}

// TestE2EControlSocketAbuse is R-SIG-07: a stale socket file is replaced at startup, the
// socket is owner-only, a client that hangs mid-request does not block 100 others.
func TestE2EControlSocketAbuse(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	sock := filepath.Join(dir, "schedd.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // a stale socket file, as a killed daemon leaves it
	d := startDaemon(t, daemonOpts{dir: dir, gateway: []string{}})
	fi, err := os.Stat(d.socket)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v %v, want 0600", fi.Mode().Perm(), err)
	}
	hang, err := net.Dial("unix", d.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	fmt.Fprint(hang, "POST /v1/restart HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{") // never finished
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 100 {
		wg.Go(func() {
			if _, err := d.status(); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Bad requests get the error shape, not a crash.
	code, _, errOut := cli("restart", "--socket", d.socket, "--max-wait", "-1s")
	if code != exitUsage {
		t.Fatalf("bad flag: exit %d %s", code, errOut)
	}
}

// TestE2EDeferUntilIdle is R-DRAIN-01: a restart requested while the gateway reports work
// in flight waits; status shows the pending restart with its in-flight count and
// deadline; once the gateway reports 0 the restart happens.
func TestE2EDeferUntilIdle(t *testing.T) {
	t.Parallel()
	d, inflight := inflightGateway(t, fmt.Sprintf(deferYAML, "1m"))
	first := d.waitFor("ready", func(g api.Gateway) bool { return true }).Gateway.PID
	code, reply, errOut := restartCLI(t, d, "--reason", "deploy v2")
	if code != 0 || reply.Pending == nil {
		t.Fatalf("restart: %d %+v %s", code, reply, errOut)
	}
	st := waitStatus(t, d, "deferred with 3 in flight", func(st statusDoc) bool {
		p := st.Restart.Pending
		return p != nil && p.DeferredSince != nil && p.Inflight != nil && *p.Inflight == 3 && p.DeadlineAt != nil
	})
	if st.Restart.Pending.Reasons[0] != "deploy v2" {
		t.Fatalf("pending %+v", st.Restart.Pending)
	}
	_, table, _ := cli("status", "--socket", d.socket)
	if !strings.Contains(table, "waiting for idle") || !strings.Contains(table, "3 in flight") {
		t.Fatalf("status table does not show the deferral:\n%s", table)
	}
	time.Sleep(300 * time.Millisecond)
	if now, _ := d.status(); now.Gateway.PID != first {
		t.Fatal("restarted while work was in flight")
	}
	os.WriteFile(inflight, []byte("0"), 0o600)
	st = waitStatus(t, d, "the restart", func(st statusDoc) bool { return st.Restart.Last != nil })
	if l := st.Restart.Last; !l.OK || l.Forced || l.Mode != restart.ModeDeferred || l.DeferredMs < 300 || l.PreviousPID != first {
		t.Fatalf("result %+v", l)
	}
}

// TestE2EWorkNeverDrains is R-DRAIN-02 and R-DRAIN-03: a gateway whose in-flight count
// keeps changing but never reaches 0 is restarted at max_wait, marked forced, and status
// says how long it waited.
func TestE2EWorkNeverDrains(t *testing.T) {
	t.Parallel()
	d, inflight := inflightGateway(t, fmt.Sprintf(deferYAML, "800ms"))
	stop := make(chan struct{})
	go func() { // steady load: 1..5 in flight, never 0
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				os.WriteFile(inflight, []byte(strconv.Itoa(1+i%5)), 0o600)
			}
		}
	}()
	defer close(stop)
	code, reply, errOut := restartCLI(t, d, "--wait")
	if code != 0 || reply.Result == nil {
		t.Fatalf("restart --wait: %d %+v %s", code, reply, errOut)
	}
	if r := reply.Result; !r.Forced || r.DeferredMs < 800 || !r.OK {
		t.Fatalf("result %+v", r)
	}
	_, table, _ := cli("status", "--socket", d.socket)
	if !strings.Contains(table, "forced") {
		t.Fatalf("status table does not say forced:\n%s", table)
	}
}

// TestE2EConfigChangesCoalesce is R-DRAIN-04 and SIGHUP as a restart source: five changes
// of the gateway's environment in about 2 s make exactly one restart, with the five
// reasons, and the new gateway has the last environment. A change of other settings
// applies without a restart.
func TestE2EConfigChangesCoalesce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	envFile := filepath.Join(dir, "env")
	cfgPath := filepath.Join(dir, "schedd.yaml")
	write := func(n int, delay string) {
		yaml := fmt.Sprintf("gateway:\n  env: {VERSION: \"%d\"}\nrestart: {delay: %s, cooldown: 0s}\n", n, delay)
		if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(0, "3s")
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfgPath}, gateway: []string{"env-file=" + envFile}})
	first := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady }).Gateway.PID
	// Not a gateway change: no restart.
	write(0, "2900ms")
	d.cmd.Process.Signal(syscall.SIGHUP)
	time.Sleep(200 * time.Millisecond)
	for i := 1; i <= 5; i++ {
		write(i, "2900ms")
		d.cmd.Process.Signal(syscall.SIGHUP)
		time.Sleep(400 * time.Millisecond)
	}
	st := waitStatus(t, d, "the restart", func(st statusDoc) bool { return st.Restart.Last != nil })
	l := st.Restart.Last
	if l.Requests != 5 || len(l.Reasons) != 5 || !strings.Contains(l.Reason, "gateway.env") || l.PreviousPID != first {
		t.Fatalf("result %+v", l)
	}
	time.Sleep(3500 * time.Millisecond)
	st2, _ := d.status()
	if st2.Gateway.Restarts != 1 {
		t.Fatalf("%d restarts, want 1", st2.Gateway.Restarts)
	}
	if env := readFile(t, envFile); !strings.Contains(env, "VERSION=5\n") {
		t.Fatalf("new gateway env lacks VERSION=5:\n%s", env)
	}
	// A broken file changes nothing and says why.
	os.WriteFile(cfgPath, []byte("gateway: {stopp: 1}\n"), 0o600)
	d.cmd.Process.Signal(syscall.SIGHUP)
	time.Sleep(200 * time.Millisecond)
	if !d.waitLog("config reload failed; keeping the config in effect") {
		t.Fatalf("no reload failure in the log:\n%s", d.out.String())
	}
	if st3, _ := d.status(); st3.Gateway.Restarts != 1 || st3.Gateway.State != api.GatewayReady {
		t.Fatalf("a broken config disturbed the gateway: %+v", st3.Gateway)
	}
}

// TestE2ERestartFailsReadiness is R-DRAIN-05: the new gateway fails to become ready after
// a (deferred) restart: `restart --wait` reports the failure and exits 1, the crash backoff
// takes over, and once the config is fixed the gateway comes back.
func TestE2ERestartFailsReadiness(t *testing.T) {
	// Not parallel: its gateway has 500ms to be ready, which other tests' load could make it
	// miss.
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "schedd.yaml")
	exe, _ := os.Executable()
	write := func(ready bool) {
		opts := "ready"
		if !ready {
			opts = "" // runs, never says READY=1
		}
		yaml := fmt.Sprintf(`gateway:
  command: [/usr/bin/env, "SCHEDD_FAKE_GATEWAY=%s", "GORACE=atexit_sleep_ms=0", %q]
  readiness: {notify: {}, timeout: 500ms}
  stop: {timeout: 1s}
  backoff: {initial: 200ms, max: 1s}
restart: {delay: 0s, cooldown: 0s}
`, opts, exe)
		if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(true)
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfgPath}})
	d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	write(false)
	d.cmd.Process.Signal(syscall.SIGHUP) // a command change: a restart request
	time.Sleep(100 * time.Millisecond)
	st := waitStatus(t, d, "a failed restart", func(st statusDoc) bool { return st.Restart.Last != nil })
	if l := st.Restart.Last; l.OK || !strings.Contains(l.Error, "not ready") {
		t.Fatalf("result %+v", l)
	}
	if !d.waitLog("restart failed; the crash backoff takes over") {
		t.Fatalf("no alert in the log")
	}
	code, reply, _ := restartCLI(t, d, "--now", "--wait")
	if code != exitFailure || reply.Result == nil || reply.Result.OK {
		t.Fatalf("restart --wait of a broken gateway: exit %d %+v", code, reply.Result)
	}
	write(true)
	d.cmd.Process.Signal(syscall.SIGHUP)
	d.waitFor("ready again", func(g api.Gateway) bool { return g.State == api.GatewayReady })
}

// TestE2EIdleCheckHangs is R-DRAIN-06: an http idle check that never answers times out,
// counts as busy, and the restart is forced at max_wait.
func TestE2EIdleCheckHangs(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	cfg := writeConfig(t, fmt.Sprintf(`restart:
  delay: 0s
  cooldown: 0s
  defer_until_idle: {idle: {http: {url: %q, inflight_pointer: /n}, timeout: 100ms}, poll: 50ms, max_wait: 700ms}
`, srv.URL))
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{}})
	d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	code, reply, errOut := restartCLI(t, d, "--wait")
	if code != 0 || reply.Result == nil || !reply.Result.Forced || reply.Result.DeferredMs < 700 {
		t.Fatalf("restart --wait: %d %+v %s", code, reply.Result, errOut)
	}
	if !d.waitLog("idle check failed; the gateway counts as busy") {
		t.Fatalf("no log of the failed check")
	}
}

// TestE2ERestartNowWait: `schedd restart --now --wait` gives a fresh pid and prints the
// result; the service manager hears RELOADING=1 (with MONOTONIC_USEC) then READY=1.
func TestE2ERestartNowWait(t *testing.T) {
	t.Parallel()
	sm := newFakeServiceManager(t)
	path := sm.path
	d := startDaemon(t, daemonOpts{gateway: []string{}, env: []string{"NOTIFY_SOCKET=" + path}})
	first := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady }).Gateway.PID
	code, out, errOut := cli("restart", "--now", "--wait", "--socket", d.socket)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("restarted: pid %d -> ", first)) {
		t.Fatalf("restart --now --wait: %d %q %s", code, out, errOut)
	}
	// READY=1 (the first) must come again after RELOADING=1.
	deadline := time.Now().Add(5 * time.Second)
	for {
		m := sm.messages()
		i := slices.IndexFunc(m, func(s string) bool {
			return strings.HasPrefix(s, "RELOADING=1") && strings.Contains(s, "MONOTONIC_USEC=")
		})
		if i >= 0 && slices.Contains(m[i:], "READY=1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no RELOADING=1 (with MONOTONIC_USEC) then READY=1: %q", m)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestE2ESignalMethod: with restart.method signal, the gateway is signalled and keeps its
// pid; the restart is done when it said RELOADING=1 then READY=1.
func TestE2ESignalMethod(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, "gateway: {readiness: {notify: {}, timeout: 10s}}\nrestart: {method: signal, signal: SIGHUP, cooldown: 0s}\n")
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{"ready", "reload", "reload-delay=200ms"}})
	first := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady }).Gateway.PID
	code, reply, errOut := restartCLI(t, d, "--now", "--wait")
	if code != 0 || reply.Result == nil || reply.Result.PID != first || reply.Result.Method != string(restart.MethodSignal) ||
		reply.Result.DurationMs < 200 {
		t.Fatalf("restart: %d %+v %s", code, reply.Result, errOut)
	}
}

// TestE2ESignalDisabled: restart.allow_signal false ignores SIGUSR1 with a warning.
func TestE2ESignalDisabled(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, "restart: {allow_signal: false, delay: 0s}\n")
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{}})
	d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	d.cmd.Process.Signal(syscall.SIGUSR1)
	time.Sleep(300 * time.Millisecond)
	st, _ := d.status()
	if st.Gateway.Restarts != 0 || !d.waitLog("SIGUSR1 restart ignored") {
		t.Fatalf("SIGUSR1 with allow_signal false: restarts %d", st.Gateway.Restarts)
	}
}

// TestE2EStopWinsOverRestart is the other half of R-SIG-04: SIGTERM while a restart is in
// progress (the new gateway still starting) stops everything and exits 0; the waiting
// `restart --wait` gets a clear answer instead of hanging.
func TestE2EStopWinsOverRestart(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, "gateway: {readiness: {notify: {}, timeout: 1m}}\nrestart: {delay: 0s, cooldown: 0s}\n")
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{"ready", "ready-delay=1m"}})
	// The first gateway never gets ready either: stop during its start and during a restart
	// are the same path; make a restart be in progress.
	d.waitFor("starting", func(g api.Gateway) bool { return g.State == api.GatewayStarting })
	type out struct {
		code int
		text string
	}
	res := make(chan out, 1)
	go func() {
		code, text, errText := cli("restart", "--now", "--wait", "--socket", d.socket)
		res <- out{code, text + errText}
	}()
	waitStatus(t, d, "restart in progress", func(st statusDoc) bool { return st.Restart.InProgress })
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	select {
	case r := <-res:
		if r.code == 0 {
			t.Fatalf("restart --wait succeeded although schedd stopped: %s", r.text)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("restart --wait hung after schedd stopped")
	}
}
