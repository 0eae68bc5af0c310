package platform

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ErrUnknownSignal is returned by ParseSignal and CanonicalSignal for a name or number
// they do not know.
var ErrUnknownSignal = errors.New("unknown signal")

// signalNames is the union of the unix signal names a config may use. It is the same list
// on every OS, so a config file checks the same wherever it is read; whether this OS can
// send the signal is decided by ParseSignal when it is used.
var signalNames = map[string]bool{
	"SIGABRT": true, "SIGALRM": true, "SIGBUS": true, "SIGCHLD": true, "SIGCONT": true,
	"SIGEMT": true, "SIGFPE": true, "SIGHUP": true, "SIGILL": true, "SIGINFO": true,
	"SIGINT": true, "SIGIO": true, "SIGIOT": true, "SIGKILL": true, "SIGPIPE": true,
	"SIGPOLL": true, "SIGPROF": true, "SIGPWR": true, "SIGQUIT": true, "SIGSEGV": true,
	"SIGSTKFLT": true, "SIGSTOP": true, "SIGSYS": true, "SIGTERM": true, "SIGTRAP": true,
	"SIGTSTP": true, "SIGTTIN": true, "SIGTTOU": true, "SIGURG": true, "SIGUSR1": true,
	"SIGUSR2": true, "SIGVTALRM": true, "SIGWINCH": true, "SIGXCPU": true, "SIGXFSZ": true,
}

// maxSignalNumber is the highest signal number a config may give in digit form (Linux
// real-time signals end at 64).
const maxSignalNumber = 64

// signalSpelling reads a signal as written: "SIGTERM", "TERM", "sigterm" give the name
// "SIGTERM" (n == 0); unsigned digits give their number n (name == ""). ok is false for
// anything else, a sign or a blank included.
func signalSpelling(s string) (name string, n int, ok bool) {
	if s == "" || strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
		return "", 0, false
	}
	if n, err := strconv.Atoi(s); err == nil {
		return "", n, true
	}
	name = strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	return name, 0, true
}

// CanonicalSignal checks a signal as a config writes it ("SIGTERM", "TERM", "sigterm" or
// "15") and returns the one form it is kept in: "SIGTERM" for names, the digits for
// numbers. Names are checked against the unix names of every OS schedd runs on, numbers
// against 1..64; an unknown one is ErrUnknownSignal.
func CanonicalSignal(s string) (string, error) {
	name, n, ok := signalSpelling(s)
	switch {
	case ok && name == "" && n >= 1 && n <= maxSignalNumber:
		return strconv.Itoa(n), nil
	case ok && signalNames[name]:
		return name, nil
	}
	return "", fmt.Errorf("parse signal %q: %w", s, ErrUnknownSignal)
}

// ParseSignal returns the signal of this OS a name or number stands for, spelled as
// CanonicalSignal accepts it (surrounding blanks are ignored). On Windows only SIGTERM,
// SIGINT, SIGKILL and SIGHUP (and their numbers) are known, for config validation.
func ParseSignal(name string) (os.Signal, error) {
	s, n, ok := signalSpelling(strings.TrimSpace(name))
	if ok && s == "" {
		if sig := syscall.Signal(n); n > 0 && signalByNumber(sig) != "" {
			return sig, nil
		}
	} else if ok {
		if sig, known := signalByName(s); known {
			return sig, nil
		}
	}
	return nil, fmt.Errorf("parse signal %q: %w", name, ErrUnknownSignal)
}

// SignalName returns "SIGTERM" for syscall.SIGTERM (and os.Interrupt → "SIGINT",
// os.Kill → "SIGKILL"); other os.Signal values are described by their String method.
func SignalName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok {
		if name := signalByNumber(s); name != "" {
			return name
		}
		return "SIG" + strconv.Itoa(int(s))
	}
	if sig == nil {
		return ""
	}
	return sig.String()
}

// IsTerminate reports SIGTERM or SIGINT (os.Interrupt).
func IsTerminate(sig os.Signal) bool {
	return sig == syscall.SIGTERM || sig == os.Interrupt
}

// IsReload reports SIGHUP.
func IsReload(sig os.Signal) bool { return sig == syscall.SIGHUP }
