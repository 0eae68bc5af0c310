//go:build unix

package platform

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStartDetached: the process runs in a session of its own (nothing sent to schedd's
// group reaches it), gets the extra files as fd 3.., and WaitExit sees it go.
func TestStartDetached(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d, err := StartDetached(DetachedCommand{
		Argv:       helperArgv("close-stdio"),
		Env:        helperEnviron(nil),
		ExtraFiles: []*os.File{w},
	})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "closed" {
		t.Fatalf("fd 3 said %q, %v", line, err)
	}
	sid, err := unix.Getsid(d.PID())
	if err != nil {
		t.Fatal(err)
	}
	if sid != d.PID() {
		t.Fatalf("session %d, want its own (%d)", sid, d.PID())
	}
	if !ProcessAlive(d.PID()) {
		t.Fatal("not alive")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	err = WaitExit(ctx, d.PID())
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitExit on a live process: %v", err)
	}
	if err := d.Kill(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := WaitExit(ctx, d.PID()); err != nil {
		t.Fatal(err)
	}
	if ProcessAlive(d.PID()) {
		t.Fatal("still alive after Kill")
	}
}

func TestStartDetachedErrors(t *testing.T) {
	if _, err := StartDetached(DetachedCommand{}); err == nil {
		t.Fatal("empty argv started")
	}
	_, err := StartDetached(DetachedCommand{Argv: []string{"/nonexistent/schedd"}})
	if se, ok := errors.AsType[*SpawnError](err); !ok || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v (%T %v)", err, se, ok)
	}
}
