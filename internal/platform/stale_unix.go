//go:build unix

package platform

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// StopStaleGroup stops what is left of a gateway that an earlier schedd started and could
// not stop because it died (R-SUP-01): pid is that gateway's pid, also its process group,
// and start its StartTime, recorded at the start. A live leader counts as the old gateway
// only if its start time still matches; then its group gets sig and, after grace, SIGKILL.
// A leader that is gone leaves its group id reserved while any member lives (Linux and the
// BSDs never hand out a pid still in use as a group id), so such members are the old
// gateway's stragglers and get SIGKILL at once. It reports whether anything of it was found;
// ctx bounds the whole wait.
func StopStaleGroup(ctx context.Context, pid int, start uint64, sig os.Signal, grace time.Duration) (bool, error) {
	s, ok := sig.(unix.Signal)
	if !ok {
		return false, fmt.Errorf("stop signal %v is not a unix signal", sig)
	}
	switch err := unix.Kill(pid, 0); {
	case err == nil || errors.Is(err, unix.EPERM):
		got, err := StartTime(pid)
		if err != nil {
			return false, fmt.Errorf("identify pid %d: %w", pid, err)
		}
		if got != start {
			return false, nil // the pid is someone else's now: the old group is gone
		}
		if isZombie(pid) {
			grace = 0
		}
	case !errors.Is(err, unix.ESRCH):
		return false, fmt.Errorf("pid %d: %w", pid, err)
	default:
		grace = 0 // stragglers without their leader: what KillGroupAndWait does to them
	}
	if alive, _ := groupAlive(pid); !alive {
		return false, nil
	}
	_ = unix.Kill(-pid, s)
	kill := func() { _ = unix.Kill(-pid, unix.SIGKILL) }
	err := untilGone(ctx, func() (bool, error) {
		alive, _ := groupAlive(pid)
		return alive, nil
	}, kill, time.Now().Add(grace))
	if err != nil {
		kill()
		return true, fmt.Errorf("stale process group %d: %w", pid, err)
	}
	return true, nil
}

// groupAlive reports whether the group pgid, known by number only (it is not a Process of
// ours), still has a member that is not a zombie.
func groupAlive(pgid int) (bool, error) { return groupLiveAfter(unix.Kill(-pgid, 0), pgid) }
