//go:build unix

package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/testgateway"
)

// shellGateway runs script as the gateway (sh -c), so that the test decides exactly what
// it writes and when.
func shellGateway(t *testing.T, script string) *testDaemon {
	t.Helper()
	d := startDaemon(t, daemonOpts{args: []string{"--", "/bin/sh", "-c", script}})
	d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	return d
}

// logTime is the time of a line of `schedd logs`: local, to the millisecond.
const logTime = "2006-01-02T15:04:05.000Z07:00"

// logLine matches one line of `schedd logs`: TIME PID STREAM TEXT.
func logLine(t *testing.T, line string, pid int, stream, text string) {
	t.Helper()
	f := strings.SplitN(line, " ", 4)
	if len(f) != 4 || f[1] != strconv.Itoa(pid) || f[2] != stream || f[3] != text {
		t.Errorf("line %q, want TIME %d %s %s", line, pid, stream, text)
		return
	}
	if _, err := time.Parse(logTime, f[0]); err != nil {
		t.Errorf("line %q: time: %v", line, err)
	}
}

// TestE2ELogsLast: `schedd logs -n 5` prints the last five lines the gateway wrote, in
// order, with its pid and stream.
func TestE2ELogsLast(t *testing.T) {
	t.Parallel()
	d := shellGateway(t, `i=1; while [ $i -le 12 ]; do echo "line $i"; i=$((i+1)); done; exec sleep 600`)
	pid := d.waitFor("ready", func(g api.Gateway) bool { return g.PID != 0 }).Gateway.PID
	var out string
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out, "line 12") {
		if time.Now().After(deadline) {
			t.Fatalf("schedd logs never showed line 12; last output:\n%s", out)
		}
		time.Sleep(10 * time.Millisecond)
		var code int
		var errOut string
		if code, out, errOut = cli("logs", "-n", "5", "--socket", d.socket); code != 0 {
			t.Fatalf("schedd logs -n 5: exit %d: %s", code, errOut)
		}
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("schedd logs -n 5 printed %d lines:\n%s", len(lines), out)
	}
	for i, l := range lines {
		logLine(t, l, pid, "stdout", "line "+strconv.Itoa(8+i))
	}
	code, out, _ := cli("logs", "-n", "1", "--json", "--socket", d.socket)
	if code != 0 || !regexp.MustCompile(`^\{"seq":12,"time":"[^"]+","pid":`+strconv.Itoa(pid)+`,"stream":"stdout","text":"line 12"\}\n$`).MatchString(out) {
		t.Fatalf("schedd logs -n 1 --json = %d %q", code, out)
	}
}

// follower is `schedd logs -f` run as its own process, as from a terminal.
type follower struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *syncBuffer
}

func startFollower(t *testing.T, d *testDaemon, args ...string) *follower {
	t.Helper()
	f := &follower{cmd: exec.Command(scheddBin, append([]string{"logs", "-f", "--socket", d.socket}, args...)...),
		lines: make(chan string, 100), stderr: &syncBuffer{}}
	f.cmd.Env = append(os.Environ(), "GORACE="+testgateway.GoRace)
	f.cmd.Stderr = f.stderr
	out, err := f.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.cmd.Process.Kill(); f.cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f.lines <- sc.Text()
		}
		close(f.lines)
	}()
	return f
}

func (f *follower) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-f.lines:
		if !ok {
			t.Fatalf("schedd logs -f ended early; stderr: %s", f.stderr.String())
		}
		return l
	case <-time.After(10 * time.Second):
		t.Fatalf("schedd logs -f printed nothing for 10 s; stderr: %s", f.stderr.String())
		return ""
	}
}

// wait waits for the follower to exit and checks that it exited 0.
func (f *follower) wait(t *testing.T, what string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("schedd logs -f after %s: %v; stderr: %s", what, err, f.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("schedd logs -f did not exit after %s", what)
	}
}

// TestE2ELogsFollow: `schedd logs -f` streams a line the gateway writes after it started,
// exits 0 on ^C, and ends by itself (exit 0) when schedd stops.
func TestE2ELogsFollow(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "say")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	d := shellGateway(t, `echo first; read l < `+fifo+`; echo "$l" >&2; exec sleep 600`)
	pid := d.waitFor("ready", func(g api.Gateway) bool { return g.PID != 0 }).Gateway.PID

	f := startFollower(t, d, "-n", "1")
	logLine(t, f.next(t), pid, "stdout", "first") // it is following now
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString("said after the follower started\n")
	w.Close()
	logLine(t, f.next(t), pid, "stderr", "said after the follower started")
	f.cmd.Process.Signal(os.Interrupt)
	f.wait(t, "^C")
	if s := f.stderr.String(); s != "" {
		t.Errorf("^C printed %q", s)
	}

	f = startFollower(t, d, "-n", "1")
	logLine(t, f.next(t), pid, "stderr", "said after the follower started")
	d.cmd.Process.Signal(syscall.SIGTERM)
	f.wait(t, "schedd stopped")
	if !strings.Contains(f.stderr.String(), "schedd stopped") {
		t.Errorf("stderr %q does not say schedd stopped", f.stderr.String())
	}
	if code := d.wait(10 * time.Second); code != 0 {
		t.Fatalf("schedd exit code %d", code)
	}
}
