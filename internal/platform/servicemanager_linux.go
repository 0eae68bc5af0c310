package platform

import (
	"os"
	"strconv"
)

// detectServiceManager trusts systemd's hints only when they name this very process:
// SYSTEMD_EXEC_PID or MAINPID equal to our pid, or INVOCATION_ID with our parent being
// pid 1 or the systemd user manager.
func detectServiceManager(env map[string]string) string {
	me := strconv.Itoa(os.Getpid())
	if env["SYSTEMD_EXEC_PID"] == me {
		return "systemd"
	}
	if env["INVOCATION_ID"] != "" && os.Getppid() == 1 {
		return "systemd"
	}
	return "none"
}
