//go:build unix

package server

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/schedd/schedd/internal/client"
)

// R-ENV-07: the runtime dir holding the control socket is removed while schedd runs (a
// cleaned /run or tmp dir). The directory and the socket come back owner-only within the
// watch period, the server that never stopped answers on it again, and the socket is
// removed once more at shutdown.
func TestRuntimeDirRemoved_RENV07(t *testing.T) {
	dir := filepath.Join(socketPath(t), "..", "run", "schedd")
	path := filepath.Join(dir, "schedd.sock")
	ln, err := Listen(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	kept := Keep(ln, path, 0o600)
	// A look every 10 ms, as the daemon does where it cannot be told of a removal (told at
	// once, it would race the test's own RemoveAll of the tree).
	stopWatch, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var failing bool
		for {
			select {
			case <-stopWatch:
				return
			case <-tick.C:
			}
			ok, err := kept.Check()
			ReportRebind(zap.New(core), "the control socket", path, ok, err, &failing)
		}
	}()
	defer func() { close(stopWatch); <-watched }()
	srv := New(Options{Backend: fakeBackend{}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, kept) }()
	c := client.New(path)
	status := func(when string) {
		t.Helper()
		if st, err := c.Status(context.Background()); err != nil || st.Schedd.PID != 7 {
			t.Fatalf("status %s: %+v, %v", when, st, err)
		}
	}
	status("before")

	for round := range 2 { // and again: the new socket is watched too
		if err := os.RemoveAll(filepath.Dir(dir)); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			// Bound, then made owner-only: wait for both.
			if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() == 0o600 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the control socket was not bound again", round)
			}
			time.Sleep(5 * time.Millisecond)
		}
		status("after the runtime dir was removed")
		for p, want := range map[string]os.FileMode{path: 0o600, dir: 0o700} {
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
				t.Fatalf("%s: %v, %v; want mode %v", p, fi.Mode(), err, want)
			}
		}
	}
	// The socket is back before its rebind is logged.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		n := logs.FilterMessage("the control socket was removed; bound it again").Len()
		if n == 2 {
			break
		}
		if n > 2 || time.Now().After(deadline) {
			t.Fatalf("%d rebinds logged, want 2", n)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("socket left after shutdown: %v", err)
	}
}
