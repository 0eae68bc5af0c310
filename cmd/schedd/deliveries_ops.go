package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
)

func newDeliveriesRetryCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "retry ID",
		Short: "Move a dead letter back to pending: it is sent again now",
		Long: `Move a dead letter back to pending, due now, with its failure count reset, so it
gets max_retries attempts again. Fix what made it fail first (see schedd deliveries
show ID). Only dead letters can be retried: a delivered entry is never sent again.

  schedd deliveries retry 42`,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := deliveryID(cmd, args)
			if err != nil {
				return err
			}
			d, err := call(cmd, g, 30*time.Second, func(ctx context.Context, cl *client.Client) (api.Delivery, error) {
				return cl.RetryDelivery(ctx, id)
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "delivery %d is pending again and due now (sink %s)\n", d.ID, safe(d.Sink))
			return nil
		},
	}
}

func newDeliveriesDropCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "drop ID",
		Short: "Delete a pending delivery or a dead letter: it is never sent",
		Long: `Delete a pending delivery or a dead letter; it is never sent. An entry being sent
right now cannot be dropped (try again in a moment), and a delivered entry is kept
until its retention ends, so that its idempotency key keeps working.

  schedd deliveries drop 42`,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := deliveryID(cmd, args)
			if err != nil {
				return err
			}
			if _, err := call(cmd, g, 30*time.Second, func(ctx context.Context, cl *client.Client) (api.DropReply, error) {
				return cl.DropDelivery(ctx, id)
			}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "delivery %d dropped\n", id)
			return nil
		},
	}
}

func newDeliveriesPurgeCmd(g *globals) *cobra.Command {
	var dead, delivered bool
	var older time.Duration
	c := &cobra.Command{
		Use:   "purge --dead|--delivered --older-than DURATION",
		Short: "Delete dead letters (or delivered entries) that finished long ago",
		Long: `Delete the dead letters (--dead) or the delivered entries (--delivered) that
finished more than --older-than ago. deliveries.dead_retention and
deliveries.delivered_retention do the same on their own every hour.

  schedd deliveries purge --dead --older-than 168h
  schedd deliveries purge --dead --older-than 0s      # every dead letter

It deletes in batches of 10,000, each a short write; on a terminal it says how many
are gone after each batch.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dead == delivered {
				return usageError{errors.New("give exactly one of --dead and --delivered")}
			}
			if !cmd.Flags().Changed("older-than") {
				return usageError{errors.New("--older-than is required (0s purges all of them)")}
			}
			if older < 0 {
				return usageError{fmt.Errorf("--older-than %v: must not be negative", older)}
			}
			req := api.PurgeRequest{State: api.DeliveryDead, OlderThan: older.String()}
			what := "dead letters"
			if delivered {
				req.State, what = api.DeliveryDelivered, "delivered entries"
			}
			var progress io.Writer
			if isTerminal(cmd.ErrOrStderr()) {
				progress = cmd.ErrOrStderr()
			}
			n, err := purgeBatches(progress, what, func(limit int) (int, error) {
				req.Limit = limit
				reply, err := call(cmd, g, 30*time.Second, func(ctx context.Context, cl *client.Client) (api.PurgeReply, error) {
					return cl.Purge(ctx, req)
				})
				return reply.Purged, err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "purged %d %s older than %s\n", n, what, older)
			return nil
		},
	}
	f := c.Flags()
	f.BoolVar(&dead, "dead", false, "purge dead letters")
	f.BoolVar(&delivered, "delivered", false, "purge delivered entries (their idempotency keys are forgotten)")
	f.DurationVar(&older, "older-than", 0, "purge those that finished more than `DURATION` ago")
	return c
}

func newDeliveriesRecoverCmd(g *globals) *cobra.Command {
	var dry, asJSON bool
	c := &cobra.Command{
		Use:   "recover --dry-run",
		Short: "Show what a recovery pass would do now, changing nothing",
		Long: `At every start schedd runs a recovery pass over the pending deliveries: an entry
found "sending" was interrupted by a crash and is sent again with the same
idempotency key; entries out of retries or past their TTL are dead-lettered; the
rest is sent if due (spaced per sink) or left to its backoff. The pass is logged
and its summary is in schedd status.

--dry-run shows what such a pass would do now, entry by entry, without sending or
writing anything. Over a long queue it reads 10,000 entries at a time; on a terminal
it says how many it has read after each of them.

  schedd deliveries recover --dry-run
  schedd deliveries recover --dry-run --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !dry {
				return usageError{errors.New("only --dry-run is supported: the recovery pass runs at every start of schedd")}
			}
			rep, err := call(cmd, g, time.Minute, func(ctx context.Context, cl *client.Client) (api.RecoveryReport, error) {
				if !asJSON && isTerminal(cmd.ErrOrStderr()) {
					return cl.RecoverWithProgress(ctx, api.RecoverRequest{DryRun: true}, recoverProgress(cmd.ErrOrStderr()))
				}
				return cl.Recover(ctx, api.RecoverRequest{DryRun: true})
			})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			printRecovery(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	c.Flags().BoolVar(&dry, "dry-run", false, "report only: send and write nothing")
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return c
}

// printRecovery writes a dry-run report: the summary, then one line per entry.
func printRecovery(w io.Writer, rep api.RecoveryReport) {
	fmt.Fprintf(w, "%d pending: %s\n", rep.Scanned, summaryLine(rep.RecoverySummary))
	if len(rep.Actions) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSINK\tACTION\tDETAIL")
	for _, a := range rep.Actions {
		detail := a.Reason
		if !a.DueAt.IsZero() {
			detail = "due " + a.DueAt.Local().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", a.ID, safe(a.Sink), safe(a.Action), safe(detail))
	}
	tw.Flush()
	if rep.Truncated {
		fmt.Fprintln(w, "(more entries not listed)")
	}
}

// summaryLine lists a recovery summary's non-zero counters.
func summaryLine(s api.RecoverySummary) string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(s.WouldReplay, "would be sent")
	add(s.Recovered, "recovered")
	add(s.Interrupted, "interrupted (resent)")
	add(s.Failed, "failed")
	add(s.SkippedMaxRetries, "out of retries")
	add(s.Expired, "expired")
	add(s.DeferredBackoff, "backing off")
	add(s.DeferredNotReady, "waiting for the sink")
	add(s.DeferredBudget, "over the time budget")
	add(s.DeferredError, "store errors")
	add(s.AlreadyGone, "already gone")
	if len(parts) == 0 {
		return "nothing to do"
	}
	return strings.Join(parts, ", ")
}

// recoverProgress says on w how many live entries a dry run has read, once there are
// enough for the wait to be felt (a page of 10,000).
func recoverProgress(w io.Writer) func(scanned int) {
	return func(n int) {
		if n >= 10_000 {
			fmt.Fprintf(w, "read %d pending entries so far...\n", n)
		}
	}
}

// purgeBatch is how many entries one purge request deletes: a purge of millions is many
// short writes, each reported, rather than one that holds the store for minutes.
const purgeBatch = 10_000

// purgeBatches calls purge with purgeBatch until a batch comes back short, and returns how
// many were purged in all. With progress set (a terminal) it says the count after each
// full batch. An error names how many were purged before it.
func purgeBatches(progress io.Writer, what string, purge func(limit int) (int, error)) (int, error) {
	total := 0
	for {
		n, err := purge(purgeBatch)
		total += n
		if err != nil {
			if total > 0 {
				return total, fmt.Errorf("after purging %d %s: %w", total, what, err)
			}
			return 0, err
		}
		if n < purgeBatch {
			return total, nil
		}
		if progress != nil {
			fmt.Fprintf(progress, "purged %d %s so far...\n", total, what)
		}
	}
}
