//go:build unix

package platform

import (
	"errors"

	"golang.org/x/sys/unix"
)

// pgroup is a process group named by its leader, a child of schedd. It is signalled so
// that a recycled number never reaches a stranger (R-CHILD-17): through a pidfd where the
// kernel signals a whole group that way (Linux 6.9 and later), else by number, and by
// number only while the number is provably still ours.
type pgroup struct {
	pgid int
	fd   int // the leader's pidfd; -1 when there is none
}

// openGroup names the group led by pgid. It must be called before the leader can have
// been reaped, while the pid is certainly our child's.
func openGroup(pgid int) pgroup { return pgroup{pgid: pgid, fd: openPidfd(pgid)} }

// signal sends sig to every member of the group; unix.ESRCH means none is left.
// leaderReaped says whether the leader has been waited for. Until then its pid, and with
// it the group id, cannot be handed out again. After, a process holding that pid is a
// stranger: a group id is never given to a new process while the group has members, so
// our group is gone and the stranger's group must not be hit.
func (g *pgroup) signal(sig unix.Signal, leaderReaped bool) error {
	if g.fd >= 0 {
		err := pidfdSignalGroup(g.fd, sig)
		if !errors.Is(err, errNoPidfdGroup) {
			return err
		}
	}
	if leaderReaped && pidInUse(g.pgid) {
		return unix.ESRCH
	}
	return unix.Kill(-g.pgid, sig)
}

// signalLeader sends sig to the leader alone, under the same rule: through its pidfd
// where there is one, else by number only until the leader has been reaped.
func (g *pgroup) signalLeader(sig unix.Signal, leaderReaped bool) error {
	if g.fd >= 0 {
		err := pidfdSignalProcess(g.fd, sig)
		if !errors.Is(err, errNoPidfdGroup) {
			return err
		}
	}
	if leaderReaped {
		return unix.ESRCH
	}
	return unix.Kill(g.pgid, sig)
}

// close drops the pidfd; later signals go by number under the rule above.
func (g *pgroup) close() {
	if g.fd >= 0 {
		_ = unix.Close(g.fd)
		g.fd = -1
	}
}

// errNoPidfdGroup: the group cannot be signalled through a pidfd here.
var errNoPidfdGroup = errors.New("no process-group signals through a pidfd")

// pidInUse reports whether some process (a zombie too) holds pid.
func pidInUse(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
