//go:build windows

package platform

import (
	"os"
	"os/signal"
	"syscall"
)

// windowsSignals are the names Windows configs may use; only SIGINT/SIGTERM are ever
// delivered (console control events), SIGKILL means terminate.
var windowsSignals = map[string]syscall.Signal{
	"SIGHUP":  syscall.SIGHUP,
	"SIGINT":  syscall.SIGINT,
	"SIGKILL": syscall.SIGKILL,
	"SIGTERM": syscall.SIGTERM,
}

func signalByNumber(sig syscall.Signal) string {
	for name, s := range windowsSignals {
		if s == sig {
			return name
		}
	}
	return ""
}

func signalByName(name string) (syscall.Signal, bool) {
	sig, ok := windowsSignals[name]
	return sig, ok
}

// IsRestart is never true on Windows: restarts come through the control API.
func IsRestart(os.Signal) bool { return false }

const signalBuffer = 64

// Signals registers for os.Interrupt (Ctrl-C, Ctrl-Break) and SIGTERM (console close,
// logoff, shutdown) on a channel buffered for many signals. stop unregisters.
func Signals() (ch <-chan os.Signal, stop func()) {
	c := make(chan os.Signal, signalBuffer)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	return c, func() { signal.Stop(c) }
}
