//go:build windows

package platform

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"
)

// runGroup is the Job object of a RunCommand child.
type runGroup struct {
	cmd *exec.Cmd
	job windows.Handle
}

func newRunGroup(cmd *exec.Cmd) (*runGroup, error) {
	job, err := newJob()
	if err != nil {
		return nil, &SpawnError{Op: "job", Path: cmd.Path, Err: err}
	}
	g := &runGroup{cmd: cmd, job: job}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_SUSPENDED,
	}
	cmd.Cancel = g.kill
	return g, nil
}

// started moves the suspended child into the job and lets it run.
func (g *runGroup) started() error {
	if err := assignAndResume(g.job, g.cmd.Process.Pid); err != nil {
		return &SpawnError{Op: "job", Path: g.cmd.Path, Err: err}
	}
	return nil
}

func (g *runGroup) kill() error {
	if err := windows.TerminateJobObject(g.job, jobKillCode); err != nil {
		return err
	}
	return nil
}

func (g *runGroup) killRest() { _ = g.kill() }

// close releases the job; KILL_ON_JOB_CLOSE ends anything still in it.
func (g *runGroup) close() { windows.CloseHandle(g.job) }
