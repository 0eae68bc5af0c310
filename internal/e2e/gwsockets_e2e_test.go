//go:build linux

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// get makes one request on a fresh connection (no keep-alive: every request is a
// connection that could be refused) and returns the pid that answered.
func get(addr string, timeout time.Duration) (int, error) {
	c := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	var pid int
	if _, err := fmt.Sscanf(string(b), "pid %d", &pid); err != nil {
		return 0, fmt.Errorf("answer %q: %v", b, err)
	}
	return pid, nil
}

// load runs n clients making requests back to back until stop is closed; it returns the
// pids that answered and every failure.
type load struct {
	mu    sync.Mutex
	pids  map[int]int
	fails []error
	wg    sync.WaitGroup
	stop  chan struct{}
}

func startLoad(addr string, n int) *load {
	l := &load{pids: map[int]int{}, stop: make(chan struct{})}
	for range n {
		l.wg.Go(func() {
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				pid, err := get(addr, 20*time.Second)
				l.mu.Lock()
				if err != nil {
					l.fails = append(l.fails, fmt.Errorf("%s: %w", time.Now().Format("15:04:05.000"), err))
				} else {
					l.pids[pid]++
				}
				l.mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	return l
}

func (l *load) end() (map[int]int, []error) {
	close(l.stop)
	l.wg.Wait()
	return l.pids, l.fails
}

// TestE2ESocketsRestartRefusesNothing_RDRAIN07: with gateway.sockets, schedd holds the
// listening socket across restarts: under load, three restarts of a gateway that takes
// 300ms before it accepts refuse and fail no request, and every gateway served some.
func TestE2ESocketsRestartRefusesNothing_RDRAIN07(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`gateway:
  readiness: {notify: {}, timeout: 10s}
  sockets: [{name: web, listen: %q, backlog: 128}]
restart: {cooldown: 0s, delay: 0s}
`, addr))
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg},
		gateway: []string{"sockets", "ready", "accept-delay=300ms"}})
	d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	l := startLoad(addr, 8)
	for i := range 3 {
		time.Sleep(600 * time.Millisecond) // each gateway serves a while (from 300ms on)
		if code, out, errOut := cli("restart", "--now", "--wait", "--socket", d.socket); code != 0 {
			t.Fatalf("restart %d: %d %s %s", i, code, out, errOut)
		}
	}
	time.Sleep(500 * time.Millisecond)
	pids, fails := l.end()
	if len(fails) > 0 {
		t.Fatalf("%d requests failed during the restarts, the first: %v", len(fails), fails[0])
	}
	if len(pids) < 4 {
		t.Fatalf("want answers from 4 gateways, got %v", pids)
	}
}

// TestE2ESocketsCrashBackoff_RDRAIN07: a connection made while the gateway is in its crash
// backoff waits in the backlog and is served by the next gateway.
func TestE2ESocketsCrashBackoff_RDRAIN07(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`gateway:
  readiness: {notify: {}, timeout: 10s}
  sockets: [{name: web, listen: %q}]
  backoff: {initial: 1s, jitter: 0}
`, addr))
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{"sockets", "ready"}})
	first := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady }).Gateway.PID
	// The first crash after a healthy run restarts at once; the second waits in backoff.
	syscall.Kill(first, syscall.SIGKILL)
	second := d.waitFor("a second gateway", func(g api.Gateway) bool {
		return g.State == api.GatewayReady && g.PID != first
	}).Gateway.PID
	syscall.Kill(second, syscall.SIGKILL)
	d.waitFor("backoff", func(g api.Gateway) bool { return g.State == api.GatewayBackoff })
	pid, err := get(addr, 10*time.Second)
	if err != nil {
		t.Fatalf("a request made during the backoff: %v", err)
	}
	st, _ := d.status()
	if pid == first || pid == second || pid != st.Gateway.PID {
		t.Fatalf("answered by pid %d; want the next gateway %d (not %d or %d)", pid, st.Gateway.PID, first, second)
	}
}

// TestE2ESocketsListenPID_RSOCK01: the gateway finds its sockets with systemd's protocol
// and LISTEN_PID is its own pid, through wrappers that exec it (/bin/sh with exec, then
// env): fd 3 is the socket, LISTEN_FDNAMES its name.
func TestE2ESocketsListenPID_RSOCK01(t *testing.T) {
	// Not parallel: its gateway, ready once started, has 5 s to answer a first request, which
	// other tests' load could make it miss.
	dir := shortDir(t)
	addr := freeAddr(t)
	sock := filepath.Join(dir, "gw.sock")
	info := filepath.Join(dir, "sockets")
	cfg := writeConfig(t, fmt.Sprintf(`gateway:
  sockets:
    - {name: web, listen: %q}
    - {name: admin, listen: "unix:%s", mode: "0660"}
`, addr, sock))
	argv := append([]string{"/bin/sh", "-c", `exec "$0" "$@"`}, gatewayArgv(t, "sockets", "sockets-file="+info)...)
	d := newDaemon(t, daemonOpts{args: append([]string{"--config", cfg, "--"}, argv...)})
	startCmd(t, d)
	d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	pid, err := get(addr, 5*time.Second)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	line := strings.TrimSpace(readFile(t, info))
	want := fmt.Sprintf("pid=%d LISTEN_PID=%d LISTEN_FDS=2 LISTEN_FDNAMES=web:admin", pid, pid)
	if line != want {
		t.Fatalf("gateway saw %q, want %q", line, want)
	}
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	resp, err := c.Get("http://gw/")
	if err != nil {
		t.Fatalf("request on the unix socket: %v", err)
	}
	resp.Body.Close()
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o660 {
		t.Fatalf("unix socket file: %v %v, want mode 0660", fi, err)
	}
}

// TestE2ESocketsBindFails_RSOCK02: a gateway socket that cannot be bound is a config
// error: schedd exits 78 naming the file, line, column and the socket's key.
func TestE2ESocketsBindFails_RSOCK02(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	cfg := writeConfig(t, fmt.Sprintf("gateway:\n  sockets:\n    - name: web\n      listen: %q\n", held.Addr().String()))
	d := newDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{"sockets"}})
	d.cmd.Stdout, d.cmd.Stderr = nil, nil
	out, err := d.cmd.CombinedOutput()
	if code := exitCode(err); code != exitConfig || !strings.Contains(string(out), cfg+":4:15: gateway.sockets[0].listen: cannot listen on") ||
		!strings.Contains(string(out), "address already in use") {
		t.Fatalf("exit %d, want 78 naming %s:4:15 gateway.sockets[0].listen:\n%s", exitCode(err), cfg, out)
	}
}

// TestE2ESocketsFromOwnManager_RSOCK03: schedd started with sockets of its own (LISTEN_FDS
// for its pid, as systemd's .socket unit or systemd-socket-activate give them) passes on
// only the one gateway.sockets names (from:), under the gateway's name, as fd 3; the other
// never reaches the gateway, and neither do schedd's own LISTEN_* variables.
func TestE2ESocketsFromOwnManager_RSOCK03(t *testing.T) {
	// Not parallel: its gateway, ready once started, has 5 s to answer a first request, which
	// other tests' load could make it miss.
	dir := shortDir(t)
	mk := func() (*os.File, string, string) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		f, err := ln.(*net.TCPListener).File()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		return f, fmt.Sprintf("socket:[%d]", st.Ino), ln.Addr().String()
	}
	other, otherInode, _ := mk()
	passed, passedInode, addr := mk()
	info, fds := filepath.Join(dir, "sockets"), filepath.Join(dir, "fds")
	cfg := writeConfig(t, "gateway:\n  sockets: [{name: web, from: api}]\n")
	d := newDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{"sockets", "sockets-file=" + info, "fds-file=" + fds},
		env: []string{"LISTEN_FDS=2", "LISTEN_FDNAMES=other:api"}})
	// schedd's own LISTEN_PID must be its pid: start it through the same exec shim.
	exe := scheddBin
	d.cmd = &exec.Cmd{Path: exe, Args: append([]string{exe, "__schedd-listen-exec", exe}, d.cmd.Args...),
		Env: d.cmd.Env, Stdout: d.out, Stderr: d.out, ExtraFiles: []*os.File{other, passed}}
	startCmd(t, d)
	d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	if _, err := get(addr, 5*time.Second); err != nil {
		t.Fatalf("request on the passed socket: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for readFile(t, fds) == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	got := readFile(t, fds)
	if !strings.Contains(got, "3 "+passedInode) || strings.Contains(got, otherInode) {
		t.Fatalf("gateway descriptors:\n%s\nwant fd 3 = %s and never %s", got, passedInode, otherInode)
	}
	line := readFile(t, info)
	if !strings.Contains(line, "LISTEN_FDS=1 LISTEN_FDNAMES=web") {
		t.Fatalf("gateway saw %q, want LISTEN_FDS=1 LISTEN_FDNAMES=web", line)
	}
	gwPID := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady }).Gateway.PID
	if !strings.Contains(line, "LISTEN_PID="+strconv.Itoa(gwPID)) {
		t.Fatalf("gateway saw %q, want its own pid %d as LISTEN_PID", line, gwPID)
	}
}

// TestE2EOverlapServesEverything_RSOCK04: with restart.overlap the new gateway starts on
// the same socket while the old one serves (status names both), the old one is stopped
// only once the new one is ready, and no request fails throughout.
func TestE2EOverlapServesEverything_RSOCK04(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	addr := freeAddr(t)
	lives := filepath.Join(dir, "lives")
	cfg := writeConfig(t, fmt.Sprintf(`gateway:
  readiness: {notify: {}, timeout: 10s}
  sockets: [{name: web, listen: %q}]
restart: {cooldown: 0s, delay: 0s, overlap: true}
`, addr))
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg},
		gateway: []string{"sockets", "ready", "ready-delay=500ms", "life-file=" + lives}})
	old := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady }).Gateway.PID
	l := startLoad(addr, 8)
	time.Sleep(200 * time.Millisecond)
	if code, out, errOut := cli("restart", "--now", "--socket", d.socket); code != 0 {
		t.Fatalf("restart: %d %s %s", code, out, errOut)
	}
	during := d.waitFor("the new gateway beside the old one", func(g api.Gateway) bool { return g.NextPID != 0 }).Gateway
	if during.PID != old || during.State != api.GatewayReady {
		t.Fatalf("during the overlap: %+v; want the old pid %d still ready", during, old)
	}
	next := d.waitFor("the new gateway", func(g api.Gateway) bool {
		return g.PID == during.NextPID && g.State == api.GatewayReady && g.DrainingPID == 0 && g.NextPID == 0
	}).Gateway.PID
	time.Sleep(300 * time.Millisecond)
	pids, fails := l.end()
	if len(fails) > 0 {
		t.Fatalf("%d requests failed during the overlapping restart, the first: %v", len(fails), fails[0])
	}
	if pids[old] == 0 || pids[next] == 0 {
		t.Fatalf("answers by pid %v; want both %d and %d", pids, old, next)
	}
	var oldExit, nextStart int64
	for _, ls := range readLives(t, lives) {
		switch ls.pid {
		case old:
			oldExit = ls.exit
		case next:
			nextStart = ls.start
		}
	}
	if oldExit == 0 || nextStart == 0 || time.Duration(oldExit-nextStart) < 500*time.Millisecond {
		t.Fatalf("old exit %d, new start %d: the old one must be stopped only once the new one is ready (500ms)", oldExit, nextStart)
	}
	st, _ := d.status()
	if st.Restart.Last == nil || !st.Restart.Last.OK || st.Restart.Last.PID != next || st.Restart.Last.PreviousPID != old {
		t.Fatalf("restart.last = %+v", st.Restart.Last)
	}
}

// TestE2EOverlapNewNeverReady_RSOCK05: when the new gateway of an overlapping restart is
// not ready in time, it is stopped, the old one keeps serving (same pid, ready, answering)
// and the restart reports failed.
func TestE2EOverlapNewNeverReady_RSOCK05(t *testing.T) {
	// Not parallel: its first gateway has a second to be ready, which other tests' load could
	// make it miss.
	dir := shortDir(t)
	addr := freeAddr(t)
	noReady := filepath.Join(dir, "no-ready")
	cfg := writeConfig(t, fmt.Sprintf(`gateway:
  readiness: {notify: {}, timeout: 1s}
  sockets: [{name: web, listen: %q}]
restart: {cooldown: 0s, delay: 0s, overlap: true}
`, addr))
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg},
		gateway: []string{"sockets", "ready", "no-ready-if=" + noReady}})
	old := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady }).Gateway.PID
	if err := os.WriteFile(noReady, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli("restart", "--now", "--wait", "--socket", d.socket)
	if code != exitFailure || !strings.Contains(errOut, "was not ready within 1s") {
		t.Fatalf("restart --wait: %d %q %q; want exit 1 saying the new gateway was not ready", code, out, errOut)
	}
	st, _ := d.status()
	if st.Gateway.PID != old || st.Gateway.State != api.GatewayReady || st.Gateway.NextPID != 0 {
		t.Fatalf("after the failed restart: %+v; want the old pid %d ready", st.Gateway, old)
	}
	if st.Restart.Last == nil || st.Restart.Last.OK {
		t.Fatalf("restart.last = %+v, want a failure", st.Restart.Last)
	}
	for range 5 {
		if pid, err := get(addr, 5*time.Second); err != nil || pid != old {
			t.Fatalf("request after the failed restart: pid %d, %v; want the old %d", pid, err, old)
		}
	}
}
