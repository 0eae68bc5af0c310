package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
)

// tasksMode writes every task of the daemon on socket, read through GET /v1/tasks, as
// "job slot_ns due_ns queued_ns started_ns ended_ns ok" lines (0 for a time the task has not; ok is
// 1 for succeeded); the other states are counted on stderr.
func tasksMode(args []string) error {
	fs := flag.NewFlagSet("tasks", flag.ExitOnError)
	socket := fs.String("socket", "", "the daemon's control socket")
	out := fs.String("out", "", "run record file")
	_ = fs.Parse(args)
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	c := client.New(*socket)
	defer c.Close()
	states := map[api.TaskState]int{}
	ns := func(t *time.Time) int64 {
		if t == nil {
			return 0
		}
		return t.UnixNano()
	}
	for before := int64(0); ; {
		q := url.Values{"limit": {"1000"}}
		if before > 0 {
			q.Set("before", strconv.FormatInt(before, 10))
		}
		var list api.TaskList
		if err := c.Do(context.Background(), "GET", "/v1/tasks?"+q.Encode(), nil, &list); err != nil {
			return err
		}
		for _, t := range list.Tasks {
			states[t.State]++
			ok := 0
			if t.State == api.TaskSucceeded {
				ok = 1
			}
			fmt.Fprintf(w, "%s %d %d %d %d %d %d\n", t.Job, ns(t.Slot), t.DueAt.UnixNano(), t.QueuedAt.UnixNano(), ns(t.StartedAt), ns(t.EndedAt), ok)
		}
		if list.NextCursor == 0 {
			break
		}
		before = list.NextCursor
	}
	fmt.Fprintln(os.Stderr, "tasks by state:", states)
	return w.Flush()
}
