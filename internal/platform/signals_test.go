package platform

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

func TestParseSignal(t *testing.T) {
	tests := []struct {
		in   string
		want os.Signal
	}{
		{"SIGTERM", syscall.SIGTERM},
		{"TERM", syscall.SIGTERM},
		{"sigterm", syscall.SIGTERM},
		{"term", syscall.SIGTERM},
		{" SIGTERM ", syscall.SIGTERM},
		{"15", syscall.SIGTERM},
		{"SIGINT", syscall.SIGINT},
		{"2", syscall.SIGINT},
		{"KILL", syscall.SIGKILL},
		{"9", syscall.SIGKILL},
		{"SIGHUP", syscall.SIGHUP},
		{"1", syscall.SIGHUP},
	}
	for _, tt := range tests {
		got, err := ParseSignal(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseSignal(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "SIG", "SIGFOO", "FOO", "0", "-1", "999", "15x", "SIG TERM"} {
		if got, err := ParseSignal(bad); !errors.Is(err, ErrUnknownSignal) {
			t.Errorf("ParseSignal(%q) = %v, %v; want ErrUnknownSignal", bad, got, err)
		}
	}
}

// CanonicalSignal is the config's check: the same names on every OS, numbers 1..64, one
// stored form.
func TestCanonicalSignal(t *testing.T) {
	for in, want := range map[string]string{"TERM": "SIGTERM", "sigterm": "SIGTERM", "SIGTERM": "SIGTERM",
		"15": "15", "015": "15", "64": "64", "usr2": "SIGUSR2", "Int": "SIGINT", "SIGEMT": "SIGEMT", "info": "SIGINFO"} {
		if got, err := CanonicalSignal(in); err != nil || got != want {
			t.Errorf("CanonicalSignal(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "SIG", "TERMX", "0", "65", "99", "+15", "-1", "15x", " TERM", "SIG TERM"} {
		if got, err := CanonicalSignal(bad); !errors.Is(err, ErrUnknownSignal) {
			t.Errorf("CanonicalSignal(%q) = %q, %v; want ErrUnknownSignal", bad, got, err)
		}
	}
}

func TestSignalName(t *testing.T) {
	tests := []struct {
		sig  os.Signal
		want string
	}{
		{syscall.SIGTERM, "SIGTERM"},
		{os.Interrupt, "SIGINT"},
		{os.Kill, "SIGKILL"},
		{syscall.SIGHUP, "SIGHUP"},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := SignalName(tt.sig); got != tt.want {
			t.Errorf("SignalName(%v) = %q, want %q", tt.sig, got, tt.want)
		}
	}
}

func TestSignalClasses(t *testing.T) {
	if !IsTerminate(syscall.SIGTERM) || !IsTerminate(os.Interrupt) || IsTerminate(syscall.SIGHUP) {
		t.Error("IsTerminate")
	}
	if !IsReload(syscall.SIGHUP) || IsReload(syscall.SIGTERM) {
		t.Error("IsReload")
	}
	if IsRestart(syscall.SIGTERM) || IsRestart(syscall.SIGHUP) {
		t.Error("IsRestart")
	}
}

// ParseSignal round-trips through SignalName for every name it accepts.
func FuzzParseSignal(f *testing.F) {
	for _, s := range []string{"SIGTERM", "term", "15", "SIGUSR1", "x", "", "0x1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sig, err := ParseSignal(s)
		if err != nil {
			return
		}
		again, err := ParseSignal(SignalName(sig))
		if err != nil || again != sig {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, sig, SignalName(sig), again, err)
		}
	})
}
