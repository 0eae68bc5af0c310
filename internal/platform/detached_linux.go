package platform

import (
	"os"
	"strconv"
)

// isZombie reports whether pid has exited but is not reaped yet.
func isZombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	state, _, ok := parseProcStat(stat)
	return ok && (state == 'Z' || state == 'X')
}
