//go:build unix

package platform

import (
	"os"
	"syscall"
	"testing"
)

func TestParseSignalUnix(t *testing.T) {
	for in, want := range map[string]os.Signal{"SIGUSR1": syscall.SIGUSR1, "usr2": syscall.SIGUSR2, "SIGSEGV": syscall.SIGSEGV} {
		if got, err := ParseSignal(in); err != nil || got != want {
			t.Errorf("ParseSignal(%q) = %v, %v", in, got, err)
		}
	}
	if !IsRestart(syscall.SIGUSR1) {
		t.Error("IsRestart(SIGUSR1) = false")
	}
}

// Signals delivers what it registered for on its buffered channel (R-SIG-03 needs it
// installed before anything slow; the caller does that).
func TestSignalsDelivers(t *testing.T) {
	ch, stop := Signals()
	defer stop()
	if cap(ch) < 16 {
		t.Errorf("channel capacity %d", cap(ch))
	}
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT} {
		if err := syscall.Kill(os.Getpid(), sig); err != nil {
			t.Fatal(err)
		}
		var got os.Signal
		for got != sig {
			select {
			case got = <-ch:
			case <-afterTimeout():
				t.Fatalf("no %v", sig)
			}
		}
	}
}
