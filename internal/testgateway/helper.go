//go:build unix

package testgateway

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The helper-child mode is a gateway that, like OpenClaw, runs a helper in its own group
// and stops it itself. Every process appends "ROLE PID SIGNAL" to the sig-log file for
// each SIGTERM, SIGINT, SIGHUP or SIGUSR2 it gets, so a test can tell which signal reached
// whom.
//
//	sig-log=FILE   where the lines go (required by helper-child)
//	helper-child   start a helper in our group; on SIGTERM or SIGINT send the helper
//	               SIGINT (never SIGTERM: its line then says who stopped it), wait for
//	               it, exit 0. With ignore-term, SIGTERM is logged and ignored.

var loggedSignals = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR2}

var signalNames = map[os.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT",
	syscall.SIGHUP: "SIGHUP", syscall.SIGUSR2: "SIGUSR2"}

// runHelperModes runs the helper-child leader or its helper; ok is false for other modes.
func runHelperModes(o options) (code int, ok bool) {
	switch {
	case o.has("helper-of"):
		return runHelper(o["helper-of"]), true
	case o.has("helper-child"):
		return runHelperLeader(o["sig-log"], o.has("ignore-term")), true
	}
	return 0, false
}

func logSignal(file, role string, sig os.Signal) {
	appendLine(file, fmt.Sprintf("%s %d %s", role, os.Getpid(), signalNames[sig]))
}

// runHelper is the helper: it logs signals and exits 0 on SIGTERM or SIGINT.
func runHelper(file string) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, loggedSignals...)
	appendLine(file, fmt.Sprintf("helper %d started", os.Getpid()))
	for sig := range sigs {
		logSignal(file, "helper", sig)
		if sig == syscall.SIGTERM || sig == syscall.SIGINT {
			break
		}
	}
	// Log what else arrives meanwhile: a group-wide SIGTERM and the leader's SIGINT come
	// at almost the same time, in either order.
	t := time.After(50 * time.Millisecond)
	for {
		select {
		case sig := <-sigs:
			logSignal(file, "helper", sig)
		case <-t:
			return 0
		}
	}
}

func runHelperLeader(file string, ignoreTerm bool) int {
	if file == "" {
		fail("helper-child needs sig-log=FILE")
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, loggedSignals...)
	helper := self("helper-of=" + file)
	if err := helper.Start(); err != nil {
		fail("helper: %v", err)
	}
	waitForText(file, fmt.Sprintf("helper %d started", helper.Process.Pid))
	fmt.Println("fake gateway started, pid", os.Getpid(), "helper", helper.Process.Pid)
	for sig := range sigs {
		logSignal(file, "leader", sig)
		if sig == syscall.SIGINT || sig == syscall.SIGTERM && !ignoreTerm {
			_ = helper.Process.Signal(syscall.SIGINT)
			_ = helper.Wait()
			return 0
		}
	}
	return 0
}

// waitForText waits until file holds line.
func waitForText(file, line string) {
	waitForFile(file, strconv.Quote(line), func(b []byte) bool { return strings.Contains(string(b), line+"\n") })
}
