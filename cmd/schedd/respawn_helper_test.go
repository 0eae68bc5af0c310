//go:build unix

package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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

// TestRespawnHelperCommand: the hidden command hands its flags to handoff.TaskHelper and
// judges success by the pid of the schedd that answers on --socket (R-INIT-07; the
// helper's logic is proved in internal/handoff); without --wait-pid or a command it is a
// usage error.
func TestRespawnHelperCommand(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	old := gone.Process.Pid
	dir := shortDir(t)
	sock := filepath.Join(dir, "s.sock")
	marker := filepath.Join(dir, "started")
	fakeSchedd(t, sock, marker, old)

	code, _, stderr := runCLI("respawn-helper", "--wait-pid", strconv.Itoa(old), "--socket", sock,
		"--attempts", "2", "--settle", "2s", "--", "touch", marker)
	if code != 0 || !strings.Contains(stderr, "back as pid 4242") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	os.Remove(marker)
	code, _, stderr = runCLI("respawn-helper", "--wait-pid", strconv.Itoa(old), "--socket", sock,
		"--attempts", "1", "--settle", "50ms", "--", "false")
	if code == 0 || !strings.Contains(stderr, "no new schedd answered on "+sock+" after 1 runs") {
		t.Fatalf("never back: exit %d: %s", code, stderr)
	}
	if code, _, _ := runCLI("respawn-helper", "--", "true"); code != exitUsage {
		t.Fatalf("without --wait-pid: exit %d, want %d", code, exitUsage)
	}
}
