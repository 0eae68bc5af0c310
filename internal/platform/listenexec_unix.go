//go:build unix

package platform

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// listenExecArg, as the first argument, makes schedd's binary the listen-exec shim.
const listenExecArg = "__schedd-listen-exec"

// ListenExecMain must be called first thing in main (and in the TestMain of a test binary
// that starts processes with Command.ListenNames). When the process was started as the
// listen-exec shim it sets LISTEN_PID to its own pid and replaces itself with the gateway,
// which keeps that pid: systemd sets LISTEN_PID in the child between fork and exec, which
// Go's os.StartProcess cannot. Otherwise it returns at once.
func ListenExecMain() {
	if len(os.Args) < 4 || os.Args[1] != listenExecArg {
		return
	}
	path, argv := os.Args[2], os.Args[3:]
	env := append(WithoutKeys(os.Environ(), []string{"LISTEN_PID"}), "LISTEN_PID="+strconv.Itoa(os.Getpid()))
	err := syscall.Exec(path, argv, env)
	fmt.Fprintf(os.Stderr, "schedd: exec %s: %v\n", path, err)
	os.Exit(127)
}

// listenExec turns a start of path with argv into a start of the shim that execs it. The
// checks exec would make come first, so a missing or unexecutable gateway is still a spawn
// error and not an exit of the shim.
func listenExec(path string, argv []string) (string, []string, error) {
	if err := unix.Access(path, unix.X_OK); err != nil {
		return "", nil, &SpawnError{Op: "exec", Path: path, Err: err}
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return "", nil, &SpawnError{Op: "exec", Path: path, Err: syscall.EACCES}
	}
	self := "/proc/self/exe" // still this binary after an upgrade replaced the file
	if runtime.GOOS != "linux" {
		exe, err := os.Executable()
		if err != nil {
			return "", nil, &SpawnError{Op: "exec", Path: path, Err: fmt.Errorf("find schedd's own binary for LISTEN_PID: %w", err)}
		}
		self = exe
	}
	return self, append([]string{self, listenExecArg, path}, argv...), nil
}
