package platform

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/schedd/schedd/internal/testgateway"
)

// startReaper runs the reaper for the rest of the test.
func startReaper(t *testing.T) (reaped func() []int) {
	t.Helper()
	var mu sync.Mutex
	var pids []int
	stop, err := StartReaper(func(pid int, _ ExitStatus) {
		mu.Lock()
		pids = append(pids, pid)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return func() []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(pids)
	}
}

// parentOf returns pid's parent and state from /proc.
func parentOf(pid int) (ppid int, state byte, ok bool) {
	st, ok := readStat(pid)
	return st.ppid, st.state, ok
}

// eventually polls cond until it holds or waitTimeout passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// R-CHILD-16: grandchildren orphaned by short-lived children are reparented to schedd
// and reaped as they exit, while the exit statuses of schedd's own children, waited for
// by Process and by os/exec, are never taken from them.
func TestReaperReapsOrphansNotOwnChildren(t *testing.T) {
	reaped := startReaper(t)
	var orphans []int
	for range 5 {
		out := newLines()
		p := startHelper(t, out, "fork", "exit", "nap", "300ms")
		orphans = append(orphans, pidFromLine(t, out.waitFor(t, "stdout: grandchild ")))
		waitDone(t, p.Done(), "leader exit")
		if st := p.ExitStatus(); !st.Exited || st.Code != 0 {
			t.Fatalf("leader status %v, want exit 0", st)
		}
	}
	for _, pid := range orphans {
		if ppid, state, ok := parentOf(pid); ok && state != 'Z' && ppid != os.Getpid() {
			t.Errorf("orphan %d has parent %d, want schedd (%d)", pid, ppid, os.Getpid())
		}
	}
	// Meanwhile commands run to completion keep their statuses.
	for i := range 20 {
		res, err := RunCommand(context.Background(), RunSpec{Argv: helperArgv("exit", strconv.Itoa(i+1)), Env: helperEnviron(nil)})
		if err != nil || !res.Status.Exited || res.Status.Code != i+1 {
			t.Fatalf("RunCommand: %v, %v; want exit %d", res.Status, err, i+1)
		}
	}
	eventually(t, "the orphans reaped", func() bool {
		for _, pid := range orphans {
			if _, _, ok := parentOf(pid); ok {
				return false // alive, or a zombie nobody reaps
			}
		}
		return true
	})
	got := reaped()
	for _, pid := range orphans {
		if !slices.Contains(got, pid) {
			t.Errorf("orphan %d was not reaped by the reaper (reaped %v)", pid, got)
		}
	}
}

// R-CHILD-13: a grandchild that left the group for a session of its own is found among the
// adopted processes and can be stopped; a stale entry (same pid, another start time)
// is never signalled.
func TestSignalAdoptedEscapee(t *testing.T) {
	startReaper(t)
	out := newLines()
	p := startHelper(t, out, "setsid-fork", "sleep")
	gc := pidFromLine(t, out.waitFor(t, "stdout: grandchild "))
	waitDone(t, p.Done(), "leader exit")
	var found []AdoptedProcess
	eventually(t, "the escapee adopted", func() bool {
		found = nil
		for _, a := range Adopted() {
			if a.PID == gc {
				found = append(found, a)
			}
		}
		return len(found) == 1
	})
	if found[0].PGID == p.PID() || found[0].Name == "" {
		t.Fatalf("adopted %+v: want its own group and a name", found[0])
	}
	stale := found[0]
	stale.start++
	if sent, err := SignalAdopted([]AdoptedProcess{stale}, unix.SIGKILL); err != nil || len(sent) != 0 {
		t.Fatalf("stale entry: sent %v, %v; want nothing", sent, err)
	}
	if !ProcessAlive(gc) {
		t.Fatal("the escapee died of a signal meant for another process")
	}
	if sent, err := SignalAdopted(found, unix.SIGKILL); err != nil || len(sent) != 1 {
		t.Fatalf("sent %v, %v; want the escapee", sent, err)
	}
	eventually(t, "the escapee gone", func() bool { _, _, ok := parentOf(gc); return !ok })
	for _, a := range Adopted() {
		if a.PID == gc {
			t.Fatalf("%d still adopted", gc)
		}
	}
}

// Without the reaper nothing counts as adopted: a child schedd started itself is never a
// stranger to stop.
func TestAdoptedNeedsTheReaper(t *testing.T) {
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if a := Adopted(); len(a) != 0 {
		t.Fatalf("adopted %+v without a reaper", a)
	}
	stop := startReaperOnce(t)
	defer stop()
	for _, a := range Adopted() {
		if a.PID == cmd.Process.Pid {
			t.Fatalf("a child that was there before the reaper started is taken for an orphan: %+v", a)
		}
	}
}

func startReaperOnce(t *testing.T) func() {
	t.Helper()
	stop, err := StartReaper(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := StartReaper(nil); err == nil {
		t.Fatal("a second reaper started")
	}
	return stop
}

// pidnsEnv marks the run of this test binary inside a new PID namespace.
const pidnsEnv = "SCHEDD_PLATFORM_IN_PIDNS"

// TestSignalNeverReachesRecycledPID_RCHILD17: the gateway exits and, before schedd signals
// it, its pid is handed to a stranger that leads a group of its own. Neither Signal nor
// KillGroupAndWait reaches the stranger, through a pidfd or by number. The pid is recycled
// on purpose with ns_last_pid, inside a PID namespace of our own where nothing else forks.
func TestSignalNeverReachesRecycledPID_RCHILD17(t *testing.T) {
	if os.Getenv(pidnsEnv) != "1" {
		runInPIDNamespace(t, "^TestSignalNeverReachesRecycledPID_RCHILD17$")
		return
	}
	for _, byNumber := range []bool{false, true} {
		name := "pidfd"
		if byNumber {
			name = "by number"
		}
		t.Run(name, func(t *testing.T) {
			was := pidfdGroupUnsupported.Load()
			pidfdGroupUnsupported.Store(byNumber)
			defer pidfdGroupUnsupported.Store(was)

			gw := startHelper(t, nil, "exit", "0")
			waitDone(t, gw.Done(), "gateway exit")
			n := gw.PID()
			if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(n-1)), 0o644); err != nil {
				t.Fatal(err)
			}
			stranger := startHelper(t, nil, "sleep")
			if stranger.PID() != n {
				t.Fatalf("the stranger got pid %d, not the gateway's %d: nothing was recycled", stranger.PID(), n)
			}
			if err := gw.Signal(unix.SIGKILL); !errors.Is(err, os.ErrProcessDone) {
				t.Errorf("Signal after exit: %v, want os.ErrProcessDone", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			if err := gw.KillGroupAndWait(ctx); err != nil {
				t.Errorf("KillGroupAndWait: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
			select {
			case <-stranger.Done():
				t.Fatalf("the stranger holding the recycled pid %d was killed: %v", n, stranger.ExitStatus())
			default:
			}
		})
	}
}

// runInPIDNamespace runs the tests matching run in this binary as PID 1 of a new PID
// namespace, with a /proc of its own.
func runInPIDNamespace(t *testing.T, run string) {
	t.Helper()
	ns := testgateway.PIDNamespace(t)
	cmd := exec.Command(ns[0], append(ns[1:], testExe, "-test.run="+run, "-test.v", "-test.count=1")...)
	cmd.Env = append(os.Environ(), pidnsEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in a new PID namespace: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("nothing passed in the PID namespace:\n%s", out)
	}
	t.Logf("in a new PID namespace:\n%s", out)
}
