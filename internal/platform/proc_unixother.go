//go:build unix && !linux

package platform

import "syscall"

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// lockSpawnThread is a no-op: there is no parent-death signal to keep tied to a thread.
func lockSpawnThread() (unlock func()) { return func() {} }

// waitExited cannot wait without reaping here; the caller reaps directly.
func waitExited(int) bool { return false }

// groupHasLiveMember cannot tell zombies apart without /proc: any member counts.
func groupHasLiveMember(int) bool { return true }

// SetChildSubreaper is Linux only.
func SetChildSubreaper() error { return ErrNotSupported }
