package cron

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/sqlite"
)

// seed writes rows into the store of dir as a previous schedd left them.
func seed(t *testing.T, dir string, jobs []*store.CronJob, tasks ...*store.Task) {
	t.Helper()
	st, err := sqlite.OpenTasks(context.Background(), filepath.Join(dir, sqlite.TasksFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dups, _, err := st.Commit(context.Background(), &store.TaskBatch{Jobs: jobs, Tasks: tasks}, time.Now())
	if err != nil || len(dups) > 0 {
		t.Fatalf("seed: %v, %d dups", err, len(dups))
	}
}

// storedTasks reads a job's tasks, oldest first, from the store of dir.
func storedTasks(t *testing.T, dir, job string) []api.Task {
	t.Helper()
	st, err := sqlite.OpenTasks(context.Background(), filepath.Join(dir, sqlite.TasksFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ts, err := st.Tasks(context.Background(), TaskFilter{Job: job, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []api.Task
	for _, t := range slices.Backward(ts) {
		out = append(out, t.API())
	}
	return out
}

func hourly() every { return every{period: time.Hour, origin: t0.Add(-10 * day)} }

// P24: a slot that already has a task in the store is never run again, even when the
// persisted last slot is older (as after a double start): the store's UNIQUE (run key,
// attempt) refuses the second task and no run is emitted.
func TestSlotRunsOnce_P24(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		seed(t, dir, []*store.CronJob{{Name: "j", Schedule: hourly().String(), LastSlot: t0}},
			&store.Task{ID: 7, Job: "j", Kind: api.KindScheduled, RunKey: slotKey("j", t0.Add(time.Hour)), Attempt: 1,
				Slot: t0.Add(time.Hour), Due: t0.Add(time.Hour), State: api.TaskSucceeded, Queued: t0, Ended: t0})
		h := start(t, dir, Config{Jobs: []Job{{Name: "j", Schedule: hourly(), Action: a}}}, nil)
		sleepTo(2*time.Hour + time.Minute)
		if got := at(a.seen()); !slices.Equal(got, []time.Duration{2 * time.Hour}) {
			t.Fatalf("runs at %v: the 1h slot ran twice", got)
		}
		ts := h.tasks("j")
		if len(ts) != 2 || ts[0].ID != 7 || !ts[1].Slot.Equal(t0.Add(2*time.Hour)) {
			t.Fatalf("tasks %+v", ts)
		}
		if h.logs.FilterMessageSnippet("already recorded").Len() != 1 {
			t.Fatal("the refused slot is not logged")
		}
		if st := h.svc.Status(); st.Running != 0 || st.Queued != 0 {
			t.Fatalf("status %+v", st)
		}
	})
}

// P28: a task the store holds as running belonged to a schedd that was killed: it is marked
// lost once, counts as a transient failure, and its run is retried once as attempt 2 with the
// same run key; the slot is not run again otherwise.
func TestLostTaskRetriedOnce_P28(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		seed(t, dir, []*store.CronJob{{Name: "j", Schedule: hourly().String(), LastSlot: t0}},
			&store.Task{ID: 3, Job: "j", Kind: api.KindScheduled, RunKey: slotKey("j", t0), Attempt: 1, Slot: t0, Due: t0,
				State: api.TaskRunning, Queued: t0, Started: t0})
		h := start(t, dir, Config{Jobs: []Job{{Name: "j", Schedule: hourly(), Action: a}}}, nil)
		sleepTo(time.Hour + time.Minute)
		runs := a.seen()
		if got := at(runs); !slices.Equal(got, []time.Duration{30 * time.Second, time.Hour}) {
			t.Fatalf("runs at %v", got)
		}
		if r := runs[0].info; r.Kind != api.KindRetry || r.Attempt != 2 || r.RunKey != slotKey("j", t0) || !r.Slot.Equal(t0) {
			t.Fatalf("retry %+v", r)
		}
		ts := h.tasks("j")
		if got := states(ts); !slices.Equal(got, []string{"scheduled:lost@1", "retry:succeeded@2", "scheduled:succeeded@1"}) {
			t.Fatalf("tasks %v", got)
		}
		if ts[0].Class != api.ClassTransient || ts[0].Error == "" || ts[0].EndedAt == nil {
			t.Fatalf("lost task %+v", ts[0])
		}
		if h.logs.FilterMessage("cron task lost").Len() != 1 {
			t.Fatal("lost not logged once")
		}
	})
}

// P33: on shutdown running tasks get Config.Drain to end, then their ctx is cancelled; they
// end cancelled (stopped) and are retried after the restart. Queued tasks stay queued with
// their attempt, and the next service runs them. Nothing is lost or run twice.
func TestDrain_P33(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		a.set(nil, make(chan struct{})) // runs end only with their ctx
		jobs := []Job{
			{Name: "a", Schedule: every{period: day, origin: t0}, Action: a},
			{Name: "b", Schedule: every{period: day, origin: t0}, Action: a},
		}
		h1 := start(t, dir, Config{Jobs: jobs, Workers: 1, Drain: 5 * time.Second}, nil)
		sleepTo(day + time.Minute)
		if err := h1.stop(); err != nil {
			t.Fatal(err)
		}
		a.mu.Lock()
		ends := slices.Clone(a.ends)
		a.mu.Unlock()
		if len(ends) != 1 || ends[0].Sub(t0) != day+time.Minute+5*time.Second {
			t.Fatalf("ends %v: the running task must be cancelled at the drain deadline", ends)
		}
		if got := states(storedTasks(t, dir, "a")); !slices.Equal(got, []string{"scheduled:cancelled:stopped@1"}) {
			t.Fatalf("a: %v", got)
		}
		if got := states(storedTasks(t, dir, "b")); !slices.Equal(got, []string{"scheduled:queued@1"}) {
			t.Fatalf("b: %v", got)
		}
		a.set(nil, nil)
		h2 := start(t, dir, Config{Jobs: jobs, Workers: 1}, nil)
		sleepTo(day + 10*time.Minute)
		if got := states(h2.tasks("b")); !slices.Equal(got, []string{"scheduled:succeeded@1"}) {
			t.Fatalf("b after the restart: %v", got)
		}
		if got := states(h2.tasks("a")); !slices.Equal(got, []string{"scheduled:cancelled:stopped@1", "retry:succeeded@2"}) {
			t.Fatalf("a after the restart: %v", got)
		}
		if n := len(a.seen()); n != 3 {
			t.Fatalf("%d runs, want 3 (a, b, a's retry)", n)
		}
	})
}

// Update (SIGHUP) adds, changes and removes jobs live; each keeps its history and state by
// name; a changed schedule starts from now; a removed job's queued task is cancelled and its
// running one finishes; a job that comes back has its history.
func TestUpdateKeepsHistory(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		a.set(sleeper(2*time.Minute), nil)
		hourlyJob := func(n string) Job { return Job{Name: n, Schedule: every{period: time.Hour, origin: t0}, Action: a} }
		h := start(t, dir, Config{Workers: 1, Jobs: []Job{hourlyJob("keep"), hourlyJob("gone")}}, nil)
		sleepTo(time.Hour + time.Minute) // keep runs, gone is queued behind it
		ctx := context.Background()
		changed := hourlyJob("keep")
		changed.Schedule = every{period: 7 * time.Minute, origin: t0}
		if err := h.svc.Update(ctx, configuredJobs([]Job{changed, hourlyJob("new")})); err != nil {
			t.Fatal(err)
		}
		if got := states(h.tasks("gone")); !slices.Equal(got, []string{"scheduled:cancelled:removed@1"}) {
			t.Fatalf("gone: %v", got)
		}
		st := h.svc.Status()
		if len(st.Jobs) != 2 || st.Jobs[0].Name != "keep" || st.Jobs[1].Name != "new" {
			t.Fatalf("jobs %+v", st.Jobs)
		}
		// keep's new schedule counts from now (1h1m): next at 1h3m, the next multiple of 7 minutes.
		if !st.Jobs[0].NextRunAt.Equal(t0.Add(63 * time.Minute)) {
			t.Fatalf("keep's next run %v", st.Jobs[0].NextRunAt)
		}
		sleepTo(time.Hour + 4*time.Minute)
		if got := states(h.tasks("keep")); !slices.Equal(got, []string{"scheduled:succeeded@1", "scheduled:running@1"}) {
			t.Fatalf("keep: %v", got)
		}
		if err := h.svc.Update(ctx, configuredJobs([]Job{hourlyJob("keep"), hourlyJob("gone")})); err != nil {
			t.Fatal(err)
		}
		if got := states(h.tasks("gone")); !slices.Equal(got, []string{"scheduled:cancelled:removed@1"}) {
			t.Fatalf("gone came back without its history: %v", got)
		}
		if _, err := h.svc.RunNow(ctx, "new", false); err == nil {
			t.Fatal("a removed job still runs")
		}
		// An invalid set is refused whole.
		if err := h.svc.Update(ctx, configuredJobs([]Job{hourlyJob("x"), hourlyJob("x")})); err == nil {
			t.Fatal("duplicate names accepted")
		}
		if len(h.svc.Status().Jobs) != 2 {
			t.Fatal("a refused update changed the jobs")
		}
	})
}

// history_limit keeps the newest ended tasks of each job.
func TestHistoryLimit(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		h := start(t, dir, Config{Jobs: []Job{{Name: "j", Schedule: every{period: time.Minute, origin: t0}, HistoryLimit: 3, Action: a}}}, nil)
		sleepTo(10*time.Minute + time.Second)
		ts := h.tasks("j")
		if len(ts) != 3 || !ts[0].Slot.Equal(t0.Add(8*time.Minute)) || !ts[2].Slot.Equal(t0.Add(10*time.Minute)) {
			t.Fatalf("kept %v", ts)
		}
		if n := len(a.seen()); n != 10 {
			t.Fatalf("%d runs", n)
		}
		// The last result survives a restart, as does the count used for pruning.
		h.stop()
		h2 := start(t, dir, Config{Jobs: []Job{{Name: "j", Schedule: every{period: time.Minute, origin: t0}, HistoryLimit: 3, Action: a}}}, nil)
		if l := h2.job("j").Last; l == nil || l.TaskID != ts[2].ID || l.State != api.TaskSucceeded {
			t.Fatalf("last %+v", l)
		}
		sleepTo(12*time.Minute + time.Second)
		if n := len(h2.tasks("j")); n != 3 {
			t.Fatalf("%d tasks kept", n)
		}
	})
}

// SetEnabled persists: a job disabled through the API stays disabled after a restart, and
// its pending retry is dropped as a skipped task.
func TestSetEnabledPersists(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		a.set(func(RunInfo) error { return errBoom }, nil)
		job := Job{Name: "j", Schedule: every{period: time.Hour, origin: t0}, Action: a}
		h := start(t, dir, Config{Jobs: []Job{job}}, nil)
		sleepTo(time.Hour + time.Second)
		if h.job("j").RetryAt == nil {
			t.Fatal("no retry pending")
		}
		if _, err := h.svc.SetEnabled(context.Background(), "j", false); err != nil {
			t.Fatal(err)
		}
		h.stop()
		h2 := start(t, dir, Config{Jobs: []Job{job}}, nil)
		j := h2.job("j")
		if j.Enabled || j.DisabledReason != "disabled by request" || j.NextRunAt != nil || j.RetryAt != nil {
			t.Fatalf("after restart %+v", j)
		}
		if got := states(h2.tasks("j")); !slices.Equal(got, []string{"scheduled:failed@1", "retry:skipped:disabled@2"}) {
			t.Fatalf("tasks %v", got)
		}
		sleepTo(5 * time.Hour)
		if n := len(a.seen()); n != 1 {
			t.Fatalf("%d runs while disabled", n)
		}
	})
}
