package config

import (
	"strconv"
	"strings"
)

// knownSignals is the union of the unix signal names schedd accepts in the config. It is a
// fixed list so this package needs no platform imports; whether the running platform can
// send a given signal is decided by internal/platform when the signal is used.
var knownSignals = map[string]bool{
	"SIGABRT": true, "SIGALRM": true, "SIGBUS": true, "SIGCHLD": true, "SIGCONT": true,
	"SIGEMT": true, "SIGFPE": true, "SIGHUP": true, "SIGILL": true, "SIGINFO": true,
	"SIGINT": true, "SIGIO": true, "SIGIOT": true, "SIGKILL": true, "SIGPIPE": true,
	"SIGPOLL": true, "SIGPROF": true, "SIGPWR": true, "SIGQUIT": true, "SIGSEGV": true,
	"SIGSTKFLT": true, "SIGSTOP": true, "SIGSYS": true, "SIGTERM": true, "SIGTRAP": true,
	"SIGTSTP": true, "SIGTTIN": true, "SIGTTOU": true, "SIGURG": true, "SIGUSR1": true,
	"SIGUSR2": true, "SIGVTALRM": true, "SIGWINCH": true, "SIGXCPU": true, "SIGXFSZ": true,
}

// maxSignalNumber is the highest signal number accepted in digit form (Linux real-time
// signals end at 64).
const maxSignalNumber = 64

// canonicalSignal checks a signal as written in the config ("SIGTERM", "TERM", "sigterm" or
// "15") and returns its canonical form: "SIGTERM" for names, the digits for numbers. ok is
// false for an unknown name or a number outside 1..64.
func canonicalSignal(s string) (canonical string, ok bool) {
	if s == "" {
		return "", false
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > maxSignalNumber || strings.HasPrefix(s, "+") {
			return "", false
		}
		return strconv.Itoa(n), true
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if !knownSignals[name] {
		return "", false
	}
	return name, true
}
