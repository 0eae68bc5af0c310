//go:build unix

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
	"github.com/schedd/schedd/internal/testgateway"
)

// These tests run the real daemon: the schedd that TestMain built, as `schedd run`,
// supervising this test binary re-executed as the fake gateway.

// daemon is one schedd process under test.
type testDaemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	dir    string // state dir
	socket string
	out    *syncBuffer
	done   chan struct{}
	code   int
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// shortDir is a temp dir with a path short enough for unix sockets.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// gatewayArgv is the command line that runs the fake gateway with opts.
func gatewayArgv(t *testing.T, opts ...string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"/usr/bin/env", testgateway.Command(opts...), "GORACE=" + testgateway.GoRace, exe}
}

type daemonOpts struct {
	dir     string   // state dir (default: a new one)
	args    []string // extra flags before "--"
	gateway []string // gateway options (testgateway)
	env     []string // extra environment for the daemon
	setpgid bool     // own process group, as a foreground job in a terminal
	wrap    []string // a command that runs schedd (argv prefix), e.g. unshare
}

// startDaemon starts `schedd run` and waits until its control socket answers.
func startDaemon(t *testing.T, o daemonOpts) *testDaemon {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	d := newDaemon(t, o)
	startCmd(t, d)
	return d
}

// startCmd starts a daemon made with newDaemon and waits until it serves its socket; the
// test's end kills it if it still runs.
func startCmd(t *testing.T, d *testDaemon) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := d.cmd.Wait()
		d.code = exitCode(err)
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
			t.Logf("schedd output:\n%s", d.out.String())
		}
	})
	waitServing(t, d)
}

// waitServing waits until d answers on its control socket (or exits).
func waitServing(t *testing.T, d *testDaemon) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := d.status(); err == nil {
			return
		}
		select {
		case <-d.done:
			t.Fatalf("schedd exited with %d before serving:\n%s", d.code, d.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("schedd did not serve in time:\n%s", d.out.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func newDaemon(t *testing.T, o daemonOpts) *testDaemon {
	t.Helper()
	dir := o.dir
	if dir == "" {
		dir = shortDir(t)
	}
	exe := scheddBin
	d := &testDaemon{t: t, dir: dir, socket: filepath.Join(dir, "schedd.sock"), out: &syncBuffer{}, done: make(chan struct{})}
	args := append([]string{"run", "--state-dir", dir, "--socket", d.socket, "--service-manager", "none"}, o.args...)
	if o.gateway != nil {
		args = append(append(args, "--"), gatewayArgv(t, o.gateway...)...)
	}
	d.cmd = exec.Command(exe, args...)
	if o.wrap != nil {
		d.cmd = exec.Command(o.wrap[0], append(append(o.wrap[1:], exe), args...)...)
	}
	env := []string{"GORACE=" + testgateway.GoRace}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, testgateway.Env+"=") && !strings.HasPrefix(kv, "NOTIFY_SOCKET=") &&
			!strings.HasPrefix(kv, "WATCHDOG_") && !strings.HasPrefix(kv, "SCHEDD_SOCKET=") {
			env = append(env, kv)
		}
	}
	d.cmd.Env = append(env, o.env...)
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: o.setpgid}
	return d
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return ee.ExitCode()
	}
	return -1
}

func (d *testDaemon) status() (api.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl := client.New(d.socket)
	defer cl.Close() // an idle connection left open is a goroutine in the daemon
	return cl.Status(ctx)
}

// waitFor polls the status until cond holds (10 s at most).
func (d *testDaemon) waitFor(what string, cond func(api.Gateway) bool) api.Status {
	d.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := d.status()
		if err == nil && cond(st.Gateway) {
			return st
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("timed out waiting for %s; last status %+v, err %v", what, st.Gateway, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitLog waits until the daemon's log holds each of subs (5 s at most): the daemon writes
// its log in batches, so a line may reach the output up to 250 ms after what it tells of.
func (d *testDaemon) waitLog(subs ...string) bool {
	d.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, all := d.out.String(), true
		for _, s := range subs {
			all = all && strings.Contains(out, s)
		}
		if all {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wait waits for the daemon to exit and returns its exit code.
func (d *testDaemon) wait(limit time.Duration) int {
	d.t.Helper()
	select {
	case <-d.done:
		return d.code
	case <-time.After(limit):
		d.t.Fatalf("schedd did not exit within %v", limit)
		return -1
	}
}

// cli runs a schedd client command, as a user would, and returns its exit code and output.
func cli(args ...string) (int, string, string) { return cliEnv(nil, args...) }

// cliEnv is cli with env added to the command's environment.
func cliEnv(env []string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(scheddBin, args...)
	cmd.Env = append(append(os.Environ(), "GORACE="+testgateway.GoRace), env...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := exitCode(err)
	if code == -1 && err != nil { // it did not run, or a signal ended it
		stderr.WriteString(err.Error())
	}
	return code, stdout.String(), stderr.String()
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// TestE2EKillAndComeBack is the README walk-through: schedd supervises a gateway with no
// config file; killing it brings a new one at once; killing again quickly shows the
// backoff (state, consecutive failures, next start) in `schedd status`.
func TestE2EKillAndComeBack(t *testing.T) {
	// Not parallel: its status must catch a backoff of about a second, which other tests' load
	// could make it miss.
	d := startDaemon(t, daemonOpts{gateway: []string{}})
	st := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	first := st.Gateway.PID
	if st.Schedd.PID != d.cmd.Process.Pid || st.Schedd.ServiceManager != "none" || st.Schedd.ConfigPath != "" {
		t.Fatalf("schedd block %+v", st.Schedd)
	}
	syscall.Kill(first, syscall.SIGKILL)
	st = d.waitFor("a new gateway", func(g api.Gateway) bool { return g.State == api.GatewayReady && g.PID != first })
	if st.Gateway.Restarts != 1 || st.Gateway.LastExit == nil || st.Gateway.LastExit.Signal != "SIGKILL" {
		t.Fatalf("after the kill: %+v", st.Gateway)
	}
	if strings.Contains(d.out.String(), "told the service manager") {
		t.Errorf("with no service manager, the log says one was told:\n%s", d.out.String())
	}
	second := st.Gateway.PID
	syscall.Kill(second, syscall.SIGKILL)
	st = d.waitFor("backoff", func(g api.Gateway) bool { return g.State == api.GatewayBackoff })
	if st.Gateway.ConsecutiveFailures != 2 || st.Gateway.NextStartAt.IsZero() {
		t.Fatalf("backoff status %+v", st.Gateway)
	}
	code, out, errOut := cli("status", "--socket", d.socket)
	if code != 0 || !strings.Contains(out, "backoff") || !strings.Contains(out, "next start") || !strings.Contains(out, "SIGKILL") {
		t.Fatalf("schedd status = %d\n%s%s", code, out, errOut)
	}
	code, out, _ = cli("status", "--json", "--socket", d.socket)
	var raw map[string]map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &raw) != nil {
		t.Fatalf("status --json = %d: %s", code, out)
	}
	for _, k := range []string{"state", "pid", "started_at", "restarts", "consecutive_failures", "next_start_at", "last_exit"} {
		if _, ok := raw["gateway"][k]; !ok {
			t.Errorf("status --json gateway block lacks %q: %s", k, out)
		}
	}
	for _, k := range []string{"pid", "version", "started_at", "service_manager", "config_path"} {
		if _, ok := raw["schedd"][k]; !ok {
			t.Errorf("status --json schedd block lacks %q", k)
		}
	}
	d.waitFor("a third gateway", func(g api.Gateway) bool { return g.State == api.GatewayReady && g.PID != second })
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
}

// TestE2ESecondInstance is R-SUP-07: a second `schedd run` on the same state dir exits
// with code 73 and a message naming the holder; the first is unaffected.
func TestE2ESecondInstance(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonOpts{gateway: []string{}})
	st := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	second := newDaemon(t, daemonOpts{dir: d.dir, gateway: []string{}})
	second.socket = filepath.Join(shortDir(t), "other.sock")
	second.cmd.Stdout, second.cmd.Stderr = nil, nil
	out, err := second.cmd.CombinedOutput()
	if code := exitCode(err); code != exitLocked {
		t.Fatalf("second instance exit code %d, want %d:\n%s", code, exitLocked, out)
	}
	if !strings.Contains(string(out), strconv.Itoa(d.cmd.Process.Pid)) || !strings.Contains(string(out), "--state-dir") {
		t.Fatalf("message does not name the running pid and the way out:\n%s", out)
	}
	st2 := d.waitFor("still ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	if st2.Gateway.PID != st.Gateway.PID || st2.Gateway.Restarts != 0 {
		t.Fatalf("the first instance was disturbed: %+v", st2.Gateway)
	}
}

// TestE2EStopNeverRespawns is R-SUP-05 at process level: SIGTERM during a backoff sleep
// exits 0 at once and starts nothing more.
func TestE2EStopNeverRespawns(t *testing.T) {
	t.Parallel()
	pids := filepath.Join(t.TempDir(), "pids")
	d := startDaemon(t, daemonOpts{gateway: []string{"exit=1", "pid-file=" + pids}})
	d.waitFor("backoff", func(g api.Gateway) bool { return g.ConsecutiveFailures >= 3 && g.State == api.GatewayBackoff })
	n := len(strings.Fields(readFile(t, pids)))
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	time.Sleep(200 * time.Millisecond)
	if m := len(strings.Fields(readFile(t, pids))); m != n {
		t.Fatalf("%d gateways started after the stop", m-n)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// TestE2EInterrupt is R-SIG-09: ^C in a terminal sends SIGINT to the foreground process
// group (schedd's); the gateway runs in its own group, schedd stops it gracefully, and
// the whole tree is gone.
func TestE2EInterrupt(t *testing.T) {
	t.Parallel()
	gc := filepath.Join(t.TempDir(), "grandchild")
	d := startDaemon(t, daemonOpts{gateway: []string{"grandchild=" + gc}, setpgid: true})
	st := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	if err := syscall.Kill(-d.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d after ^C, want 0", code)
	}
	pids := []int{st.Gateway.PID}
	for _, f := range strings.Fields(readFile(t, gc)) {
		n, _ := strconv.Atoi(f)
		pids = append(pids, n)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d survived ^C", pid)
		}
	}
	if !strings.Contains(d.out.String(), "reason") || !strings.Contains(d.out.String(), "stop") {
		t.Errorf("no graceful stop in the log:\n%s", d.out.String())
	}
}

// TestE2ESecondSignalEscalates is R-SIG-05: a gateway that ignores SIGTERM has a 60 s
// stop timeout; a second SIGTERM 100 ms after the first kills it at once, and schedd
// exits 0 without a panic.
func TestE2ESecondSignalEscalates(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, "gateway:\n  stop: {timeout: 60s}\n  readiness: {notify: {}, timeout: 30s}\n")
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{"ignore-term", "ready"}})
	d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	start := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(100 * time.Millisecond)
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatal("the second signal did not cut the 60 s stop timeout short")
	}
	if out := d.out.String(); !strings.Contains(out, "second stop signal") || strings.Contains(out, "panic") {
		t.Fatalf("log:\n%s", out)
	}
}

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "schedd.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestE2ENotifySocket is the notify-socket half of R-INIT-02: under a service manager
// (a test NOTIFY_SOCKET with WATCHDOG_USEC), schedd sends STATUS= on state changes,
// READY=1 once the gateway is first ready (and never again on a restart), WATCHDOG=1
// while its loop is healthy, and STOPPING=1 on stop; the gateway never sees the service
// manager's variables.
func TestE2ENotifySocket(t *testing.T) {
	t.Parallel()
	sm := newFakeServiceManager(t)
	path, got, dir := sm.path, sm.messages, filepath.Dir(sm.path)
	envFile := filepath.Join(dir, "env")
	cfg := writeConfig(t, "gateway:\n  readiness: {notify: {}, timeout: 30s}\n")
	d := startDaemon(t, daemonOpts{
		args:    []string{"--config", cfg},
		gateway: []string{"ready", "ready-delay=100ms", "env-file=" + envFile},
		env:     []string{"NOTIFY_SOCKET=" + path, "WATCHDOG_USEC=200000", "INVOCATION_ID=abc", "JOURNAL_STREAM=1:2", "LISTEN_FDS=3"},
	})
	st := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	deadline := time.Now().Add(10 * time.Second)
	// The status says ready as the gateway is; READY=1 and the first WATCHDOG=1 reach the
	// service manager's socket on their own time.
	for m := got(); !(slices.Contains(m, "WATCHDOG=1") && slices.Contains(m, "READY=1")) && time.Now().Before(deadline); m = got() {
		time.Sleep(10 * time.Millisecond)
	}
	m := got()
	iReady := slices.Index(m, "READY=1")
	if iReady < 0 || !slices.Contains(m[:iReady], "STATUS=gateway starting") {
		t.Fatalf("want STATUS=gateway starting, then READY=1; got %q", m)
	}
	if !slices.Contains(m, fmt.Sprintf("STATUS=gateway ready (pid %d)", st.Gateway.PID)) || !slices.Contains(m, "WATCHDOG=1") {
		t.Fatalf("want STATUS=gateway ready and WATCHDOG=1; got %q", m)
	}
	if !d.waitLog("told the service manager schedd is ready") {
		t.Error("the log does not say READY=1 was sent")
	}
	// A restart of the gateway is not a second READY=1.
	syscall.Kill(st.Gateway.PID, syscall.SIGKILL)
	d.waitFor("a new gateway", func(g api.Gateway) bool { return g.State == api.GatewayReady && g.PID != st.Gateway.PID })
	env := readFile(t, envFile)
	for _, bad := range []string{"NOTIFY_SOCKET=" + path, "WATCHDOG_USEC=", "INVOCATION_ID=", "JOURNAL_STREAM=", "LISTEN_FDS="} {
		if strings.Contains(env, bad) {
			t.Errorf("gateway env has %s", bad)
		}
	}
	if !strings.Contains(env, "NOTIFY_SOCKET="+filepath.Join(d.dir, "gateway.notify")) || !strings.Contains(env, "SCHEDD_SOCKET="+d.socket) {
		t.Errorf("gateway env lacks schedd's own NOTIFY_SOCKET and SCHEDD_SOCKET:\n%s", env)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	m = got()
	if n := count(m, "READY=1"); n != 1 {
		t.Fatalf("READY=1 sent %d times, want once: %q", n, m)
	}
	if !slices.Contains(m, "STOPPING=1") {
		t.Fatalf("no STOPPING=1: %q", m)
	}
}

func count(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// TestE2EConfigErrors: a bad config exits 78 naming file:line:column; a missing command
// is a usage error (2).
func TestE2EConfigErrors(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	bad := writeConfig(t, "gateway:\n  command: [x]\n  stopp: {}\n")
	d := newDaemon(t, daemonOpts{args: []string{"--config", bad}})
	d.cmd.Stdout, d.cmd.Stderr = nil, nil
	out, err := d.cmd.CombinedOutput()
	if code := exitCode(err); code != exitConfig || !strings.Contains(string(out), bad+":3:3") {
		t.Fatalf("exit %d, want 78 with %s:3:3:\n%s", code, bad, out)
	}
	d = newDaemon(t, daemonOpts{})
	d.cmd.Stdout, d.cmd.Stderr = nil, nil
	out, err = d.cmd.CombinedOutput()
	if code := exitCode(err); code != exitUsage || !strings.Contains(string(out), "no gateway command") {
		t.Fatalf("exit %d, want 2:\n%s", code, out)
	}
}

// TestE2EInheritedDescriptors: a descriptor schedd inherited (from a shell, say) does not
// leak into the gateway.
func TestE2EInheritedDescriptors(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc")
	}
	dir := t.TempDir()
	marker, err := os.Create(filepath.Join(dir, "inherited-marker"))
	if err != nil {
		t.Fatal(err)
	}
	defer marker.Close()
	fds := filepath.Join(dir, "fds")
	d := newDaemon(t, daemonOpts{gateway: []string{"fds-file=" + fds}})
	d.cmd.ExtraFiles = []*os.File{marker} // fd 3 in schedd, without close-on-exec
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { d.cmd.Process.Signal(syscall.SIGTERM); d.cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for readFile(t, fds) == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	got := readFile(t, fds)
	if got == "" {
		t.Fatalf("the gateway did not write its descriptors:\n%s", d.out.String())
	}
	if strings.Contains(got, "inherited-marker") {
		t.Fatalf("the gateway inherited schedd's descriptor:\n%s", got)
	}
}

// fakeServiceManager is the listening end of a NOTIFY_SOCKET, as systemd would hold it.
type fakeServiceManager struct {
	path string
	mu   sync.Mutex
	msgs []string
}

func newFakeServiceManager(t *testing.T) *fakeServiceManager {
	t.Helper()
	sm := &fakeServiceManager{path: filepath.Join(shortDir(t), "sm.sock")}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sm.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			sm.mu.Lock()
			sm.msgs = append(sm.msgs, string(buf[:n]))
			sm.mu.Unlock()
		}
	}()
	return sm
}

// messages returns what was received so far, in order.
func (sm *fakeServiceManager) messages() []string {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return slices.Clone(sm.msgs)
}
