//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeSchedd answers GET /v1/status with pid old until the file marker exists, then with
// pid 4242: a task that came back.
func fakeSchedd(t *testing.T, sock, marker string, old int) {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pid := old
		if _, err := os.Stat(marker); err == nil {
			pid = 4242
		}
		json.NewEncoder(w).Encode(map[string]any{"schedd": map[string]any{"pid": pid}})
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// TestRespawnHelper is the helper of the schtasks mode (R-INIT-07, R-INIT-08) with the
// task replaced by a command: it waits for the old pid to be gone, runs the command, and
// succeeds only when a schedd with another pid answers; a relaunch that never shows a new
// pid fails after the bounded attempts.
func TestRespawnHelper(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	old := gone.Process.Pid
	dir := shortDir(t)
	sock := filepath.Join(dir, "s.sock")
	marker := filepath.Join(dir, "started")
	fakeSchedd(t, sock, marker, old)

	o := &respawnHelperOptions{globals: &globals{socket: sock}, waitPID: old, waitMax: 10 * time.Second, attempts: 3, settle: 2 * time.Second}
	var log bytes.Buffer
	if err := o.run(context.Background(), []string{"touch", marker}, &log); err != nil {
		t.Fatalf("helper: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "back as pid 4242") {
		t.Fatalf("log: %s", log.String())
	}

	o.attempts, o.settle = 2, 50*time.Millisecond
	log.Reset()
	os.Remove(marker)
	err := o.run(context.Background(), []string{"false"}, &log)
	if err == nil || !strings.Contains(err.Error(), "after 2 runs") || strings.Count(log.String(), "exit status 1") != 2 {
		t.Fatalf("never back: %v\n%s", err, log.String())
	}
}

// TestRespawnHelperWaitsForExit: while the old schedd lives, nothing is run.
func TestRespawnHelperWaitsForExit(t *testing.T) {
	dir := shortDir(t)
	marker := filepath.Join(dir, "started")
	o := &respawnHelperOptions{globals: &globals{socket: filepath.Join(dir, "none.sock")}, waitPID: os.Getpid(), waitMax: 100 * time.Millisecond, attempts: 1, settle: 10 * time.Millisecond}
	err := o.run(context.Background(), []string{"touch", marker}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "to exit") {
		t.Fatalf("err %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran while the old schedd was alive")
	}
}
