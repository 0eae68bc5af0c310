package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/testgateway"
)

// procTree maps each pid to its parent and state, from /proc.
func procTree() map[int]struct {
	ppid  int
	state byte
} {
	tree := map[int]struct {
		ppid  int
		state byte
	}{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		tree[pid] = struct {
			ppid  int
			state byte
		}{ppid, f[0][0]}
	}
	return tree
}

// descendants returns the processes below root and how many of them are zombies.
func descendants(root int) (pids []int, zombies int) {
	tree := procTree()
	for pid := range tree {
		for p := pid; p > 1; p = tree[p].ppid {
			if tree[p].ppid == root {
				pids = append(pids, pid)
				if tree[pid].state == 'Z' {
					zombies++
				}
				break
			}
		}
	}
	return pids, zombies
}

// TestE2EPID1ReapsAndStops_RCHILD16 runs schedd as PID 1 of a new PID namespace, the way
// a container runs its init. The gateway leaves an orphan behind every 50 ms; each is
// reparented to schedd when its parent exits and reaped when it dies, so zombies never
// pile up. A SIGTERM then stops the gateway and the process it left in a session of its
// own, gracefully, and schedd exits 0.
func TestE2EPID1ReapsAndStops_RCHILD16(t *testing.T) {
	t.Parallel()
	wrap := testgateway.PIDNamespace(t)
	escapee := filepath.Join(shortDir(t), "escapee")
	d := startDaemon(t, daemonOpts{wrap: wrap, args: []string{"--log-level", "debug"},
		gateway: []string{"orphan=" + escapee, "orphan-churn=50ms"}})
	st := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady })
	if st.Schedd.PID != 1 {
		t.Fatalf("schedd runs as pid %d in its namespace, want 1", st.Schedd.PID)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(d.cmd.Process.Pid) + "/task/" + strconv.Itoa(d.cmd.Process.Pid) + "/children")
	if err != nil {
		t.Fatal(err)
	}
	schedd, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("unshare's children %q: want schedd alone", b)
	}
	worst := 0
	for range 30 {
		_, z := descendants(schedd)
		worst = max(worst, z)
		time.Sleep(50 * time.Millisecond)
	}
	if worst > 3 {
		t.Fatalf("up to %d zombies under schedd as PID 1: orphans are not reaped", worst)
	}
	if !d.waitLog("schedd runs as PID 1") {
		t.Fatal("no log line for running as PID 1")
	}
	// The churn makes an orphan every 50 ms once the fake gateway runs, which a loaded
	// machine may start late: wait for five to be reaped.
	reaped := func() int { return strings.Count(d.out.String(), "reaped an orphaned process") }
	for deadline := time.Now().Add(20 * time.Second); reaped() < 5 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if n := reaped(); n < 5 {
		t.Fatalf("%d orphans reaped in 20 s, want the gateway's churn", n)
	}
	tree, _ := descendants(schedd)
	if err := syscall.Kill(schedd, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	out := d.out.String()
	for _, want := range []string{"gateway stopped", "stopping a process the gateway left behind"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the log", want)
		}
	}
	if strings.Contains(out, "killing a process the gateway left behind") {
		t.Error("the process the gateway left behind had to be killed; SIGTERM should have stopped it")
	}
	for _, pid := range tree {
		if alive(pid) {
			t.Errorf("pid %d of schedd's tree survived", pid)
		}
	}
}
