package handoff

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/schedd/schedd/internal/platform"
)

// The task helper's defaults, the flags of `schedd respawn-helper`.
const (
	DefaultHelperWaitMax  = 10 * time.Minute // how long the old schedd may take to exit
	DefaultHelperAttempts = 12               // runs of the command
	DefaultHelperSettle   = 5 * time.Second  // how long to look for a new schedd after each run
)

// TaskHelper brings schedd back through its scheduled task: the old schedd starts it
// detached (`schedd respawn-helper`), in its own process group, right before it exits
// with 75, so the task runs from outside the old process tree.
type TaskHelper struct {
	WaitPID  int           // the schedd that is exiting
	WaitMax  time.Duration // how long it may take to exit
	Attempts int           // runs of the command
	Settle   time.Duration // how long to look for a new schedd after each run
	Socket   string        // the control socket, for the messages
	// SchedPID asks the schedd that answers on the control socket for its pid.
	SchedPID func(ctx context.Context) (int, error)
}

// Run waits for the old schedd to exit, then runs argv (schtasks /Run) until a schedd
// with another pid answers on the control socket (R-INIT-07: a new pid, not the task's
// state or /Run's exit code, says it came back). Progress goes to log.
func (h TaskHelper) Run(ctx context.Context, argv []string, log io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	wctx, cancel := context.WithTimeout(ctx, h.WaitMax)
	err := platform.WaitExit(wctx, h.WaitPID)
	cancel()
	if err != nil {
		return fmt.Errorf("wait for schedd pid %d to exit: %w", h.WaitPID, err)
	}
	cmdline := strings.Join(argv, " ")
	for i := 1; i <= h.Attempts; i++ {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := platform.RunCommand(rctx, platform.RunSpec{Argv: argv})
		cancel()
		switch {
		case err != nil:
			fmt.Fprintf(log, "schedd respawn-helper: run %d of %s: %v\n", i, cmdline, err)
		case res.Status.Code != 0:
			fmt.Fprintf(log, "schedd respawn-helper: run %d of %s: %s: %s\n", i, cmdline, res.Status, strings.TrimSpace(string(res.Stderr)))
		}
		if pid, ok := h.newSchedd(ctx); ok {
			fmt.Fprintf(log, "schedd respawn-helper: schedd is back as pid %d\n", pid)
			return nil
		}
	}
	return fmt.Errorf("no new schedd answered on %s after %d runs of %s", h.Socket, h.Attempts, cmdline)
}

// newSchedd polls the control socket for up to h.Settle for a schedd other than the old one.
func (h TaskHelper) newSchedd(ctx context.Context) (int, bool) {
	deadline := time.NewTimer(h.Settle)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		pid, err := h.SchedPID(sctx)
		cancel()
		if err == nil && pid != 0 && pid != h.WaitPID {
			return pid, true
		}
		select {
		case <-ctx.Done():
			return 0, false
		case <-deadline.C:
			return 0, false
		case <-tick.C:
		}
	}
}

// taskHelperArgv runs `schedd respawn-helper`: wait for pid to exit, then run the task
// until a schedd other than pid answers on the socket.
func taskHelperArgv(exe string, pid int, socket, task string) []string {
	if task == "" {
		task = platform.DefaultTaskName
	}
	return []string{exe, "respawn-helper", "--wait-pid", strconv.Itoa(pid), "--socket", socket,
		"--", "schtasks", "/Run", "/TN", task}
}
