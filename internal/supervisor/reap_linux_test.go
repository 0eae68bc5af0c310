package supervisor

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/platform"
)

// adoptAsSchedd makes the test process the reaper of its descendants' orphans, as
// `schedd run` is, for the rest of the test.
func adoptAsSchedd(t *testing.T) {
	t.Helper()
	stop, err := platform.StartReaper(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
}

// procParent reads the parent pid and state of pid from /proc.
func procParent(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 2 {
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0][0], true
}

// ourChildren lists the test process's children, with their states.
func ourChildren(t *testing.T) map[int]byte {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	kids := map[int]byte{}
	for _, task := range tasks {
		b, _ := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "children"))
		for _, f := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(f)
			if _, state, ok := procParent(pid); ok {
				kids[pid] = state
			}
		}
	}
	return kids
}

// untilNoChildren waits until the test process has no child left, not even a zombie.
func untilNoChildren(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		kids := ourChildren(t)
		if len(kids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of the gateway's tree left behind (pid: state): %v", kids)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRealOrphansReaped_RCHILD16: the gateway double-forks, a child that exits at once
// (a zombie the gateway never reaps) and a grandchild in a session of its own that
// outlives it. The grandchild is adopted by schedd while the gateway runs; once the
// gateway is stopped no zombie and no process of its tree is left.
func TestRealOrphansReaped_RCHILD16(t *testing.T) {
	adoptAsSchedd(t)
	gc := filepath.Join(t.TempDir(), "grandchild")
	h := runReal(t, realConfig(t, "orphan="+gc), false)
	h.waitFor("the grandchild", func(api.Gateway) bool { return len(readPIDs(t, gc)) > 0 })
	g := readPIDs(t, gc)
	if len(g) != 1 {
		t.Fatalf("grandchildren %v, want one", g)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ppid, _, _ := procParent(g[0]); ppid != os.Getpid(); ppid, _, _ = procParent(g[0]) {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d has parent %d, want schedd (%d)", g[0], ppid, os.Getpid())
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.stop()
	if alive(g[0]) {
		t.Errorf("grandchild %d survived the stop", g[0])
	}
	untilNoChildren(t)
	if h.logs.FilterMessage("stopping a process the gateway left behind").Len() != 1 {
		t.Errorf("the stop of the grandchild was not logged once")
	}
}

// TestRealEscapeeHoldingPortKilled_RCHILD13: the gateway's grandchild leaves the group
// (setsid), keeps the gateway's listening socket and ignores SIGTERM. When the gateway
// dies it gets SIGTERM, then SIGKILL at the stop timeout, and only then does the next
// gateway start: it binds the port at once, with no bind-failure crash loop.
func TestRealEscapeeHoldingPortKilled_RCHILD13(t *testing.T) {
	adoptAsSchedd(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	gc := filepath.Join(t.TempDir(), "grandchild")
	cfg := realConfig(t, "http="+addr, "orphan="+gc, "stubborn")
	cfg.StopTimeout = 300 * time.Millisecond
	h := runReal(t, cfg, false)
	st := h.waitFor("the grandchild", func(api.Gateway) bool { return len(readPIDs(t, gc)) > 0 })
	first := readPIDs(t, gc)
	if len(first) != 1 {
		t.Fatalf("grandchildren %v, want one", first)
	}
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st2 := h.waitFor("the next gateway", func(s api.Gateway) bool {
		return s.State == api.GatewayReady && s.PID != st.PID && len(readPIDs(t, gc)) > 1
	})
	if alive(first[0]) {
		t.Fatalf("the escapee %d holding the port survived the gateway's death", first[0])
	}
	time.Sleep(300 * time.Millisecond) // a gateway that cannot bind exits at once
	st3 := h.sup.Status()
	if st3.PID != st2.PID || st3.Restarts != 1 || st3.ConsecutiveFailures > 1 {
		t.Fatalf("after the escapee was killed: %+v, last exit %+v; want the second gateway still up", st3, st3.LastExit)
	}
	term := h.logs.FilterMessage("stopping a process the gateway left behind").All()
	kill := h.logs.FilterMessage("killing a process the gateway left behind").All()
	if len(term) != 1 || len(kill) != 1 {
		t.Fatalf("logged %d stops and %d kills of the escapee, want 1 and 1", len(term), len(kill))
	}
	if d := kill[0].Time.Sub(term[0].Time); d < 250*time.Millisecond {
		t.Fatalf("SIGKILL came %v after SIGTERM, before the stop timeout", d)
	}
	if pid := kill[0].ContextMap()["pid"]; pid != int64(first[0]) {
		t.Fatalf("killed pid %v, want the escapee %d", pid, first[0])
	}
	h.stop()
	untilNoChildren(t)
}
