//go:build unix

package platform

import (
	"errors"
	"os"
	"os/exec"
	"sync"

	"golang.org/x/sys/unix"
)

// runGroup is the process group of a RunCommand child.
type runGroup struct {
	cmd *exec.Cmd

	mu    sync.Mutex // Cancel may run before started
	group pgroup     // set by started; pgid 0 until then
}

func newRunGroup(cmd *exec.Cmd) (*runGroup, error) {
	g := &runGroup{cmd: cmd}
	cmd.SysProcAttr = sysProcAttr()
	cmd.Cancel = g.kill
	return g, nil
}

// started names the group while its leader is certainly not reaped yet.
func (g *runGroup) started() error {
	g.mu.Lock()
	g.group = openGroup(g.cmd.Process.Pid)
	g.mu.Unlock()
	return nil
}

// signal sends sig to the whole group; leaderReaped as for pgroup.signal.
func (g *runGroup) signal(sig unix.Signal, leaderReaped bool) error {
	if g.cmd.Process == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.group.pgid == 0 {
		g.group = pgroup{pgid: g.cmd.Process.Pid, fd: -1}
	}
	err := g.group.signal(sig, leaderReaped)
	if errors.Is(err, unix.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// kill SIGKILLs the whole group.
func (g *runGroup) kill() error { return g.signal(unix.SIGKILL, false) }

// killRest kills what the leader left behind in its group, and reaps it if it was
// reparented to us. The leader has been reaped.
func (g *runGroup) killRest() {
	_ = g.signal(unix.SIGKILL, true)
	if g.cmd.Process != nil {
		reapGroup(g.cmd.Process.Pid)
	}
}

func (g *runGroup) close() {
	g.mu.Lock()
	g.group.close()
	g.mu.Unlock()
}
