//go:build unix

package platform

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// startStale starts the helper in its own group and without a parent-death signal, like a
// gateway a dead schedd left behind on macOS; it is reaped in the background.
func startStale(t *testing.T, args ...string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(testExe, args...)
	cmd.Env = helperEnviron(nil)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-done })
	return cmd, done
}

// TestStopStaleGroup_RSUP01 is the mechanism behind R-SUP-01: a recorded gateway whose
// start time matches is stopped with its group; one whose pid now names another process
// (another start time) is left alone.
func TestStopStaleGroup_RSUP01(t *testing.T) {
	cmd, done := startStale(t, "sleep")
	pid := cmd.Process.Pid
	start, err := StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if found, err := StopStaleGroup(ctx, pid, start+1, syscall.SIGTERM, time.Minute); found || err != nil {
		t.Fatalf("another start time: found %v, err %v; want the process left alone", found, err)
	}
	select {
	case <-done:
		t.Fatal("a process with another start time was stopped")
	case <-time.After(100 * time.Millisecond):
	}
	if found, err := StopStaleGroup(ctx, pid, start, syscall.SIGTERM, time.Minute); !found || err != nil {
		t.Fatalf("the recorded gateway: found %v, err %v", found, err)
	}
	waitDone(t, done, "the stale gateway")
	if found, err := StopStaleGroup(ctx, pid, start, syscall.SIGTERM, time.Minute); found || err != nil {
		t.Fatalf("once gone: found %v, err %v", found, err)
	}
}

// TestStopStaleGroupStragglers: the leader died (Linux kills it with schedd) but a
// grandchild in its group lives on holding whatever it held: it is killed at once.
func TestStopStaleGroupStragglers(t *testing.T) {
	l := newLines()
	// The leader stays until its start time is read (as schedd records it at the start),
	// then dies alone.
	p, err := Start(Command{Argv: helperArgv("fork", "stay", "sleep"), Env: helperEnviron(nil), Output: l.output})
	if err != nil {
		t.Fatal(err)
	}
	gc := pidFromLine(t, l.waitFor(t, "stdout: grandchild "))
	start, err := StartTime(p.PID())
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(p.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDone(t, p.Done(), "the leader")
	t.Cleanup(func() { p.KillGroupAndWait(context.Background()); p.Release() })
	begin := time.Now()
	if found, err := StopStaleGroup(context.Background(), p.PID(), start, syscall.SIGTERM, time.Minute); !found || err != nil {
		t.Fatalf("found %v, err %v", found, err)
	}
	if alive, _ := groupAlive(p.PID()); alive || time.Since(begin) > 10*time.Second {
		t.Fatalf("grandchild %d: group alive %v after %v", gc, alive, time.Since(begin))
	}
}
