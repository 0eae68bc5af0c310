//go:build linux

package platform

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	state, _, ok := parseProcStat(stat)
	return ok && state != 'Z' && state != 'X'
}

func TestParseProcStat(t *testing.T) {
	state, pgrp, ok := parseProcStat([]byte("123 (a b) c)) S 1 456 456 0 -1"))
	if !ok || state != 'S' || pgrp != 456 {
		t.Errorf("got %c %d %v", state, pgrp, ok)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1", "1 (x) S 1 abc", "1 (x) SS 1 2"} {
		if _, _, ok := parseProcStat([]byte(bad)); ok {
			t.Errorf("parseProcStat(%q) ok", bad)
		}
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560"))
	f.Add([]byte("9 ((x) y)) Z 1 9 9"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseProcStat(b)
	})
}

// With schedd as subreaper the orphaned grandchild is reparented to us and reaped by
// KillGroupAndWait: nothing, not even a zombie, is left (R-CHILD-16).
func TestKillGroupAndWaitReapsAsSubreaper(t *testing.T) {
	if err := SetChildSubreaper(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
	out := newLines()
	p := startHelper(t, out, "fork", "exit", "sleep")
	gc := pidFromLine(t, out.waitFor(t, "stdout: grandchild "))
	waitDone(t, p.Done(), "leader exit")
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := p.KillGroupAndWait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := unix.Kill(gc, 0); !errors.Is(err, unix.ESRCH) {
		t.Errorf("kill(%d, 0) = %v, want ESRCH (reaped)", gc, err)
	}
}
