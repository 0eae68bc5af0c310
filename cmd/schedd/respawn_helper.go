package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedd/schedd/internal/client"
	"github.com/schedd/schedd/internal/daemon"
	"github.com/schedd/schedd/internal/platform"
)

// respawnHelperOptions drive the helper that brings schedd back through its scheduled task:
// schedd starts it detached, in its own process group, right before it exits with 75.
type respawnHelperOptions struct {
	*globals
	waitPID  int
	waitMax  time.Duration // how long the old schedd may take to exit
	attempts int           // runs of the command
	settle   time.Duration // how long to look for a new schedd after each run
}

func newRespawnHelperCmd(g *globals) *cobra.Command {
	o := &respawnHelperOptions{globals: g}
	c := &cobra.Command{
		Use:    "respawn-helper --wait-pid PID [--socket PATH] -- COMMAND [ARG...]",
		Short:  "Bring schedd back through its scheduled task once the old process is gone (internal)",
		Hidden: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || o.waitPID <= 0 {
				return usageError{errors.New("respawn-helper needs --wait-pid and a COMMAND after \"--\"")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args, cmd.ErrOrStderr())
		},
	}
	f := c.Flags()
	f.IntVar(&o.waitPID, "wait-pid", 0, "the `PID` of the schedd that is exiting")
	f.DurationVar(&o.waitMax, "wait-max", 10*time.Minute, "how long it may take to exit")
	f.IntVar(&o.attempts, "attempts", 12, "how often to run COMMAND")
	f.DurationVar(&o.settle, "settle", 5*time.Second, "how long to look for a new schedd after each run")
	return c
}

// run waits for the old schedd to exit, then runs the command (schtasks /Run) until a
// schedd with another pid answers on the control socket (R-INIT-07: a new pid, not the
// task's state or /Run's exit code, says it came back).
func (o *respawnHelperOptions) run(ctx context.Context, argv []string, log io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	wctx, cancel := context.WithTimeout(ctx, o.waitMax)
	err := platform.WaitExit(wctx, o.waitPID)
	cancel()
	if err != nil {
		return fmt.Errorf("wait for schedd pid %d to exit: %w", o.waitPID, err)
	}
	client := o.client()
	defer client.Close()
	cmdline := strings.Join(argv, " ")
	for i := 1; i <= o.attempts; i++ {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := platform.RunCommand(rctx, platform.RunSpec{Argv: argv})
		cancel()
		switch {
		case err != nil:
			fmt.Fprintf(log, "schedd respawn-helper: run %d of %s: %v\n", i, cmdline, err)
		case res.Status.Code != 0:
			fmt.Fprintf(log, "schedd respawn-helper: run %d of %s: %s: %s\n", i, cmdline, res.Status, strings.TrimSpace(string(res.Stderr)))
		}
		if pid, ok := o.newSchedd(ctx, client); ok {
			fmt.Fprintf(log, "schedd respawn-helper: schedd is back as pid %d\n", pid)
			return nil
		}
	}
	return fmt.Errorf("no new schedd answered on %s after %d runs of %s", client.Socket, o.attempts, cmdline)
}

// newSchedd polls the control socket for up to o.settle for a schedd other than the old one.
func (o *respawnHelperOptions) newSchedd(ctx context.Context, client *client.Client) (int, bool) {
	deadline := time.NewTimer(o.settle)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := client.Status(sctx)
		cancel()
		if err == nil && st.Schedd.PID != 0 && st.Schedd.PID != o.waitPID {
			return st.Schedd.PID, true
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

// ignorePredecessorKept: a successor whose predecessor did not hand over exits quietly.
func ignorePredecessorKept(err error) error {
	if errors.Is(err, daemon.ErrPredecessorKept) {
		return nil
	}
	return err
}
