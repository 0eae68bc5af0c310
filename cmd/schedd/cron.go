package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
)

func newCronCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "cron",
		Short: "List cron jobs, check their next runs, run one now, switch one on or off",
		Long: `Cron jobs (cron.jobs in the config) run an action on a schedule: a heartbeat wake,
a command, an HTTP request or a durable delivery. They fire while the gateway is down
or restarting, and every run is a task (see schedd tasks) kept in the state dir with
its result. These commands talk to the running daemon.

With a PostgreSQL delivery store (deliveries.store.postgres) the hosts of that database
form a fleet: one of them runs the jobs and keeps their tasks in the database, the
others stand by and take over within a lease; each slot runs once across the fleet.
cron list names the host that runs them; run, enable, disable and tasks cancel are
answered by that host only.

  schedd cron list                      # every job: schedule, zone, next run, last result
  schedd cron show nightly              # its settings, next 5 runs and history
  schedd cron next nightly --from 2027-03-13T00:00:00-05:00 --count 3
                                        # the runs after a time: the way to check a DST rule
  schedd cron run nightly --wait        # run it now and wait for the result
  schedd cron disable nightly           # no runs until enable, across daemon restarts
  schedd cron enable nightly`,
	}
	group(c)
	c.AddCommand(newCronListCmd(g), newCronShowCmd(g), newCronNextCmd(g), newCronRunCmd(g),
		newCronSwitchCmd(g, true), newCronSwitchCmd(g, false))
	return c
}

// jobName reads the NAME argument.
func jobName(cmd *cobra.Command, args []string) (string, error) {
	if len(args) != 1 || args[0] == "" {
		return "", usageError{fmt.Errorf("%s takes one job NAME (see `schedd cron list`)", cmd.CommandPath())}
	}
	return args[0], nil
}

func newCronListCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list [--json]",
		Short: "List every cron job: schedule, zone, next run, last result, stagger offset",
		Long: `List every configured cron job with its schedule and zone, when it runs next (its
stagger offset included), how its last task ended and its offset in [0, jitter).
A job that does not run says why: disabled in the config, by request, or after
disable_after failures in a row. The job queue's load is on the last line.

  schedd cron list
  schedd cron list --json   # the cron block of schedd status --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(cmd, g, func(ctx context.Context, cl *client.Client) (api.Cron, error) {
				return cl.Cron(ctx)
			}, asJSON, printCronList)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return c
}

// printCronList writes the table of `schedd cron list`.
func printCronList(w io.Writer, st api.Cron, now time.Time) {
	if len(st.Jobs) == 0 {
		fmt.Fprintln(w, "no cron jobs (cron.jobs in the config; see `schedd config example`)")
		if l := fleetLine(st, now); l != "" {
			fmt.Fprintln(w, safe(l))
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSCHEDULE\tZONE\tNEXT RUN\tLAST\tOFFSET")
	for _, j := range st.Jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", safe(j.Name), safe(j.Schedule), safe(orDash(j.Timezone)),
			safe(cronNext(j, now)), safe(cronLast(j.Last, now)), msDur(j.OffsetMS))
	}
	tw.Flush()
	fmt.Fprintln(w, queueLine(st))
	if l := fleetLine(st, now); l != "" {
		fmt.Fprintln(w, safe(l))
	}
}

// cronNext says when a job runs next: its retry or its slot, or why it does not run.
func cronNext(j api.CronJob, now time.Time) string {
	switch {
	case !j.Enabled:
		return "off: " + j.DisabledReason
	case j.RetryAt != nil && (j.NextRunAt == nil || j.RetryAt.Before(*j.NextRunAt)):
		return "retry " + nextDue(j.RetryAt, now)
	case j.NextRunAt == nil:
		return "none (the schedule has ended)"
	}
	return nextDue(j.NextRunAt, now)
}

func cronLast(l *api.CronLast, now time.Time) string {
	if l == nil {
		return "never"
	}
	s := string(l.State)
	if l.Reason != "" {
		s += " (" + l.Reason + ")"
	}
	s += " " + since(l.At, now) + " ago"
	if l.Host != "" {
		s += " on " + l.Host
	}
	return s
}

// fleetLine says which host of a fleet runs the jobs; empty on a single host.
func fleetLine(st api.Cron, now time.Time) string {
	f := st.Fleet
	switch {
	case f == nil:
		return ""
	case f.Role == "leader":
		return fmt.Sprintf("fleet: this host (%s) runs the jobs (term %d)", f.Host, f.Term)
	case f.Role == "connecting":
		return fmt.Sprintf("fleet: this host (%s) has not reached the database yet", f.Host)
	case f.Leader == "":
		return fmt.Sprintf("fleet: this host (%s) stands by; no host runs the jobs right now", f.Host)
	}
	s := fmt.Sprintf("fleet: host %s runs the jobs (term %d); this host (%s) stands by", f.Leader, f.Term, f.Host)
	if f.LeaderUntil != nil && f.LeaderUntil.Before(now) {
		s += "; its lease ran out " + since(*f.LeaderUntil, now) + " ago"
	}
	return s
}

// queueLine sums up the job queue.
func queueLine(st api.Cron) string {
	s := fmt.Sprintf("%d running (of %d workers), %d queued (of %d)", st.Running, st.Workers, st.Queued, st.QueueSize)
	if st.QueueFull > 0 {
		s += fmt.Sprintf(", %d skipped: queue full", st.QueueFull)
	}
	return s
}

func newCronShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show NAME [--json]",
		Short: "Show one cron job: its settings, next 5 runs and history",
		Long: `Show one cron job: its schedule, policies and action kind, whether it runs, its
next five run instants (in its zone and in UTC) and its tasks, newest first.

  schedd cron show nightly
  schedd cron show nightly --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := jobName(cmd, args)
			if err != nil {
				return err
			}
			return show(cmd, g, func(ctx context.Context, cl *client.Client) (api.CronJobDetail, error) {
				return cl.CronJob(ctx, name)
			}, asJSON, printCronJob)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the job as JSON")
	return c
}

// historyShown is how many tasks `schedd cron show` prints.
const historyShown = 10

func printCronJob(w io.Writer, d api.CronJobDetail, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, safe(v)) }
	row("name", d.Name)
	row("schedule", d.Schedule)
	row("timezone", orDash(d.Timezone))
	row("action", d.Action)
	if d.Enabled {
		row("enabled", "yes")
	} else {
		row("enabled", "no: "+d.DisabledReason)
	}
	row("next run", cronNext(d.CronJob, now))
	row("last", cronLast(d.Last, now))
	row("failures in a row", strconv.Itoa(d.ConsecutiveFailures))
	row("active tasks", strconv.Itoa(d.Active))
	row("jitter", fmt.Sprintf("%s (offset %s)", msDur(d.JitterMS), msDur(d.OffsetMS)))
	row("missed", d.Missed)
	row("starting deadline", noneIfZero(d.StartingDeadlineMS))
	row("concurrency", d.Concurrency)
	var sched []string
	for _, ms := range d.Retry.ScheduleMS {
		sched = append(sched, msDur(ms))
	}
	if d.Retry.Max > 0 {
		row("retry", fmt.Sprintf("up to %d times, after %s", d.Retry.Max, strings.Join(sched, ", ")))
	} else {
		row("retry", "never")
	}
	if d.DisableAfter > 0 {
		row("disable after", fmt.Sprintf("%d failures in a row", d.DisableAfter))
	} else {
		row("disable after", "never")
	}
	row("history limit", strconv.Itoa(d.HistoryLimit))
	row("priority", strconv.Itoa(d.Priority))
	row("timeout", msDur(d.TimeoutMS))
	tw.Flush()
	if len(d.Next) > 0 {
		loc := zoneOf(d.Timezone)
		if loc == time.UTC {
			fmt.Fprintf(w, "\nnext runs (UTC):\n")
		} else {
			fmt.Fprintf(w, "\nnext runs (%s, UTC):\n", safe(loc.String()))
		}
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, t := range d.Next {
			if loc == time.UTC {
				fmt.Fprintf(tw, "  %s\n", t.UTC().Format(time.RFC3339))
			} else {
				fmt.Fprintf(tw, "  %s\t%s\n", t.In(loc).Format(time.RFC3339), t.UTC().Format(time.RFC3339))
			}
		}
		tw.Flush()
	}
	if len(d.History) == 0 {
		fmt.Fprintln(w, "\nno tasks yet")
		return
	}
	fmt.Fprintf(w, "\nhistory (newest first):\n")
	printTasks(w, d.History[:min(len(d.History), historyShown)], now)
	if n := len(d.History) - historyShown; n > 0 {
		fmt.Fprintf(w, "... %d more: schedd tasks list --job %s\n", n, safe(d.Name))
	}
}

// zoneOf is the location a job's zone names, for showing its instants: UTC when it has
// none, this host's zone for the host's ("Local").
func zoneOf(tz string) *time.Location {
	switch tz {
	case "":
		return time.UTC
	case "Local":
		return time.Local
	}
	if loc, err := time.LoadLocation(tz); err == nil {
		return loc
	}
	return time.UTC
}

func newCronNextCmd(g *globals) *cobra.Command {
	var count int
	var from string
	var asJSON bool
	c := &cobra.Command{
		Use:   "next NAME [--count N] [--from TIME] [--json]",
		Short: "Print a job's next run instants after a time, in its zone and in UTC",
		Long: `Print the next run instants of a job after --from (default now), stagger offset
included, in the job's zone and in UTC. This is the way to check what schedd does on
a daylight-saving change: a fixed hour in a gap runs once, shifted by the gap, and a
wall time that happens twice runs once, at the first; a wildcard or step hour runs
in real time. For a job at 02:30 in New York, on the spring-forward day:

  schedd cron next nightly --from 2027-03-13T12:00:00-05:00 --count 2
  LOCAL (America/New_York)   UTC
  2027-03-14T03:30:00-04:00  2027-03-14T07:30:00Z
  2027-03-15T02:30:00-04:00  2027-03-15T06:30:00Z

--from takes RFC 3339, with its offset (or Z).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := jobName(cmd, args)
			if err != nil {
				return err
			}
			if count < 1 || count > 1000 {
				return usageError{fmt.Errorf("--count %d: want 1 to 1000", count)}
			}
			var at time.Time
			if from != "" {
				if at, err = time.Parse(time.RFC3339, from); err != nil {
					return usageError{fmt.Errorf("--from %q: want an RFC 3339 time like 2027-03-14T00:00:00-05:00", from)}
				}
			}
			reply, err := call(cmd, g, 30*time.Second, func(ctx context.Context, cl *client.Client) (api.CronNextReply, error) {
				return cl.CronNext(ctx, name, count, at)
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, reply)
			}
			if len(reply.Runs) == 0 {
				fmt.Fprintf(out, "%s has no run after %s\n", safe(reply.Name), reply.From.Format(time.RFC3339))
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "LOCAL (%s)\tUTC\n", safe(orDash(reply.Timezone)))
			for _, r := range reply.Runs {
				fmt.Fprintf(tw, "%s\t%s\n", safe(r.Local), r.At.UTC().Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	f := c.Flags()
	f.IntVar(&count, "count", 5, "how many instants, 1 to 1000")
	f.StringVar(&from, "from", "", "the `TIME` to start after, RFC 3339 (default now)")
	f.BoolVar(&asJSON, "json", false, "print the instants as JSON")
	return c
}

func newCronRunCmd(g *globals) *cobra.Command {
	var wait, asJSON bool
	c := &cobra.Command{
		Use:   "run NAME [--wait] [--json]",
		Short: "Run a job now (enabled or not), as a manual task",
		Long: `Queue a manual run of a job now, whether it is enabled or not. It goes through the
job queue like any task and follows the job's concurrency policy: under forbid (the
default) a run while the job's previous one is still active is skipped (overlap).

  schedd cron run nightly          # prints the task; see schedd tasks show ID
  schedd cron run nightly --wait   # waits for it to end and prints how; ^C stops waiting

Exit status: 0 queued (with --wait: succeeded), 1 skipped, failed, timed out or
cancelled, 2 usage.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := jobName(cmd, args)
			if err != nil {
				return err
			}
			// ^C stops waiting; the run goes on.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			if !wait {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
			}
			cl := g.client()
			defer cl.Close()
			reply, err := cl.CronRun(ctx, name, api.CronRunRequest{Wait: wait})
			if errors.Is(err, context.Canceled) {
				return errors.New("stopped waiting; the run goes on (see `schedd tasks list --job " + name + "`)")
			}
			if err != nil {
				return err
			}
			out, t := cmd.OutOrStdout(), reply.Task
			if asJSON {
				if err := writeJSON(out, reply); err != nil {
					return err
				}
			} else if t.State.Terminal() {
				printTask(out, t, time.Now())
			} else {
				fmt.Fprintf(out, "task %d %s (manual run of %s); see `schedd tasks show %d`\n", t.ID, safe(string(t.State)), safe(name), t.ID)
			}
			if t.State.Terminal() && t.State != api.TaskSucceeded {
				return withCode(exitFailure, fmt.Errorf("task %d %s: %s", t.ID, t.State, taskDetail(t)))
			}
			return nil
		},
	}
	f := c.Flags()
	f.BoolVar(&wait, "wait", false, "wait until the task has ended and print its result")
	f.BoolVar(&asJSON, "json", false, "print the reply as JSON")
	return c
}

func newCronSwitchCmd(g *globals, on bool) *cobra.Command {
	use, short, long := "enable NAME", "Switch a job on (also after it was disabled by failures)", `Switch a job on. It starts from its next slot, without catching up the slots it
missed while off, and its count of failures in a row starts again from 0. The switch
is saved in the state dir and wins over the config's enabled.

  schedd cron enable nightly`
	if !on {
		use, short, long = "disable NAME", "Switch a job off (saved across daemon restarts)", `Switch a job off: no slot runs and a pending retry is dropped, until schedd cron
enable. A run already going finishes. The switch is saved in the state dir before
the command returns and wins over the config's enabled.

  schedd cron disable nightly`
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := jobName(cmd, args)
			if err != nil {
				return err
			}
			reply, err := call(cmd, g, 30*time.Second, func(ctx context.Context, cl *client.Client) (api.CronEnabledReply, error) {
				return cl.SetCronEnabled(ctx, name, on)
			})
			if err != nil {
				return err
			}
			state := map[bool]string{true: "enabled", false: "disabled"}[reply.Enabled]
			if reply.Changed {
				fmt.Fprintf(cmd.OutOrStdout(), "cron job %s %s\n", safe(reply.Name), state)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "cron job %s was already %s\n", safe(reply.Name), state)
			}
			return nil
		},
	}
}

// printCronSummary adds the cron rows to `schedd status`: the job queue, then the first
// few jobs.
func printCronSummary(row func(string, ...string), c *api.Cron, now time.Time) {
	if c == nil {
		return
	}
	if len(c.Jobs) == 0 {
		row("cron", "no jobs")
		return
	}
	off := 0
	for _, j := range c.Jobs {
		if !j.Enabled {
			off++
		}
	}
	v := []string{fmt.Sprintf("%d jobs", len(c.Jobs))}
	if len(c.Jobs) == 1 {
		v[0] = "1 job"
	}
	if off > 0 {
		v = append(v, fmt.Sprintf("%d off", off))
	}
	row("cron", append(v, queueLine(*c))...)
	if l := fleetLine(*c, now); l != "" {
		row("", l)
	}
	const show = 5
	for i, j := range c.Jobs {
		if i == show {
			row("", fmt.Sprintf("... %d more: schedd cron list", len(c.Jobs)-show))
			break
		}
		row("  "+j.Name, "next "+cronNext(j, now), "last "+cronLast(j.Last, now))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// msDur writes milliseconds as a duration, 5m and 1h where time.Duration writes 5m0s and
// 1h0m0s.
func msDur(ms int64) string {
	s := (time.Duration(ms) * time.Millisecond).String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

func noneIfZero(ms int64) string {
	if ms == 0 {
		return "none"
	}
	return msDur(ms)
}
