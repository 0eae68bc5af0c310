//go:build unix

package platform

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// R-CHILD-19: every exit code and every fatal signal converts exactly, tini-style.
// The wait-status encoding (code<<8, signal | 0x80 for a core) is the same on Linux and
// the BSDs.
func TestExitStatusOfEveryCode(t *testing.T) {
	for code := 0; code <= 255; code++ {
		got := exitStatusOf(syscall.WaitStatus(code << 8))
		want := ExitStatus{Exited: true, Code: code}
		if got != want {
			t.Errorf("code %d: got %+v, want %+v", code, got, want)
		}
	}
}

func TestExitStatusOfEverySignal(t *testing.T) {
	fatal := []syscall.Signal{
		unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGILL, unix.SIGTRAP, unix.SIGABRT,
		unix.SIGBUS, unix.SIGFPE, unix.SIGKILL, unix.SIGUSR1, unix.SIGSEGV, unix.SIGUSR2,
		unix.SIGPIPE, unix.SIGALRM, unix.SIGTERM, unix.SIGXCPU, unix.SIGXFSZ,
		unix.SIGVTALRM, unix.SIGPROF, unix.SIGSYS,
	}
	for _, sig := range fatal {
		for _, core := range []bool{false, true} {
			ws := syscall.WaitStatus(sig)
			if core {
				ws |= 0x80
			}
			got := exitStatusOf(ws)
			want := ExitStatus{
				Code: -1, Signaled: true, Signal: int(sig),
				SignalName: unix.SignalName(sig), CoreDumped: core,
			}
			if got != want || want.SignalName == "" {
				t.Errorf("%v core=%v: got %+v, want %+v", sig, core, got, want)
			}
		}
	}
	// A signal without a name of its own (real-time) still gets one.
	if got := exitStatusOf(syscall.WaitStatus(40)); got.SignalName != "SIG40" {
		t.Errorf("signal 40: got %+v", got)
	}
}
