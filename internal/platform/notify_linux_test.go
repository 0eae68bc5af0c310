//go:build linux

package platform

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// The child's notify messages carry its pid; a grandchild's carry the grandchild's pid,
// whose process group is the child's.
func TestNotifyFromChildAndGrandchild(t *testing.T) {
	s := listenNotify(t)
	env := helperEnviron(map[string]string{"NOTIFY_SOCKET": s.Path()})

	child := startCmd(t, Command{Argv: helperArgv("notify", "READY=1\nSTATUS=child"), Env: env})
	msg, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if msg.PID != child.PID() || msg.Fields["READY"] != "1" || msg.Fields["STATUS"] != "child" {
		t.Errorf("child message = %+v, child pid %d", msg, child.PID())
	}

	out := newLines()
	leader := startCmd(t, Command{
		Argv:   helperArgv("fork", "stay", "notify", "STATUS=grandchild"),
		Env:    env,
		Output: out.output,
	})
	msg, err = s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	gc := pidFromLine(t, out.waitFor(t, "stdout: grandchild "))
	if msg.PID != gc || msg.PID == leader.PID() || msg.Fields["STATUS"] != "grandchild" {
		t.Errorf("grandchild message = %+v, grandchild %d, leader %d", msg, gc, leader.PID())
	}
	pgid, err := ProcessGroup(msg.PID)
	if err != nil || pgid != leader.PID() {
		t.Errorf("ProcessGroup(%d) = %d, %v; want %d", msg.PID, pgid, err, leader.PID())
	}
}

// Descriptors passed along with a message are closed, not leaked.
func TestNotifyClosesPassedFDs(t *testing.T) {
	s := listenNotify(t)
	before := openFDs(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	rights := unix.UnixRights(int(r.Fd()), int(w.Fd()))
	err = unix.Sendmsg(fd, []byte("FDSTORE=1"), rights, &unix.SockaddrUnix{Name: s.Path()}, 0)
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	w.Close()
	msg, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if msg.Fields["FDSTORE"] != "1" || msg.PID != os.Getpid() {
		t.Errorf("message = %+v", msg)
	}
	if after := openFDs(t); after != before {
		t.Errorf("open fds %d before, %d after", before, after)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			n++
		}
	}
	return n
}
