//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
)

// cronYAML is a config with the given cron jobs (YAML flow mappings).
func cronYAML(jobs ...string) string {
	return "cron:\n  jobs:\n    - " + strings.Join(jobs, "\n    - ") + "\n"
}

// shJob is a job (a flow mapping) that runs script with /bin/sh; rest adds keys.
func shJob(name, rest, script string) string {
	return fmt.Sprintf("{name: %s, %s, action: {exec: {command: [/bin/sh, -c, %q]}}}", name, rest, script)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tasksOf lists a job's tasks through the control API, newest first.
func (d *testDaemon) tasksOf(job string) []api.Task {
	d.t.Helper()
	var list api.TaskList
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl := client.New(d.socket)
	defer cl.Close()
	if err := cl.Do(ctx, http.MethodGet, "/v1/tasks?job="+job, nil, &list); err != nil {
		d.t.Fatalf("tasks of %s: %v", job, err)
	}
	return list.Tasks
}

// waitTasks polls a job's tasks until cond holds (20 s at most).
func (d *testDaemon) waitTasks(job, what string, cond func([]api.Task) bool) []api.Task {
	d.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ts := d.tasksOf(job)
		if cond(ts) {
			return ts
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("timed out waiting for %s; tasks of %s: %+v", what, job, ts)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFile polls until path exists with some content (20 s at most).
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if s := readFile(t, path); strings.HasSuffix(s, "\n") {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not written", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestE2ECronKilledMidExecIsLostAndRetriedOnce_P28 is the acceptance test with the
// real daemon: schedd is killed with SIGKILL while an exec job's command runs (the command
// dies with it). The next schedd on the same state dir finds the task lost, retries it
// once (attempt 2, which succeeds), and the slot runs no other time: the command, which
// writes a marker line per run, ran exactly twice.
func TestE2ECronKilledMidExecIsLostAndRetriedOnce_P28(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	work := t.TempDir()
	markers, pidFile := filepath.Join(work, "markers"), filepath.Join(work, "pid")
	cfg := filepath.Join(work, "schedd.yaml")
	writeFile(t, cfg, "cron: {workers: 2}\n")
	opts := daemonOpts{dir: dir, args: []string{"--config", cfg}, gateway: []string{}}
	d := startDaemon(t, opts)

	// The job comes with a reload, so that its one slot is in the future however long the
	// daemon took to start.
	slot := time.Now().Add(2 * time.Second).Round(0).UTC()
	script := `echo "$SCHEDD_CRON_RUN_KEY $SCHEDD_CRON_ATTEMPT $SCHEDD_CRON_KIND" >> ` + markers +
		`; if [ "$SCHEDD_CRON_ATTEMPT" = 1 ]; then echo $$ > ` + pidFile + `; exec sleep 60; fi`
	writeFile(t, cfg, cronYAML(shJob("report", fmt.Sprintf("at: %q, retry: {max: 1, schedule: [1s]}", slot.Format(time.RFC3339Nano)), script)))
	d.cmd.Process.Signal(syscall.SIGHUP)
	pid, _ := strconv.Atoi(strings.TrimSpace(waitFile(t, pidFile)))
	if ts := d.tasksOf("report"); len(ts) != 1 || ts[0].State != api.TaskRunning || ts[0].Attempt != 1 {
		t.Fatalf("before the kill: %+v", ts)
	}
	d.cmd.Process.Signal(syscall.SIGKILL)
	d.wait(10 * time.Second)
	if runtime.GOOS == "linux" { // the parent-death signal: a lost task is not still running
		deadline := time.Now().Add(5 * time.Second)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(pid) {
			t.Fatalf("the command (pid %d) outlived schedd", pid)
		}
	}

	d2 := startDaemon(t, opts)
	ts := d2.waitTasks("report", "the retry to succeed", func(ts []api.Task) bool {
		return len(ts) > 0 && ts[0].State == api.TaskSucceeded
	})
	key := "report@" + slot.Format(time.RFC3339Nano)
	if len(ts) != 2 || ts[1].State != api.TaskLost || ts[1].Attempt != 1 || ts[1].Kind != api.KindScheduled || ts[1].RunKey != key ||
		ts[0].Kind != api.KindRetry || ts[0].Attempt != 2 || ts[0].RunKey != key {
		t.Fatalf("tasks after the restart: %+v", ts)
	}
	code, out, errOut := cli("tasks", "list", "--job", "report", "--socket", d2.socket)
	if code != 0 || !strings.Contains(out, "lost") || !strings.Contains(out, "succeeded") {
		t.Errorf("tasks list = %d:\n%s%s", code, out, errOut)
	}
	code, out, _ = cli("tasks", "show", strconv.FormatInt(ts[1].ID, 10), "--socket", d2.socket)
	if code != 0 || !strings.Contains(out, "lost") || !strings.Contains(out, "schedd stopped while the task was running") {
		t.Errorf("tasks show of the lost task = %d:\n%s", code, out)
	}
	time.Sleep(1500 * time.Millisecond) // room for a run that must not come
	want := []string{key + " 1 scheduled", key + " 2 retry"}
	if got := strings.Split(strings.TrimSpace(readFile(t, markers)), "\n"); !slices.Equal(got, want) {
		t.Fatalf("the command ran %q, want exactly %q", got, want)
	}
	if n := len(d2.tasksOf("report")); n != 2 {
		t.Fatalf("%d tasks, want 2", n)
	}
}

// TestE2ECronCLI drives every cron and tasks command against the real daemon: list, show,
// next (the New York spring-forward gap: 02:30 runs at 03:30 EDT), run --wait, disable and
// enable, a run cancelled through tasks cancel, the errors, the status lines, and a SIGHUP
// that removes a job and brings it back with its history.
func TestE2ECronCLI(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	cfg := filepath.Join(work, "schedd.yaml")
	hello := shJob("hello", "every: 24h", "echo hello from cron")
	slow := shJob("slow", "every: 24h", "exec sleep 60")
	nightly := shJob("nightly", "schedule: '30 2 * * *', timezone: America/New_York", "true")
	writeFile(t, cfg, cronYAML(hello, slow, nightly))
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{}})
	sock := []string{"--socket", d.socket}
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := cli(append(args, sock...)...)
		if code != want {
			t.Fatalf("schedd %s = %d, want %d:\n%s%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out + errOut
	}
	contains := func(what, out string, subs ...string) {
		t.Helper()
		for _, s := range subs {
			if !strings.Contains(out, s) {
				t.Errorf("%s lacks %q:\n%s", what, s, out)
			}
		}
	}

	contains("cron list", run(0, "cron", "list"), "NAME", "hello", "every 24h", "nightly", "30 2 * * *",
		"America/New_York", "never", "0 running (of 4 workers), 0 queued (of 1000)")
	out := run(0, "cron", "next", "nightly", "--from", "2027-03-13T12:00:00-05:00", "--count", "2")
	contains("cron next", out, "LOCAL (America/New_York)", "2027-03-14T03:30:00-04:00  2027-03-14T07:30:00Z",
		"2027-03-15T02:30:00-04:00  2027-03-15T06:30:00Z")
	var next api.CronNextReply
	if err := json.Unmarshal([]byte(run(0, "cron", "next", "nightly", "--count", "3", "--json")), &next); err != nil || len(next.Runs) != 3 {
		t.Errorf("cron next --json: %+v, %v", next, err)
	}

	out = run(0, "cron", "run", "hello", "--wait")
	contains("cron run --wait", out, "succeeded", "manual", "exit code", "hello from cron")
	contains("cron show", run(0, "cron", "show", "hello"), "action", "exec", "next runs (UTC):", "history (newest first):", "succeeded")
	contains("cron disable", run(0, "cron", "disable", "hello"), "cron job hello disabled")
	contains("cron list after disable", run(0, "cron", "list"), "off: disabled by request")
	contains("cron disable again", run(0, "cron", "disable", "hello"), "was already disabled")
	contains("cron enable", run(0, "cron", "enable", "hello"), "cron job hello enabled")

	out = run(0, "cron", "run", "slow")
	id, _, ok := strings.Cut(strings.TrimPrefix(out, "task "), " ")
	if !ok || !strings.Contains(out, "(manual run of slow)") {
		t.Fatalf("cron run slow: %q", out)
	}
	d.waitTasks("slow", "the run to start", func(ts []api.Task) bool { return len(ts) == 1 && ts[0].State == api.TaskRunning })
	contains("tasks list --state running", run(0, "tasks", "list", "--job", "slow", "--state", "running"), id, "slow", "manual", "running")
	contains("tasks show", run(0, "tasks", "show", id), "slow", "running", "run key")
	contains("tasks cancel", run(0, "tasks", "cancel", id), "task "+id+" cancelled (job slow)")
	var tk api.Task
	if err := json.Unmarshal([]byte(run(0, "tasks", "show", id, "--json")), &tk); err != nil ||
		tk.State != api.TaskCancelled || tk.Reason != api.ReasonRequested {
		t.Errorf("tasks show --json after cancel: %+v, %v", tk, err)
	}
	contains("tasks cancel again", run(0, "tasks", "cancel", id), "had already ended: cancelled")
	var list api.TaskList
	if err := json.Unmarshal([]byte(run(0, "tasks", "list", "--json")), &list); err != nil || len(list.Tasks) != 2 {
		t.Errorf("tasks list --json: %+v, %v", list, err)
	}
	contains("status", run(0, "status"), "cron", "3 jobs", "hello", "next in")

	// Mistakes: the daemon's errors name what is wrong (exit 1); usage errors exit 2.
	contains("cron show nope", run(1, "cron", "show", "nope"), `unknown cron job: "nope"`)
	contains("tasks show 9999", run(1, "tasks", "show", "9999"), "unknown task: 9999")
	contains("cron next --count 0", run(2, "cron", "next", "nightly", "--count", "0"), "--count 0")
	contains("tasks list --state done", run(2, "tasks", "list", "--state", "done"), `--state "done"`)
	contains("cron run", run(2, "cron", "run"), "takes one job NAME")

	// SIGHUP: hello goes, added comes; hello's history stays, and is there when it returns.
	helloTask := d.tasksOf("hello")
	writeFile(t, cfg, cronYAML(slow, nightly, shJob("added", "every: 24h", "true")))
	d.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for out = run(0, "cron", "list"); strings.Contains(out, "hello") || !strings.Contains(out, "added"); out = run(0, "cron", "list") {
		if time.Now().After(deadline) {
			t.Fatalf("the reload did not swap hello for added:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	contains("tasks of a removed job", run(0, "tasks", "list", "--job", "hello"), "hello", "succeeded")
	writeFile(t, cfg, cronYAML(hello, slow, nightly))
	d.cmd.Process.Signal(syscall.SIGHUP)
	var detail api.CronJobDetail
	deadline = time.Now().Add(10 * time.Second)
	for {
		code, out, _ := cli(append([]string{"cron", "show", "hello", "--json"}, sock...)...)
		if code == 0 && json.Unmarshal([]byte(out), &detail) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hello did not come back: %s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(detail.History) != 1 || len(helloTask) != 1 || detail.History[0].ID != helloTask[0].ID {
		t.Errorf("hello's history after it came back: %+v, want %+v", detail.History, helloTask)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
}

// TestE2ECronConfigErrors: a bad cron expression or zone is reported by `config validate`
// and by `schedd run` (exit 78) with the file, the line and the column of the bad field
// inside the expression, and why.
func TestE2ECronConfigErrors(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	bad := writeConfig(t, "cron:\n  jobs:\n    - name: nightly\n      schedule: \"30 25 * * *\"\n"+
		"      timezone: America/New_Yrok\n      action: {heartbeat_wake: {}}\n")
	want := []string{
		bad + `:4:21: cron.jobs[0].schedule: invalid cron expression: hour "25": out of range 0-23 (field 2)`,
		bad + `:5:17: cron.jobs[0].timezone: unknown time zone "America/New_Yrok"`,
	}
	code, out, errOut := cli("config", "validate", bad)
	for _, w := range want {
		if code != exitConfig || !strings.Contains(errOut, w) {
			t.Errorf("config validate = %d, want 78 with %s:\n%s%s", code, w, out, errOut)
		}
	}
	d := newDaemon(t, daemonOpts{args: []string{"--config", bad}, gateway: []string{}})
	d.cmd.Stdout, d.cmd.Stderr = nil, nil
	b, err := d.cmd.CombinedOutput()
	if code := exitCode(err); code != exitConfig || !strings.Contains(string(b), want[0]) {
		t.Fatalf("schedd run = %d, want 78 with %s:\n%s", code, want[0], b)
	}
}
