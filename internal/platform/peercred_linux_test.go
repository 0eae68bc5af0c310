package platform

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCheckPeerIsOwner is the peer-uid half of R-SIG-07: a connection from our own uid is
// accepted, one from another user is refused even when the socket's mode lets it in.
func TestCheckPeerIsOwner(t *testing.T) {
	dir, err := os.MkdirTemp("", "peer")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	accept := func() error {
		ln.(*net.UnixListener).SetDeadline(time.Now().Add(10 * time.Second))
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return CheckPeerIsOwner(c)
	}

	own, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := accept(); err != nil {
		t.Fatalf("own uid refused: %v", err)
	}
	own.Close()

	if os.Getuid() != 0 {
		t.Skip("needs root to connect as another user")
	}
	// Open the socket to everyone, so only the uid check stands in the way.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	// The test binary's own dir is private; give the other user a copy it can run.
	exe := filepath.Join(dir, "helper")
	b, err := os.ReadFile(testExe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "dial", path)
	cmd.Env = helperEnviron(nil)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	err = accept()
	if err == nil || !strings.Contains(err.Error(), "peer uid 65534") {
		t.Fatalf("another user's connection: %v, want refused", err)
	}
}
