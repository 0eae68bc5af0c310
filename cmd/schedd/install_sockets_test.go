package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedd/schedd/internal/platform"
)

// socketConfig is a config whose gateway.sockets take one socket from systemd.
const socketConfig = "testdata/socketunit/schedd.yaml"

// installSocketRoot installs for systemd into a temp root with the socket config and
// returns the root and the unit and socket files written.
func installSocketRoot(t *testing.T, binary string) (root, unit, socket string) {
	t.Helper()
	root = t.TempDir()
	cfg, err := os.ReadFile(socketConfig)
	if err != nil {
		t.Fatal(err)
	}
	paths := platform.DefaultServicePaths(platform.ManagerSystemd, false, pathEnv())
	if err := os.MkdirAll(filepath.Join(root, filepath.Dir(paths.Config)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, paths.Config), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	unit, socket = filepath.Join(root, paths.File), filepath.Join(root, paths.Socket)
	code, out, errOut := runCLI("install", "--manager", "systemd", "--root", root, "--binary", binary)
	if code != 0 || !strings.Contains(out, "wrote "+unit) || !strings.Contains(out, "wrote "+socket) {
		t.Fatalf("install = %d:\n%s%s", code, out, errOut)
	}
	return root, unit, socket
}

// TestInstallSocketUnit_RSOCK06: with a gateway.sockets entry that takes its socket from
// systemd (from: NAME with a listen address), `schedd install` writes schedd.socket
// (ListenStream, FileDescriptorName, Backlog) beside a service that requires it, as in
// the golden files under testdata/socketunit; installing again changes nothing, and
// uninstall removes both.
func TestInstallSocketUnit_RSOCK06(t *testing.T) {
	root, unit, socket := installSocketRoot(t, "/usr/bin/schedd")
	for _, f := range []struct{ got, golden string }{{unit, "schedd.service"}, {socket, "schedd.socket"}} {
		got, err := os.ReadFile(f.got)
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", "socketunit", f.golden)
		if *update {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s (regenerate with: go test ./cmd/schedd -run SocketUnit -update):\n%s", f.got, golden, got)
		}
	}
	code, out, errOut := runCLI("install", "--manager", "systemd", "--root", root, "--binary", "/usr/bin/schedd")
	if code != 0 || strings.Contains(out, "wrote") || strings.Count(out, "up to date") != 2 {
		t.Fatalf("second install = %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI("uninstall", "--manager", "systemd", "--root", root)
	if code != 0 || !strings.Contains(out, "removed "+socket) || !strings.Contains(out, "removed "+unit) {
		t.Fatalf("uninstall = %d:\n%s%s", code, out, errOut)
	}
	for _, p := range []string{unit, socket} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
}

// TestInstallSocketUnitVerifies_RSOCK06: systemd-analyze verify accepts the service and
// socket unit as written together, without a word.
func TestInstallSocketUnitVerifies_RSOCK06(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("no systemd-analyze here")
	}
	bin, err := exec.LookPath("true") // verify wants ExecStart's binary to exist
	if err != nil {
		t.Skip(err)
	}
	_, unit, socket := installSocketRoot(t, bin)
	// verify reads the units' directory, so the socket finds its service.
	out, err := exec.Command("systemd-analyze", "verify", "--man=no", unit, socket).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestInstallSocketUnitNeedsSystemd_RSOCK06: launchd and the Task Scheduler cannot pass a
// socket the way schedd takes it, so installing a config with from: for them is refused
// naming the entry's position; an entry with from but no listen gets no socket unit, and
// a note says so.
func TestInstallSocketUnitNeedsSystemd_RSOCK06(t *testing.T) {
	for _, m := range []string{platform.ManagerLaunchd, platform.ManagerSchtasks} {
		code, out, errOut := runCLI("install", "--print", "--manager", m, "--binary", "/usr/local/bin/schedd", "--config", socketConfig)
		if code != exitConfig || !strings.Contains(errOut, socketConfig+":5:") || !strings.Contains(errOut, "gateway.sockets[0].from: a socket taken from the service manager needs systemd") {
			t.Errorf("%s: install = %d:\n%s%s", m, code, out, errOut)
		}
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "schedd.yaml")
	src := "gateway:\n  command: [gw]\n  sockets:\n    - {name: http, from: web}\n"
	if err := os.WriteFile(cfg, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI("install", "--print", "--manager", "systemd", "--binary", "/usr/bin/schedd", "--config", cfg)
	if code != 0 || !strings.Contains(errOut, `note: gateway.sockets[0] takes socket "web" from systemd but has no listen: no socket unit is written`) ||
		strings.Contains(out, "schedd.socket") {
		t.Errorf("install --print = %d:\n%s%s", code, out, errOut)
	}
	src = "gateway:\n  command: [gw]\n  sockets:\n    - {name: a, from: a, listen: '127.0.0.1:1'}\n    - {name: b, from: b, listen: '127.0.0.1:2'}\n"
	if err := os.WriteFile(cfg, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI("install", "--print", "--manager", "systemd", "--binary", "/usr/bin/schedd", "--config", cfg)
	if code != exitConfig || !strings.Contains(errOut, "schedd.yaml:5:") || !strings.Contains(errOut, "gateway.sockets[1].from: schedd install writes one socket unit") {
		t.Errorf("two socket units: install = %d:\n%s", code, errOut)
	}
}
