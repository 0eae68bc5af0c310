package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/schedd/schedd/internal/handoff"
)

// newRespawnHelperCmd is the hidden command the old schedd starts, detached, right before
// it exits with 75 under schtasks: handoff.TaskHelper brings schedd back through its
// scheduled task, and this client of the control socket tells it which schedd answers.
func newRespawnHelperCmd(g *globals) *cobra.Command {
	h := handoff.TaskHelper{}
	c := &cobra.Command{
		Use:    "respawn-helper --wait-pid PID [--socket PATH] -- COMMAND [ARG...]",
		Short:  "Bring schedd back through its scheduled task once the old process is gone (internal)",
		Hidden: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || h.WaitPID <= 0 {
				return usageError{errors.New("respawn-helper needs --wait-pid and a COMMAND after \"--\"")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			client := g.client()
			defer client.Close()
			h.Socket = client.Socket
			h.SchedPID = func(ctx context.Context) (int, error) {
				st, err := client.Status(ctx)
				return st.Schedd.PID, err
			}
			return h.Run(cmd.Context(), args, cmd.ErrOrStderr())
		},
	}
	f := c.Flags()
	f.IntVar(&h.WaitPID, "wait-pid", 0, "the `PID` of the schedd that is exiting")
	f.DurationVar(&h.WaitMax, "wait-max", handoff.DefaultHelperWaitMax, "how long it may take to exit")
	f.IntVar(&h.Attempts, "attempts", handoff.DefaultHelperAttempts, "how often to run COMMAND")
	f.DurationVar(&h.Settle, "settle", handoff.DefaultHelperSettle, "how long to look for a new schedd after each run")
	return c
}
