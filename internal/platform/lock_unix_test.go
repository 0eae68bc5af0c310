//go:build unix

package platform

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Another process holding the lock is named by its pid; once it is gone the lock is ours.
func TestLockStateDirHeldByOtherProcess(t *testing.T) {
	dir := t.TempDir()
	out := newLines()
	p := startHelper(t, out, "lock", dir)
	line := out.waitFor(t, "stdout: locked ")
	if line != "stdout: locked "+strconv.Itoa(p.PID()) {
		t.Fatalf("helper said %q", line)
	}
	_, err := LockStateDir(dir)
	var le *LockedError
	if !errors.As(err, &le) || le.PID != p.PID() {
		t.Fatalf("LockStateDir = %v, want LockedError naming %d", err, p.PID())
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	waitDone(t, p.Done(), "exit")
	l, err := LockStateDir(dir)
	if err != nil {
		t.Fatalf("lock after holder died: %v", err)
	}
	l.Close()
}

// A second process sees our lock and our pid; after Close it can take it.
func TestLockStateDirSeenByOtherProcess(t *testing.T) {
	dir := t.TempDir()
	l, err := LockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunCommand(t.Context(), RunSpec{Argv: helperArgv("trylock", dir), Env: helperEnviron(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status.Code != 3 || strings.TrimSpace(string(res.Stdout)) != "locked-by "+strconv.Itoa(os.Getpid()) {
		t.Fatalf("trylock: %v %q %q", res.Status, res.Stdout, res.Stderr)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	res, err = RunCommand(t.Context(), RunSpec{Argv: helperArgv("trylock", dir), Env: helperEnviron(nil)})
	if err != nil || res.Status.Code != 0 {
		t.Fatalf("trylock after Close: %v %v %q", err, res.Status, res.Stderr)
	}
}

// The lock is not inherited: a child started while we hold it does not keep it held.
func TestLockNotInheritedByChildren(t *testing.T) {
	dir := t.TempDir()
	l, err := LockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	startHelper(t, nil, "sleep")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := LockStateDir(dir)
	if err != nil {
		t.Fatalf("lock while a child runs: %v", err)
	}
	l2.Close()
}
