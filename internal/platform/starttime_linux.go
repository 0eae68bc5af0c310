//go:build linux

package platform

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// StartTime returns when pid started, in clock ticks since boot (field 22 of
// /proc/PID/stat): with the pid, it names one process, not whatever gets the pid next.
func StartTime(pid int) (uint64, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command name, want 20", pid, len(fields))
	}
	return strconv.ParseUint(string(fields[19]), 10, 64)
}
