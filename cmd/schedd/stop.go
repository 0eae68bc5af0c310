package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedd/schedd/internal/client"
)

func newStopCmd(g *globals) *cobra.Command {
	var wait time.Duration
	c := &cobra.Command{
		Use:   "stop",
		Short: "Stop the daemon (the same as SIGTERM): the gateway is stopped gracefully",
		Long: `Stop the daemon: a pending restart is cancelled, the gateway gets its stop signal
(SIGKILL after gateway.stop.timeout), and schedd exits 0. Under a service manager that
restarts schedd on failure, a clean stop is not restarted.

  schedd stop              # returns once schedd has exited (at most --wait)
  schedd stop --wait 0     # return at once`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl := g.client()
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := cl.Stop(ctx); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "schedd is stopping")
			if wait <= 0 {
				return nil
			}
			deadline := time.Now().Add(wait)
			for time.Now().Before(deadline) {
				sctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, err := cl.Status(sctx)
				cancel()
				if errors.Is(err, client.ErrNoDaemon) {
					fmt.Fprintln(cmd.OutOrStdout(), "schedd stopped")
					return nil
				}
				time.Sleep(50 * time.Millisecond)
			}
			return fmt.Errorf("schedd still answers after %s", wait)
		},
	}
	c.Flags().DurationVar(&wait, "wait", time.Minute, "wait up to this long for schedd to exit")
	return c
}
