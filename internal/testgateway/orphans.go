//go:build unix

package testgateway

import (
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runOrphanModes runs the helper processes of orphan= and orphan-churn=, which are this
// binary again with an internal option; ok is false for any other description.
func runOrphanModes(o options) (code int, ok bool) {
	switch {
	case o.has("middle"): // the child of a double fork: start the grandchild and go
		cmd := self("escapee=" + o["middle"])
		if o.has("stubborn") {
			cmd = self("escapee="+o["middle"], "stubborn")
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if o.has("listener") {
			cmd.ExtraFiles = []*os.File{os.NewFile(3, "listener")}
		}
		if err := cmd.Start(); err != nil {
			fail("escapee: %v", err)
		}
		waitForLine(o["middle"], cmd.Process.Pid)
		return 0, true
	case o.has("escapee"): // the grandchild, in a session of its own, holding fd 3
		term := make(chan os.Signal, 1)
		if o.has("stubborn") {
			signal.Ignore(syscall.SIGTERM)
		} else {
			signal.Notify(term, syscall.SIGTERM)
		}
		appendLine(o["escapee"], strconv.Itoa(os.Getpid()))
		<-term
		return 0, true
	case o.has("brief"): // an orphan-to-be: outlives its parent by a moment
		time.Sleep(20 * time.Millisecond)
		return 0, true
	case o.has("brief-parent"):
		if err := self("brief").Start(); err != nil {
			fail("brief: %v", err)
		}
		return 0, true
	}
	return 0, false
}

// self is this binary as the fake gateway with opts.
func self(opts ...string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		fail("%v", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), Command(opts...))
	return cmd
}

// startOrphan double-forks: the child is never waited for and exits once the grandchild
// has written its pid to file; the grandchild gets ln, if any, as fd 3.
func startOrphan(file string, stubborn bool, ln *net.TCPListener) {
	opts := []string{"middle=" + file}
	if stubborn {
		opts = append(opts, "stubborn")
	}
	var files []*os.File
	if ln != nil {
		f, err := ln.File()
		if err != nil {
			fail("listener: %v", err)
		}
		defer f.Close()
		opts, files = append(opts, "listener"), []*os.File{f}
	}
	cmd := self(opts...)
	cmd.ExtraFiles = files
	if err := cmd.Start(); err != nil {
		fail("orphan: %v", err)
	}
	waitForLine(file, 0)
}

// churnOrphans starts, every d, a child that leaves an orphan behind. The children are
// reaped here; their orphans are not ours to reap.
func churnOrphans(d time.Duration) {
	for {
		cmd := self("brief-parent")
		if err := cmd.Start(); err != nil {
			fail("brief-parent: %v", err)
		}
		_ = cmd.Wait()
		time.Sleep(d)
	}
}

// waitForLine waits until file holds pid (or any line, with 0).
func waitForLine(file string, pid int) {
	waitForFile(file, "pid", func(b []byte) bool { return len(b) > 0 && (pid == 0 || containsPID(b, pid)) })
}

// waitForFile waits until what file holds satisfies ok; what names it in the failure.
func waitForFile(file, what string, ok func([]byte) bool) {
	for range 2500 {
		if b, err := os.ReadFile(file); err == nil && ok(b) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	fail("no %s in %s", what, file)
}

func containsPID(b []byte, pid int) bool {
	for _, f := range strings.Fields(string(b)) {
		if f == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}
