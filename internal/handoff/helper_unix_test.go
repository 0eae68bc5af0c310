//go:build unix

package handoff

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeSchedd answers with pid old until the file marker exists, then with pid 4242: a
// task that came back.
func fakeSchedd(marker string, old int) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		if _, err := os.Stat(marker); err == nil {
			return 4242, nil
		}
		return old, nil
	}
}

// TestTaskHelper is the helper of the schtasks mode (R-INIT-07, R-INIT-08) with the task
// replaced by a command: it waits for the old pid to be gone, runs the command, and
// succeeds only when a schedd with another pid answers; a relaunch that never shows a new
// pid fails after the bounded attempts.
func TestTaskHelper(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	old := gone.Process.Pid
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	marker := filepath.Join(dir, "started")

	h := TaskHelper{WaitPID: old, WaitMax: 10 * time.Second, Attempts: 3, Settle: 2 * time.Second,
		Socket: sock, SchedPID: fakeSchedd(marker, old)}
	var log bytes.Buffer
	if err := h.Run(context.Background(), []string{"touch", marker}, &log); err != nil {
		t.Fatalf("helper: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "back as pid 4242") {
		t.Fatalf("log: %s", log.String())
	}

	h.Attempts, h.Settle = 2, 50*time.Millisecond
	log.Reset()
	os.Remove(marker)
	err := h.Run(context.Background(), []string{"false"}, &log)
	if err == nil || !strings.Contains(err.Error(), "after 2 runs") || strings.Count(log.String(), "exit status 1") != 2 {
		t.Fatalf("never back: %v\n%s", err, log.String())
	}
}

// TestTaskHelperNobodyAnswers: a schedd that does not answer at all is not back.
func TestTaskHelperNobodyAnswers(t *testing.T) {
	h := TaskHelper{WaitPID: 1 << 30, WaitMax: time.Second, Attempts: 1, Settle: 10 * time.Millisecond,
		SchedPID: func(context.Context) (int, error) { return 0, errors.New("connection refused") }}
	if err := h.Run(context.Background(), []string{"true"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "after 1 runs") {
		t.Fatalf("err %v", err)
	}
}

// TestTaskHelperWaitsForExit: while the old schedd lives, nothing is run.
func TestTaskHelperWaitsForExit(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	h := TaskHelper{WaitPID: os.Getpid(), WaitMax: 100 * time.Millisecond, Attempts: 1, Settle: 10 * time.Millisecond,
		Socket: filepath.Join(dir, "none.sock"), SchedPID: fakeSchedd(marker, os.Getpid())}
	err := h.Run(context.Background(), []string{"touch", marker}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "to exit") {
		t.Fatalf("err %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran while the old schedd was alive")
	}
}

// TestTaskHelperArgv: the argv the old schedd starts is the one `schedd respawn-helper`
// reads, and a task without a name is the default one.
func TestTaskHelperArgv(t *testing.T) {
	got := strings.Join(taskHelperArgv("/bin/schedd", 7, "/run/s.sock", ""), " ")
	want := "/bin/schedd respawn-helper --wait-pid 7 --socket /run/s.sock -- schtasks /Run /TN schedd"
	if got != want {
		t.Fatalf("argv %q, want %q", got, want)
	}
}
