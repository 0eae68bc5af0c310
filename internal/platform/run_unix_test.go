//go:build unix

package platform

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRunCommandCaptures(t *testing.T) {
	res, err := RunCommand(t.Context(), RunSpec{Argv: helperArgv("echo", "a", "b"), Env: helperEnviron(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != (ExitStatus{Exited: true}) || string(res.Stdout) != "a\nb\n" || string(res.Stderr) != "err:a\nerr:b\n" {
		t.Errorf("got %+v %q %q", res.Status, res.Stdout, res.Stderr)
	}
}

// A non-zero exit is a status, not an error.
func TestRunCommandExitCode(t *testing.T) {
	res, err := RunCommand(t.Context(), RunSpec{Argv: helperArgv("exit", "7"), Env: helperEnviron(nil)})
	if err != nil || res.Status != (ExitStatus{Exited: true, Code: 7}) {
		t.Errorf("got %+v, %v", res.Status, err)
	}
}

func TestRunCommandStdin(t *testing.T) {
	in := bytes.Repeat([]byte("stdin line\n"), 1000)
	res, err := RunCommand(t.Context(), RunSpec{Argv: helperArgv("cat"), Env: helperEnviron(nil), Stdin: in})
	if err != nil || !bytes.Equal(res.Stdout, in) {
		t.Errorf("got %d bytes, %v", len(res.Stdout), err)
	}
	// nil Stdin is /dev/null: cat sees EOF at once.
	res, err = RunCommand(t.Context(), RunSpec{Argv: helperArgv("cat"), Env: helperEnviron(nil)})
	if err != nil || len(res.Stdout) != 0 || res.Status.Code != 0 {
		t.Errorf("got %q, %+v, %v", res.Stdout, res.Status, err)
	}
}

// Output past MaxOutput is discarded without blocking the child (R-CHILD-14 for probes).
func TestRunCommandCapsOutput(t *testing.T) {
	for _, tt := range []struct{ max, want int }{{1000, 1000}, {0, defaultMaxOutput}} {
		res, err := RunCommand(t.Context(), RunSpec{Argv: helperArgv("flood", "20000"), Env: helperEnviron(nil), MaxOutput: tt.max})
		if err != nil || res.Status.Code != 0 {
			t.Fatalf("max %d: %+v, %v", tt.max, res.Status, err)
		}
		if len(res.Stdout) != tt.want || !bytes.HasPrefix(res.Stdout, []byte("00000000xx")) {
			t.Errorf("max %d: captured %d bytes, want %d", tt.max, len(res.Stdout), tt.want)
		}
	}
}

func TestRunCommandDir(t *testing.T) {
	dir := t.TempDir()
	res, err := RunCommand(t.Context(), RunSpec{Argv: []string{"/bin/sh", "-c", "pwd -P"}, Dir: dir})
	real, _ := filepath.EvalSymlinks(dir)
	if err != nil || strings.TrimSpace(string(res.Stdout)) != real {
		t.Errorf("pwd = %q, %v; want %q", res.Stdout, err, real)
	}
}

// When ctx ends the whole group is killed, grandchildren included, and the error wraps
// ctx.Err() (R-CHILD-12 for probes).
func TestRunCommandContextKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "gc.pid")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Cancel once the grandchild has written its pid: everything is running by then.
	cancelOnFile(ctx, cancel, pidfile)
	res, err := RunCommand(ctx, RunSpec{
		Argv: helperArgv("fork", "stay", "pidfile", pidfile, "sleep"),
		Env:  helperEnviron(nil),
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if res.Status.SignalName != "SIGKILL" {
		t.Errorf("status = %v", res.Status)
	}
	if !strings.HasPrefix(string(res.Stdout), "grandchild ") {
		t.Errorf("stdout = %q", res.Stdout)
	}
	data, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	gc, _ := strconv.Atoi(string(data))
	waitGone(t, gc)
}

func TestRunCommandDoneContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := RunCommand(ctx, RunSpec{Argv: helperArgv("exit", "0"), Env: helperEnviron(nil)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}

// waitGone polls until pid is dead (SIGKILL delivery is asynchronous).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
