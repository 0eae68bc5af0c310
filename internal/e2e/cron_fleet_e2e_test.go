//go:build unix

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
	"github.com/schedd/schedd/internal/store/postgres/pgtest"
)

// cronFleetRun is how long TestE2ECronFleet lets two hosts share a job due every second.
const cronFleetRun = 60 * time.Second

// Two `schedd run` hosts share one PostgreSQL database and the same cron job, due every
// second, whose command appends its slot and host to a file. For a minute:
//
//   - each slot from the first to the last ran exactly once, on one host (a slot the loop
//     could only see late, past the next one, is covered by one catch-up run, never skipped
//     in silence);
//   - the other host stands by, names the leader, and refuses `cron run` by naming it;
//   - the tasks and `schedd cron list` say which host ran them.
//
// Then the leader is killed with SIGKILL: the other host takes over within the lease, no
// slot runs twice, and the slots of the gap are recorded by one catch-up run (P24).
func TestE2ECronFleet(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	dsn := pgtest.DSN(t)
	log := filepath.Join(t.TempDir(), "runs.log")
	mkHost := func(id string) (string, string) {
		dir := shortDir(t)
		return dir, writeConfig(t, fmt.Sprintf(`gateway:
  command: [sh, -c, 'p=$PPID; while kill -0 $p 2>/dev/null; do sleep 0.2; done']
deliveries:
  store: {postgres: {dsn: %q, host_id: %s, lease: %s, max_conns: 4}}
cron:
  jobs:
    - name: tick
      every: 1s
      action: {exec: {command: [/bin/sh, -c, 'echo "$SCHEDD_CRON_SLOT %s $SCHEDD_CRON_KIND" >> %s']}}
`, dsn, id, fleetLease, id, log))
	}
	dirA, cfgA := mkHost("host-a")
	dirB, cfgB := mkHost("host-b")
	a := startDaemon(t, daemonOpts{dir: dirA, args: []string{"--config", cfgA}})
	waitRole(t, a, "leader")
	b := startDaemon(t, daemonOpts{dir: dirB, args: []string{"--config", cfgB}})
	st := waitRole(t, b, "standby")
	if st.Fleet.Leader != "host-a" {
		t.Fatalf("host b's fleet status %+v: want host-a named as the leader", *st.Fleet)
	}
	code, _, errOut := cli("cron", "run", "tick", "--socket", b.socket)
	if code == 0 || !strings.Contains(errOut, `host "host-a"`) {
		t.Fatalf("cron run on the standby: exit %d, %q: want a refusal naming host-a", code, errOut)
	}
	time.Sleep(cronFleetRun)

	runs := readRuns(t, log)
	var slots []time.Time
	for slot, hosts := range runs {
		if len(hosts) != 1 {
			t.Errorf("slot %s ran %d times: %v", slot.Format(time.RFC3339), len(hosts), hosts)
		}
		if hosts[0].host != "host-a" {
			t.Errorf("slot %s ran on %s while host-a led", slot.Format(time.RFC3339), hosts[0].host)
		}
		slots = append(slots, slot)
	}
	first, last := slices.MinFunc(slots, time.Time.Compare), slices.MaxFunc(slots, time.Time.Compare)
	if n := int(last.Sub(first)/time.Second) + 1; n < int(cronFleetRun/time.Second)-5 {
		t.Fatalf("%d slots ran from %s to %s: want every second, about %v of them", len(slots),
			first.Format(time.RFC3339), last.Format(time.RFC3339), cronFleetRun/time.Second)
	}
	// Every slot ran. A loop held up past the next slot (a stalled commit on a loaded
	// machine) makes its missed slots one catch-up run, by the job's missed policy: a gap is
	// allowed only right before a catch_up run, never in silence.
	missed := 0
	for s := first; s.Before(last); s = s.Add(time.Second) {
		if len(runs[s]) > 0 {
			continue
		}
		missed++
		next := s.Add(time.Second)
		for len(runs[next]) == 0 {
			next = next.Add(time.Second)
		}
		if runs[next][0].kind != "catch_up" {
			t.Errorf("slot %s did not run, and the run after it (%s) is %s, not a catch-up", s.Format(time.RFC3339),
				next.Format(time.RFC3339), runs[next][0].kind)
		}
	}
	if missed > len(slots)/10 {
		t.Errorf("%d of %d slots missed", missed, missed+len(slots))
	}
	code, out, _ := cli("cron", "list", "--socket", b.socket)
	if code != 0 || !strings.Contains(out, "on host-a") || !strings.Contains(out, "host host-a runs the jobs") {
		t.Fatalf("cron list on host b: exit %d:\n%s", code, out)
	}
	code, out, _ = cli("tasks", "list", "--job", "tick", "--limit", "3", "--socket", b.socket)
	if code != 0 || !strings.Contains(out, "HOST") || !strings.Contains(out, "host-a") {
		t.Fatalf("tasks list on host b: exit %d:\n%s", code, out)
	}

	// The leader dies: host b takes over within the lease and catches up once.
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
	killed := time.Now()
	waitRole(t, b, "leader")
	took := time.Since(killed)
	if took > 3*fleetLease {
		t.Errorf("host b took %v to take over; the lease is %v", took, fleetLease)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if n := onHost(readRuns(t, log), "host-b"); n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("host b ran nothing after the takeover")
		}
	}
	runs = readRuns(t, log)
	catchUps := 0
	for slot, hosts := range runs {
		if len(hosts) != 1 {
			t.Errorf("slot %s ran %d times: %v", slot.Format(time.RFC3339), len(hosts), hosts)
		}
		if hosts[0].kind == "catch_up" {
			catchUps++
		}
	}
	if catchUps > 1 {
		t.Errorf("%d catch-up runs after one takeover", catchUps)
	}
	t.Logf("host b took over %v after the kill; %d slots ran, %d on host b", took.Round(time.Millisecond), len(runs),
		onHost(runs, "host-b"))
}

// waitRole waits until d's cron fleet role is role and returns its cron status.
func waitRole(t *testing.T, d *testDaemon, role string) api.Cron {
	t.Helper()
	cl := client.New(d.socket)
	defer cl.Close()
	var c api.Cron
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := cl.Do(ctx, http.MethodGet, "/v1/cron", nil, &c)
		cancel()
		if err == nil && c.Fleet != nil && c.Fleet.Role == role {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("cron fleet role %q not reached in 30 s: %+v %v\n%s", role, c.Fleet, err, d.out.String())
		}
	}
}

// fleetRun is one line of the job's log.
type fleetRun struct{ host, kind string }

// readRuns reads the job's log: the runs of each slot.
func readRuns(t *testing.T, path string) map[time.Time][]fleetRun {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	runs := map[time.Time][]fleetRun{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		slot, err := time.Parse(time.RFC3339, f[0])
		if err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		runs[slot] = append(runs[slot], fleetRun{host: f[1], kind: f[2]})
	}
	return runs
}

func onHost(runs map[time.Time][]fleetRun, host string) int {
	n := 0
	for _, rs := range runs {
		for _, r := range rs {
			if r.host == host {
				n++
			}
		}
	}
	return n
}
