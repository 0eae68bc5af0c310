//go:build unix

package platform

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

func signalByNumber(sig syscall.Signal) string { return unix.SignalName(sig) }

func signalByName(name string) (syscall.Signal, bool) {
	sig := unix.SignalNum(name)
	return sig, sig != 0
}

// IsRestart reports SIGUSR1.
func IsRestart(sig os.Signal) bool { return sig == syscall.SIGUSR1 }

// signalBuffer is the capacity of the channel Signals returns: a storm of signals is
// absorbed without dropping any of the few kinds we watch.
const signalBuffer = 64

// Signals registers, before anything slow, for SIGTERM, SIGINT, SIGHUP and SIGUSR1 on a
// channel buffered for many signals, and catches SIGPIPE so that writing to a closed
// stdout/stderr returns EPIPE instead of killing schedd. SIGPIPE is caught rather than
// ignored because an ignored disposition is inherited across exec and would change how
// the gateway and probe commands behave in pipelines; a caught one is reset to default.
// stop unregisters both.
func Signals() (ch <-chan os.Signal, stop func()) {
	c := make(chan os.Signal, signalBuffer)
	pipe := make(chan os.Signal, 1) // never read: SIGPIPE only has to be caught
	signal.Notify(pipe, syscall.SIGPIPE)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1)
	return c, func() {
		signal.Stop(c)
		signal.Stop(pipe)
	}
}
