package cron

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/platform"
)

// P28 with real processes, the acceptance test: schedd (here a child process running
// the service) is killed with SIGKILL while an exec job's command runs. The command dies with
// it (parent-death signal). A new service on the same state dir finds the task running,
// marks it lost, retries it once as attempt 2, and the slot runs no other time.
func TestKilledDuringExecIsLostAndRetriedOnce_P28(t *testing.T) {
	dir := t.TempDir()
	// The slot must come after the child service has started, or a new state dir takes it
	// for one before its time: 2 s is enough even for a loaded machine under -race.
	slot := time.Now().Add(2 * time.Second).Round(0)
	argv := helperArgv("service", dir, strconv.FormatInt(slot.UnixNano(), 10))
	child := exec.Command(argv[0], argv[1:]...)
	child.Env = platform.ChildEnv(os.Environ(), helperVars)
	var stderr bytes.Buffer
	child.Stderr = &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "attempt-1")
	waitFor(t, "attempt 1 to run", func() bool { _, err := os.Stat(marker); return err == nil })
	b, _ := os.ReadFile(marker)
	pid, _ := strconv.Atoi(string(b))
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	waitFor(t, "the command to die with schedd", func() bool { return syscall.Kill(pid, 0) != nil })

	svc, err := New(configured(Config{OpenStore: sqliteAt(dir), Jobs: []Job{lostJob(dir, slot)}}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	var tasks []string
	waitFor(t, "the retry to succeed", func() bool {
		l, err := svc.Tasks(context.Background(), TaskFilter{Job: "backup"})
		if err != nil {
			t.Fatal(err)
		}
		slices.Reverse(l.Tasks)
		tasks = states(l.Tasks)
		return len(l.Tasks) == 2 && l.Tasks[1].State != "queued" && l.Tasks[1].State != "running"
	})
	if !slices.Equal(tasks, []string{"scheduled:lost@1", "retry:succeeded@2"}) {
		t.Fatalf("tasks %v; schedd's stderr: %s", tasks, stderr.String())
	}
	time.Sleep(300 * time.Millisecond) // anything more would show up by now
	ents, _ := os.ReadDir(dir)
	var runs []string
	for _, e := range ents {
		if n := e.Name(); len(n) > 8 && n[:8] == "attempt-" {
			runs = append(runs, n)
		}
	}
	if !slices.Equal(runs, []string{"attempt-1", "attempt-2"}) {
		t.Fatalf("runs %v", runs)
	}
}
