//go:build linux

package testgateway

import (
	"os"
	"os/exec"
	"testing"
)

// PIDNamespace returns the argv prefix that runs a command as PID 1 of a new PID
// namespace with a /proc of its own, or skips t where that cannot be done: it needs root
// (CI runs as root) and unshare(1). Should the caller kill unshare, the namespace dies
// with it.
func PIDNamespace(t testing.TB) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates a PID namespace (CI runs as root)")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs unshare(1) from util-linux")
	}
	argv := []string{unshare, "--pid", "--fork", "--kill-child", "--mount-proc"}
	if out, err := exec.Command(argv[0], append(argv[1:], "true")...).CombinedOutput(); err != nil {
		t.Skipf("cannot create a PID namespace here: %v %s", err, out)
	}
	return argv
}
