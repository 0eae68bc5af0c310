//go:build unix

package platform

import (
	"errors"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"
)

// runGroup is the process group of a RunCommand child.
type runGroup struct{ cmd *exec.Cmd }

func newRunGroup(cmd *exec.Cmd) (*runGroup, error) {
	g := &runGroup{cmd: cmd}
	cmd.SysProcAttr = sysProcAttr()
	cmd.Cancel = g.kill
	return g, nil
}

func (g *runGroup) started() error { return nil }

// kill SIGKILLs the whole group.
func (g *runGroup) kill() error {
	if g.cmd.Process == nil {
		return nil
	}
	err := unix.Kill(-g.cmd.Process.Pid, unix.SIGKILL)
	if errors.Is(err, unix.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// killRest kills what the leader left behind in its group, and reaps it if it was
// reparented to us.
func (g *runGroup) killRest() {
	_ = g.kill()
	if g.cmd.Process != nil {
		reapGroup(g.cmd.Process.Pid)
	}
}

func (g *runGroup) close() {}
