//go:build unix

package handoff

import (
	"errors"
	"os"
	"strconv"
	"syscall"
	"testing"

	"go.uber.org/zap"
)

// TestAwaitPredecessor: a successor goes ahead only on the predecessor's "go" followed by
// its exit (EOF); an EOF without "go" means the predecessor kept running. The variables
// never reach the gateway's environment.
func TestAwaitPredecessor(t *testing.T) {
	t.Setenv(EnvRespawnFD, "") // restored after the test; unset below
	os.Unsetenv(EnvRespawnFD)
	if err := AwaitPredecessor(zap.NewNop()); err != nil {
		t.Fatalf("without %s: %v", EnvRespawnFD, err)
	}
	for _, tt := range []struct {
		say  string
		want error
	}{{"go\n", nil}, {"", ErrPredecessorKept}, {"stop\n", ErrPredecessorKept}} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		fd, err := syscall.Dup(int(r.Fd())) // AwaitPredecessor closes the fd it is given
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv(EnvRespawnFD, strconv.Itoa(fd))
		t.Setenv(EnvRespawnPID, "1")
		if _, err := w.WriteString(tt.say); err != nil {
			t.Fatal(err)
		}
		w.Close()
		err = AwaitPredecessor(zap.NewNop())
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Fatalf("after %q: %v, want %v", tt.say, err, tt.want)
		}
		if _, ok := os.LookupEnv(EnvRespawnFD); ok {
			t.Fatalf("%s still set", EnvRespawnFD)
		}
		if _, ok := os.LookupEnv(EnvRespawnPID); ok {
			t.Fatalf("%s still set", EnvRespawnPID)
		}
	}
	t.Setenv(EnvRespawnFD, "1")
	if err := AwaitPredecessor(zap.NewNop()); err == nil || errors.Is(err, ErrPredecessorKept) {
		t.Fatalf("fd 1: %v", err)
	}
}
