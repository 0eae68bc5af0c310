//go:build darwin

package platform

import "golang.org/x/sys/unix"

// StartTime returns when pid started, in microseconds since the epoch (kern.proc.pid's
// p_starttime): with the pid, it names one process, not whatever gets the pid next.
func StartTime(pid int) (uint64, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return 0, err
	}
	tv := k.Proc.P_starttime
	return uint64(tv.Sec)*1e6 + uint64(tv.Usec), nil
}
