package platform

import (
	"os"
	"strconv"
	"strings"
)

// processName is the command name of pid from /proc ("systemd"), "" if unreadable.
func processName(pid int) string {
	if pid <= 0 {
		return ""
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
