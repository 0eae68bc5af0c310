package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
)

func newTasksCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "tasks",
		Short: "List cron tasks (every run of a cron job), show one, cancel one",
		Long: `Every run of a cron job is a task: scheduled, catch_up (for slots missed while
schedd was down), manual (schedd cron run) or retry. A task is queued, then running,
then succeeded, failed, timed_out, cancelled or skipped (with a reason: overlap,
queue_full, missed, deadline...); a task that was running when schedd was killed is
lost and retried like a transient failure. Tasks are kept in the state dir, up to
each job's history_limit.

  schedd tasks list                       # newest first
  schedd tasks list --job nightly --state failed
  schedd tasks show 42                    # one task: times, exit status, error, output
  schedd tasks cancel 42                  # stop a queued or running task`,
	}
	group(c)
	c.AddCommand(newTasksListCmd(g), newTasksShowCmd(g), newTasksCancelCmd(g))
	return c
}

// taskStates lists the task states for messages.
const taskStates = "queued, running, succeeded, failed, timed_out, cancelled, skipped or lost"

func newTasksListCmd(g *globals) *cobra.Command {
	var job, state string
	var limit int
	var before int64
	var asJSON bool
	c := &cobra.Command{
		Use:   "list [--job NAME] [--state STATE] [--limit N] [--before ID] [--json]",
		Short: "List tasks, newest first: job, kind, state, attempt, when, detail",
		Long: `List tasks, newest first. STATE is ` + taskStates + `.
A job no longer configured keeps its history until it returns.

  schedd tasks list
  schedd tasks list --job nightly
  schedd tasks list --state lost --json
  schedd tasks list --before 500     # the next page (list prints the cursor)`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if state != "" && !api.TaskState(state).Valid() {
				return usageError{fmt.Errorf("--state %q: want %s", state, taskStates)}
			}
			if limit < 1 || limit > 1000 {
				return usageError{fmt.Errorf("--limit %d: want 1 to 1000", limit)}
			}
			q := client.TaskQuery{Job: job, State: api.TaskState(state), Limit: limit, Before: before}
			list, err := call(cmd, g, 30*time.Second, func(ctx context.Context, cl *client.Client) (api.TaskList, error) {
				return cl.Tasks(ctx, q)
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, list)
			}
			if len(list.Tasks) == 0 {
				fmt.Fprintln(out, "no tasks")
				return nil
			}
			printTasks(out, list.Tasks, time.Now())
			if list.NextCursor != 0 {
				fmt.Fprintf(out, "more: --before %d\n", list.NextCursor)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&job, "job", "", "only the tasks of the job `NAME`")
	f.StringVar(&state, "state", "", "only tasks in `STATE`")
	f.IntVar(&limit, "limit", 100, "at most `N` tasks (1 to 1000)")
	f.Int64Var(&before, "before", 0, "list tasks older than this `ID` (the cursor of the previous page)")
	f.BoolVar(&asJSON, "json", false, "print the list as JSON")
	return c
}

// printTasks writes a table of tasks.
func printTasks(w io.Writer, tasks []api.Task, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// On a fleet every task says which host ran it.
	fleet := slices.ContainsFunc(tasks, func(t api.Task) bool { return t.Host != "" })
	head := "ID\tJOB\tKIND\tSTATE\tATTEMPT\tWHEN\tDURATION\tDETAIL"
	if fleet {
		head = "ID\tJOB\tKIND\tSTATE\tATTEMPT\tHOST\tWHEN\tDURATION\tDETAIL"
	}
	fmt.Fprintln(tw, head)
	for _, t := range tasks {
		when := "due " + since(t.DueAt, now) + " ago"
		switch {
		case t.EndedAt != nil:
			when = "ended " + since(*t.EndedAt, now) + " ago"
		case t.StartedAt != nil:
			when = "started " + since(*t.StartedAt, now) + " ago"
		case t.DueAt.After(now):
			when = "due in " + until(t.DueAt, now)
		}
		dur := "-"
		if t.EndedAt != nil && t.StartedAt != nil {
			dur = msDur(t.DurationMS)
		}
		attempt := strconv.Itoa(t.Attempt)
		if fleet {
			attempt += "\t" + safe(orDash(t.Host))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, safe(t.Job), safe(string(t.Kind)), safe(string(t.State)),
			attempt, when, dur, safe(shorten(taskDetail(t), 80)))
	}
	tw.Flush()
}

// taskDetail is what a task's end says, in a few words: the reason, the exit status or
// HTTP status, the class and the error.
func taskDetail(t api.Task) string {
	var parts []string
	if t.Reason != "" {
		parts = append(parts, t.Reason)
	}
	switch {
	case t.ExitCode != nil:
		parts = append(parts, fmt.Sprintf("exit %d", *t.ExitCode))
	case t.Signal != "":
		parts = append(parts, t.Signal)
	case t.HTTPStatus != 0:
		parts = append(parts, fmt.Sprintf("HTTP %d", t.HTTPStatus))
	}
	if t.Class != "" {
		parts = append(parts, t.Class)
	}
	if t.Error != "" {
		parts = append(parts, t.Error)
	}
	return strings.Join(parts, ": ")
}

// taskArg reads the ID argument.
func taskArg(cmd *cobra.Command, args []string) (int64, error) {
	return idArg(cmd, args, "task", "schedd tasks list")
}

func newTasksShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show ID [--json]",
		Short: "Show one task: its job, slot, attempt, times, result, error and output",
		Long: `Show one task: its job and kind, the slot it runs for and its run key (shared by
every attempt: deliveries and HTTP requests carry it as their idempotency key), the
attempt, when it was due, queued, started and ended, how it ended (exit status,
signal or HTTP status; transient or permanent), its error and the start of its output.

  schedd tasks show 42
  schedd tasks show 42 --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := taskArg(cmd, args)
			if err != nil {
				return err
			}
			return show(cmd, g, func(ctx context.Context, cl *client.Client) (api.Task, error) {
				return cl.Task(ctx, id)
			}, asJSON, printTask)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the task as JSON")
	return c
}

// printTask writes one task for people.
func printTask(w io.Writer, t api.Task, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, safe(v)) }
	at := func(t time.Time) string { return t.Local().Format(time.RFC3339) + " (" + since(t, now) + " ago)" }
	row("task", strconv.FormatInt(t.ID, 10))
	row("job", t.Job)
	row("kind", string(t.Kind))
	state := string(t.State)
	if t.Reason != "" {
		state += " (" + t.Reason + ")"
	}
	row("state", state)
	if t.Slot != nil {
		row("slot", t.Slot.UTC().Format(time.RFC3339))
	}
	row("run key", t.RunKey)
	row("attempt", strconv.Itoa(t.Attempt))
	if t.Host != "" {
		row("host", t.Host)
	}
	row("due", t.DueAt.Local().Format(time.RFC3339))
	row("queued", at(t.QueuedAt))
	if t.StartedAt != nil {
		row("started", at(*t.StartedAt))
	}
	if t.EndedAt != nil {
		row("ended", at(*t.EndedAt))
		if t.StartedAt != nil {
			row("duration", msDur(t.DurationMS))
		}
	}
	switch {
	case t.ExitCode != nil:
		row("exit code", strconv.Itoa(*t.ExitCode))
	case t.Signal != "":
		row("signal", t.Signal)
	case t.HTTPStatus != 0:
		row("http status", strconv.Itoa(t.HTTPStatus))
	}
	if t.Class != "" {
		row("failure", t.Class)
	}
	if t.Error != "" {
		row("error", t.Error)
	}
	tw.Flush()
	if t.Output != "" {
		fmt.Fprintf(w, "\n%s\n", safeText(strings.TrimSuffix(t.Output, "\n")))
	}
}

func newTasksCancelCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "cancel ID [--json]",
		Short: "Cancel a queued or running task; returns once it has ended",
		Long: `Cancel a task. A queued one never runs; a running one is stopped (a command gets
SIGTERM, then SIGKILL after 10 s, its whole process group; a request is aborted) and
the command returns once it has ended. A cancelled task is not retried. A task that
had already ended is shown as it ended.

  schedd tasks cancel 42`,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := taskArg(cmd, args)
			if err != nil {
				return err
			}
			reply, err := call(cmd, g, 2*time.Minute, func(ctx context.Context, cl *client.Client) (api.TaskCancelReply, error) {
				return cl.CancelTask(ctx, id)
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch {
			case asJSON:
				return writeJSON(out, reply)
			case reply.Cancelled:
				fmt.Fprintf(out, "task %d cancelled (job %s)\n", id, safe(reply.Task.Job))
			default:
				fmt.Fprintf(out, "task %d had already ended: %s\n", id, safe(string(reply.Task.State)))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the reply as JSON")
	return c
}
