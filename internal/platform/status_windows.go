//go:build windows

package platform

import (
	"os"
	"syscall"
)

// exitStatusOf converts a Windows process exit code. Windows has no death by signal: a
// process killed through its Job object exits with the code given to TerminateJobObject.
func exitStatusOf(code uint32) ExitStatus {
	return ExitStatus{Exited: true, Code: int(code)}
}

// processStateStatus converts the state of a process waited for by os or os/exec.
func processStateStatus(ps *os.ProcessState) ExitStatus {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok {
		return exitStatusOf(uint32(ps.ExitCode()))
	}
	return exitStatusOf(ws.ExitCode)
}
