//go:build unix

package platform

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func listenNotify(t *testing.T) *NotifySocket {
	t.Helper()
	s, err := ListenNotify(filepath.Join(t.TempDir(), "notify.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func sendNotify(t *testing.T, path, msg string) {
	t.Helper()
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
}

func TestNotifySocketRecv(t *testing.T) {
	s := listenNotify(t)
	fi, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("mode %v, want 0600", perm)
	}
	sendNotify(t, s.Path(), "READY=1\nSTATUS=starting\nnot a field\nSTATUS=ready\n")
	msg, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Fields) != 2 || msg.Fields["READY"] != "1" || msg.Fields["STATUS"] != "ready" {
		t.Errorf("fields = %q", msg.Fields)
	}
	wantPID := 0
	if runtime.GOOS == "linux" {
		wantPID = os.Getpid()
	}
	if msg.PID != wantPID {
		t.Errorf("PID = %d, want %d", msg.PID, wantPID)
	}
}

// A datagram larger than the buffer keeps its complete lines only.
func TestNotifySocketTruncates(t *testing.T) {
	s := listenNotify(t)
	big := make([]byte, notifyBufSize+100)
	for i := range big {
		big[i] = 'x'
	}
	sendNotify(t, s.Path(), "READY=1\nSTATUS="+string(big))
	msg, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Fields) != 1 || msg.Fields["READY"] != "1" {
		t.Errorf("fields = %d keys, READY=%q", len(msg.Fields), msg.Fields["READY"])
	}
}

func TestNotifySocketStaleFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify.sock")
	// A socket file left behind by an earlier run.
	old, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stale socket file missing: %v", err)
	}
	s, err := ListenNotify(path)
	if err != nil {
		t.Fatalf("ListenNotify over a stale socket: %v", err)
	}
	s.Close()

	// A regular file is not ours to remove.
	if err := os.WriteFile(path, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := ListenNotify(path); err == nil {
		s.Close()
		t.Fatal("ListenNotify replaced a regular file")
	}
	if data, _ := os.ReadFile(path); string(data) != "data" {
		t.Error("regular file changed")
	}
}

func TestNotifySocketClose(t *testing.T) {
	s, err := ListenNotify(filepath.Join(t.TempDir(), "notify.sock"))
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := s.Recv()
		errc <- err
	}()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Recv after Close = %v, want net.ErrClosed", err)
		}
	case <-afterTimeout():
		t.Fatal("Recv not unblocked by Close")
	}
	if _, err := os.Stat(s.Path()); !os.IsNotExist(err) {
		t.Errorf("socket file left: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// R-ENV-07: the runtime dir holding the notify socket is removed while schedd runs.
// Rebind makes the directory and the socket again, and a Recv waiting on the old socket
// gets the next message sent to the path; with the file in place Rebind does nothing.
func TestNotifySocketRebind_RENV07(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := ListenNotify(filepath.Join(dir, "notify.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := make(chan NotifyMessage, 1)
	go func() {
		m, err := s.Recv()
		if err != nil {
			t.Errorf("Recv: %v", err)
		}
		got <- m
	}()
	if ok, err := s.Rebind(); ok || err != nil {
		t.Fatalf("Rebind with the socket in place = %v, %v", ok, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Rebind(); !ok || err != nil {
		t.Fatalf("Rebind once the dir was removed = %v, %v", ok, err)
	}
	for p, want := range map[string]os.FileMode{s.Path(): 0o600, dir: 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: %v, want mode %v", p, err, want)
		}
	}
	sendNotify(t, s.Path(), "WATCHDOG=1\n")
	if m := <-got; m.Fields["WATCHDOG"] != "1" {
		t.Fatalf("message after the rebind = %+v", m)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(s.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket file left after Close: %v", err)
	}
}

// TestNotifySocketRebindAfterClose_RINPUT10 is R-INPUT-10 for the notify socket: Close
// removes the file, and a check for a removed file that comes after it (the watch of the
// runtime dir sees that removal) finds nothing to do: our own stop is not a lost socket,
// so there is no error to report and no file bound again.
func TestNotifySocketRebindAfterClose_RINPUT10(t *testing.T) {
	s, err := ListenNotify(filepath.Join(t.TempDir(), "notify.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Rebind(); ok || err != nil {
		t.Fatalf("Rebind after Close = %v, %v; want false, nil", ok, err)
	}
	if _, err := os.Lstat(s.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Rebind after Close left a socket file: %v", err)
	}
}
