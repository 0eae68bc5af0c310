//go:build unix

package platform

import (
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// exitStatusOf converts a wait status of a terminated process.
func exitStatusOf(ws syscall.WaitStatus) ExitStatus {
	switch {
	case ws.Exited():
		return ExitStatus{Exited: true, Code: ws.ExitStatus()}
	case ws.Signaled():
		sig := ws.Signal()
		return ExitStatus{
			Code:       -1,
			Signaled:   true,
			Signal:     int(sig),
			SignalName: signalName(sig),
			CoreDumped: ws.CoreDump(),
		}
	default:
		return unknownStatus
	}
}

// signalName returns "SIGTERM" for a known signal and "SIG<n>" for others
// (real-time signals have no name of their own).
func signalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return "SIG" + strconv.Itoa(int(sig))
}

// processStateStatus converts the state of a process waited for by os/exec.
func processStateStatus(ps *os.ProcessState) ExitStatus {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok {
		return unknownStatus
	}
	return exitStatusOf(ws)
}
