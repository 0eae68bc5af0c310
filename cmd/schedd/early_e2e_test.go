//go:build unix

package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/early"
)

// asSchedd runs the test binary as `schedd ARGS` (see TestMain) with extra environment.
func asSchedd(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(append(os.Environ(), daemonEnv+"=1"), env...)
	return cmd
}

// TestEarlyRestartRequest: a plain `schedd restart` sends its request from package early's
// init, before the rest of schedd is initialized (written by hand: no User-Agent), and
// the command reads the reply on that connection (it exits 0 with the one connection the
// test accepts); any other form makes its request
// through the control client as before (net/http writes it, with its User-Agent).
func TestEarlyRestartRequest(t *testing.T) {
	sock := filepath.Join(shortDir(t), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tt := range []struct {
		args  []string
		early bool
	}{
		{[]string{"restart", "--now", "--socket", sock}, true},
		{[]string{"restart", "--now", "--reason", "deploy", "--socket", sock}, false},
	} {
		cmd := asSchedd(t, nil, tt.args...)
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(req.Body)
		io.WriteString(c, "HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: 19\r\nConnection: close\r\n\r\n{\"coalesced\":false}")
		c.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%q: %v: %s", tt.args, err, errOut.String())
		}
		if hand := req.Header.Get("User-Agent") == ""; hand != tt.early {
			t.Errorf("%q: sent early = %v (User-Agent %q), want %v", tt.args, hand, req.Header.Get("User-Agent"), tt.early)
		}
		if !bytes.Contains(body, []byte(`"now":true`)) {
			t.Errorf("%q: request %s", tt.args, body)
		}
	}
}

// TestEarlyInitOrder: package early is initialized before net/http, the SQLite driver and
// the YAML parser (GODEBUG=inittrace=1 lists the initializers in the order they ran), so
// its request does not wait for them. A new import in internal/early or internal/dirs
// that is initialized late would move it back behind them.
func TestEarlyInitOrder(t *testing.T) {
	cmd := asSchedd(t, []string{"GODEBUG=inittrace=1"}, "restart", "--now", "--socket", filepath.Join(shortDir(t), "none.sock"))
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Run(); err == nil {
		t.Fatal("restart with no daemon succeeded")
	}
	var order []string
	for line := range strings.Lines(errOut.String()) {
		if pkg, ok := initOf(line); ok {
			order = append(order, pkg)
		}
	}
	at := slices.Index(order, "github.com/schedd/schedd/internal/early")
	if at < 0 {
		t.Fatalf("no init of internal/early in the trace:\n%s", errOut.String())
	}
	for _, heavy := range []string{"net/http", "modernc.org/sqlite", "modernc.org/libc", "go.yaml.in/yaml/v3"} {
		if i := slices.Index(order, heavy); i >= 0 && i < at {
			t.Errorf("%s is initialized before internal/early (%d < %d)", heavy, i, at)
		} else if i < 0 {
			t.Errorf("no init of %s in the trace", heavy)
		}
	}
}

// TestEarlyHoldsStartUp: after its early request the command waits for the reply before
// the rest of schedd is initialized, so its start-up does not take the CPU from the
// restart it asked for; a reply that takes longer than early.HoldReply is read after the
// command went on starting, as before.
//
// GODEBUG=inittrace=1 prints each package's init, with the wall time it took, when it
// returns. The daemon here holds its reply 30 ms after reading the request: package
// early's init, which began waiting before that read, takes at least 30 ms (it took
// microseconds when it did not wait). The second daemon replies only once the command
// has initialized net/http without it.
func TestEarlyHoldsStartUp(t *testing.T) {
	const hold = 30 * time.Millisecond
	if hold >= early.HoldReply*time.Nanosecond {
		t.Fatalf("hold %v is not within early.HoldReply", hold)
	}
	sock := filepath.Join(shortDir(t), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const reply = "HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: 19\r\nConnection: close\r\n\r\n{\"coalesced\":false}"

	for _, late := range []bool{false, true} {
		cmd := asSchedd(t, []string{"GODEBUG=inittrace=1"}, "restart", "--now", "--wait", "--socket", sock)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		inits := make(chan string, 1024)
		var trace strings.Builder
		go func() {
			defer close(inits)
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				trace.WriteString(sc.Text() + "\n")
				inits <- sc.Text()
			}
		}()
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			t.Fatal(err)
		}
		if late {
			waitInit(t, inits, "net/http")
		} else {
			time.Sleep(hold)
		}
		io.WriteString(c, reply)
		c.Close()
		if !late {
			clock := initClock(t, inits, "github.com/schedd/schedd/internal/early")
			if clock < hold {
				t.Errorf("package early's init took %v, want >= %v: it did not wait for the reply", clock, hold)
			}
		}
		for range inits {
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("late reply %v: %v\n%s", late, err, trace.String())
		}
	}
}

// initOf is the package of a GODEBUG=inittrace=1 line, "init PKG @0.62 ms, ...".
func initOf(line string) (pkg string, ok bool) {
	if f := strings.Fields(line); len(f) > 2 && f[0] == "init" {
		return f[1], true
	}
	return "", false
}

// waitInit reads inittrace lines until the init of pkg, failing after 10 s.
func waitInit(t *testing.T, inits <-chan string, pkg string) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case line, ok := <-inits:
			if !ok {
				t.Fatalf("the command ended before the init of %s", pkg)
			}
			if p, ok := initOf(line); ok && p == pkg {
				return line
			}
		case <-deadline:
			t.Fatalf("no init of %s within 10 s: the command does not go on starting without the reply", pkg)
		}
	}
}

// initClock is the wall time the init of pkg took, from its inittrace line
// "init PKG @0.62 ms, 0.029 ms clock, 256 bytes, 5 allocs".
func initClock(t *testing.T, inits <-chan string, pkg string) time.Duration {
	t.Helper()
	line := waitInit(t, inits, pkg)
	f := strings.Fields(line)
	if len(f) < 7 || f[6] != "clock," {
		t.Fatalf("inittrace line %q", line)
	}
	ms, err := strconv.ParseFloat(f[4], 64)
	if err != nil {
		t.Fatalf("inittrace line %q: %v", line, err)
	}
	return time.Duration(ms * float64(time.Millisecond))
}
