package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/store"
)

// RunTasks checks that an empty task store keeps what store.TaskStore documents: every
// field of a task and of a job's row, the next task id, a second task for a (run key,
// attempt) refused (P24), and the filters of Tasks. host is what the store records as the
// host of a task ("" for a store that keeps none).
func RunTasks(t *testing.T, st store.TaskStore, host string) {
	ctx := context.Background()
	at := time.Date(2026, 3, 29, 1, 30, 0, 123456789, time.UTC)
	code := 3
	in := &store.Task{ID: 5, Job: "j", Kind: api.KindRetry, RunKey: "j@" + at.Format(time.RFC3339Nano), Attempt: 2, Slot: at, Due: at.Add(time.Second),
		State: api.TaskFailed, Reason: "r", Queued: at.Add(2 * time.Second), Started: at.Add(3 * time.Second),
		Ended: at.Add(4 * time.Second), ExitCode: &code, Signal: "SIGTERM", HTTPStatus: 503, Class: api.ClassTransient,
		Err: "boom", Output: "out", Host: host}
	on := false
	row := &store.CronJob{Name: "j", Schedule: "every 1m0s", LastSlot: at, Enabled: &on, DisabledReason: "why", Failures: 2,
		Retry: &store.PendingRetry{At: at.Add(time.Minute), Wait: time.Minute, Of: 5, RunKey: in.RunKey, Attempt: 3, Slot: at}}
	if dups, _, err := st.Commit(ctx, &store.TaskBatch{Tasks: []*store.Task{in}, Jobs: []*store.CronJob{row}}, at); err != nil || len(dups) != 0 {
		t.Fatalf("commit: %v %v", dups, err)
	}
	got, err := st.Task(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := got.API(), in.API(); g.Host != host || !g.Slot.Equal(*w.Slot) || *g.ExitCode != 3 || g.DurationMS != 1000 ||
		g.Output != w.Output || g.Class != w.Class || g.Error != w.Error || g.HTTPStatus != 503 || g.Signal != "SIGTERM" {
		t.Fatalf("round trip:\n got %+v\nwant %+v", g, w)
	}
	snap, err := st.LoadState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := snap.Jobs["j"]
	if r == nil || !r.LastSlot.Equal(at) || r.Enabled == nil || *r.Enabled || r.DisabledReason != "why" || r.Failures != 2 ||
		r.Retry == nil || *r.Retry != *row.Retry || r.Stored != 1 || r.Last == nil || r.Last.Host != host || snap.NextID != 6 {
		t.Fatalf("state %+v retry %+v next %d", r, r.Retry, snap.NextID)
	}
	again := *in
	again.ID = 6
	if dups, _, err := st.Commit(ctx, &store.TaskBatch{Tasks: []*store.Task{&again}}, at); err != nil || len(dups) != 1 {
		t.Fatalf("second task for (run key, attempt): dups %v err %v", dups, err)
	}
	if list, err := st.Tasks(ctx, store.TaskFilter{Job: "j", State: api.TaskFailed, Limit: 10}); err != nil || len(list) != 1 {
		t.Fatalf("tasks: %v %v", list, err)
	}
}
