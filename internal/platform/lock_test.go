package platform

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestLockStateDirSameProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state") // created on demand
	l, err := LockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if l.Path() != filepath.Join(dir, "schedd.lock") {
		t.Errorf("Path = %q", l.Path())
	}
	data, err := os.ReadFile(l.Path())
	if err != nil || strings.TrimSpace(string(data)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file holds %q (%v), want our pid", data, err)
	}

	_, err = LockStateDir(dir)
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: %v, want *LockedError", err)
	}
	if le.PID != os.Getpid() || le.Path != l.Path() {
		t.Errorf("LockedError = %+v", le)
	}
	if msg := err.Error(); !strings.Contains(msg, strconv.Itoa(os.Getpid())) || !strings.Contains(msg, l.Path()) {
		t.Errorf("message %q lacks pid or path", msg)
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	l2, err := LockStateDir(dir)
	if err != nil {
		t.Fatalf("lock after Close: %v", err)
	}
	l2.Close()
}

func TestLockedErrorUnknownPID(t *testing.T) {
	err := &LockedError{Path: "/x/schedd.lock"}
	if !strings.Contains(err.Error(), "unknown") || !errors.Is(err, ErrLocked) {
		t.Errorf("got %q", err)
	}
}
