package cron

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// sleeper is an answer that takes d of (virtual) time.
func sleeper(d time.Duration) func(RunInfo) error {
	return func(RunInfo) error { time.Sleep(d); return nil }
}

// P29, forbid: a slot due while the previous run still runs is recorded as skipped (overlap);
// two runs of the job never overlap.
func TestForbidSkipsOverlap_P29(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		a.set(sleeper(90*time.Second), nil)
		h := start(t, dir, Config{Jobs: []Job{{Name: "j", Schedule: every{period: time.Minute, origin: t0}, Action: a}}}, nil)
		sleepTo(4*time.Minute + 30*time.Second)
		if got := at(a.seen()); !slices.Equal(got, mins(1, 3)) {
			t.Fatalf("runs at %v", got)
		}
		want := []string{"scheduled:succeeded@1", "scheduled:skipped:overlap@1", "scheduled:succeeded@1", "scheduled:skipped:overlap@1"}
		if got := states(h.tasks("j")); !slices.Equal(got, want) {
			t.Fatalf("tasks %v", got)
		}
		if a.peak.Load() != 1 {
			t.Fatalf("peak %d", a.peak.Load())
		}
	})
}

// P29, replace: the running run is cancelled (reason replaced) and the new one starts only
// once it has ended.
func TestReplaceCancelsRunning_P29(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		a.set(nil, make(chan struct{})) // every run waits for its ctx
		h := start(t, dir, Config{Jobs: []Job{{Name: "j", Schedule: every{period: time.Minute, origin: t0},
			Concurrency: Replace, Action: a}}}, nil)
		sleepTo(3*time.Minute + time.Second)
		runs := a.seen()
		if got := at(runs); !slices.Equal(got, mins(1, 2, 3)) {
			t.Fatalf("runs at %v", got)
		}
		a.mu.Lock()
		ends := slices.Clone(a.ends)
		a.mu.Unlock()
		for i := 1; i < len(runs); i++ {
			if runs[i].at.Before(ends[i-1]) {
				t.Errorf("run %d started at %v before run %d ended at %v", i, runs[i].at, i-1, ends[i-1])
			}
		}
		want := []string{"scheduled:cancelled:replaced@1", "scheduled:cancelled:replaced@1", "scheduled:running@1"}
		if got := states(h.tasks("j")); !slices.Equal(got, want) {
			t.Fatalf("tasks %v", got)
		}
		if a.peak.Load() != 1 {
			t.Fatalf("peak %d", a.peak.Load())
		}
		if j := h.job("j"); j.ConsecutiveFailures != 0 {
			t.Fatalf("a replaced run counted as a failure: %+v", j)
		}
	})
}

// P29, allow: runs overlap.
func TestAllowOverlaps_P29(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		a.set(sleeper(150*time.Second), nil)
		start(t, dir, Config{Jobs: []Job{{Name: "j", Schedule: every{period: time.Minute, origin: t0},
			Concurrency: Allow, Action: a}}}, nil)
		sleepTo(3*time.Minute + time.Second)
		if a.peak.Load() != 3 {
			t.Fatalf("peak %d, want 3", a.peak.Load())
		}
	})
}

// A full queue is visible: the task is recorded as skipped (queue_full) and counted in the
// status, never dropped in silence.
func TestQueueFullIsRecorded(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		a.set(sleeper(time.Minute), nil)
		var jobs []Job
		for _, n := range []string{"a", "b", "c"} {
			jobs = append(jobs, Job{Name: n, Schedule: every{period: time.Hour, origin: t0}, Action: a})
		}
		h := start(t, dir, Config{Jobs: jobs, Workers: 1, QueueSize: 1}, nil)
		sleepTo(time.Hour + time.Second)
		st := h.svc.Status()
		if st.QueueFull != 1 || st.Running != 1 || st.Queued != 1 {
			t.Fatalf("status %+v", st)
		}
		if got := states(h.tasks("c")); !slices.Equal(got, []string{"scheduled:skipped:queue_full@1"}) {
			t.Fatalf("c: %v", got)
		}
		sleepTo(time.Hour + 3*time.Minute)
		if got := at(a.seen()); !slices.Equal(got, mins(60, 61)) {
			t.Fatalf("runs at %v", got)
		}
	})
}

// P30 in the service: with one worker, tasks due together run by priority (lower first),
// and in config order within a priority.
func TestPriorityOrder_P30(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		a.set(sleeper(time.Second), nil)
		prio := map[string]int{"low": 5, "high": -1, "mid1": 0, "mid2": 0, "top": -3}
		var jobs []Job
		for _, n := range []string{"low", "high", "mid1", "mid2", "top"} {
			jobs = append(jobs, Job{Name: n, Schedule: every{period: time.Hour, origin: t0}, Priority: prio[n], Action: a})
		}
		start(t, dir, Config{Jobs: jobs, Workers: 1}, nil)
		sleepTo(time.Hour + time.Minute)
		var order []string
		for _, r := range a.seen() {
			order = append(order, r.info.Job)
		}
		if want := []string{"top", "high", "mid1", "mid2", "low"}; !slices.Equal(order, want) {
			t.Fatalf("order %v, want %v", order, want)
		}
	})
}

// P31 in the service: under a high-priority load that keeps the one worker busy and a
// backlog queued, a low-priority task still starts, within its priority gap times the
// aging step plus the backlog ahead of it. Without aging it would wait for ever.
func TestNoStarvation_P31(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		a.set(sleeper(time.Second), nil)
		jobs := []Job{{Name: "load", Schedule: every{period: time.Second, origin: t0}, Concurrency: Allow, Action: a}}
		for _, n := range []string{"b1", "b2", "b3", "b4", "b5"} { // the initial backlog
			jobs = append(jobs, Job{Name: n, Schedule: instants{t0.Add(time.Second)}, Action: a})
		}
		jobs = append(jobs, Job{Name: "low", Schedule: instants{t0.Add(1500 * time.Millisecond)}, Priority: 3, Action: a})
		h := start(t, dir, Config{Jobs: jobs, Workers: 1, AgingStep: 10 * time.Second}, nil)
		sleepTo(3 * time.Minute)
		h.stop()
		var lowAt time.Duration = -1
		for _, r := range a.seen() {
			if r.info.Job == "low" {
				lowAt = r.at.Sub(t0)
			}
		}
		// Ahead of it: the tasks enqueued before 1.5 s + 3 x 10 s, about 36 of one second each.
		if bound := 1500*time.Millisecond + 30*time.Second + 7*time.Second; lowAt < 0 || lowAt > bound {
			t.Fatalf("low started at %v, want by %v", lowAt, bound)
		}
		if lowAt < 30*time.Second {
			t.Fatalf("low started at %v: it jumped its priority", lowAt)
		}
	})
}

// P32: however many jobs are due, never more than Workers tasks run at once (also checked
// with -race). Twenty random mixes of workers, periods and run lengths, each seeded.
func TestBoundedConcurrency_P32(t *testing.T) {
	for seed := range uint64(20) {
		rnd := rand.New(rand.NewPCG(seed, 32))
		workers, njobs := 1+rnd.IntN(4), 1+rnd.IntN(8)
		periods, lengths := make([]time.Duration, njobs), map[string]time.Duration{}
		for i := range njobs {
			periods[i] = time.Duration(1+rnd.IntN(5)) * time.Second
			lengths[jobName(i)] = time.Duration(rnd.IntN(8)) * time.Second
		}
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			bubble(t, func(t *testing.T, dir string) {
				a := &fakeAction{}
				a.set(func(r RunInfo) error { time.Sleep(lengths[r.Job]); return nil }, nil)
				var jobs []Job
				for i := range njobs {
					jobs = append(jobs, Job{Name: jobName(i), Schedule: every{period: periods[i], origin: t0},
						Concurrency: Allow, Action: a})
				}
				h := start(t, dir, Config{Jobs: jobs, Workers: workers}, nil)
				for range 20 {
					time.Sleep(time.Second)
					synctest.Wait()
					if st := h.svc.Status(); st.Running > workers {
						t.Fatalf("status: %d running, %d workers", st.Running, workers)
					}
				}
				h.stop()
				if p := int(a.peak.Load()); p > workers || p == 0 {
					t.Fatalf("peak %d, workers %d", p, workers)
				}
			})
		})
	}
}

func jobName(i int) string { return string(rune('a' + i)) }

// A manual run is a task of kind manual; with wait the reply is the ended task.
func TestRunNowWaits(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		a.set(sleeper(5*time.Second), nil)
		h := start(t, dir, Config{Jobs: []Job{{Name: "j", Schedule: every{period: time.Hour, origin: t0}, Action: a}}}, nil)
		got, err := h.svc.RunNow(context.Background(), "j", true)
		if err != nil {
			t.Fatal(err)
		}
		if got.Kind != api.KindManual || got.State != api.TaskSucceeded || got.Slot != nil || got.Output != "out" ||
			got.EndedAt == nil || got.EndedAt.Sub(t0) != 5*time.Second || got.DurationMS != 5000 {
			t.Fatalf("task %+v", got)
		}
		// Without wait: running at once (a worker is free); a second one overlaps (forbid) and
		// is skipped.
		q, err := h.svc.RunNow(context.Background(), "j", false)
		if err != nil || q.State != api.TaskRunning {
			t.Fatalf("%+v %v", q, err)
		}
		synctest.Wait()
		s, err := h.svc.RunNow(context.Background(), "j", false)
		if err != nil || s.State != api.TaskSkipped || s.Reason != api.ReasonOverlap {
			t.Fatalf("%+v %v", s, err)
		}
		if _, err := h.svc.RunNow(context.Background(), "nope", false); !errors.Is(err, ErrUnknownJob) {
			t.Fatalf("unknown job: %v", err)
		}
	})
}

// Cancel ends a queued task at once and a running one once its action has returned.
func TestCancel(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		a.set(nil, make(chan struct{}))
		h := start(t, dir, Config{Workers: 1, Jobs: []Job{
			{Name: "a", Schedule: every{period: time.Hour, origin: t0}, Action: a},
			{Name: "b", Schedule: every{period: time.Hour, origin: t0}, Action: a},
		}}, nil)
		sleepTo(time.Hour)
		ta, tb := h.tasks("a")[0], h.tasks("b")[0]
		if ta.State != api.TaskRunning || tb.State != api.TaskQueued {
			t.Fatalf("a %s b %s", ta.State, tb.State)
		}
		got, err := h.svc.Cancel(context.Background(), tb.ID)
		if err != nil || got.State != api.TaskCancelled || got.Reason != api.ReasonRequested {
			t.Fatalf("cancel queued: %+v %v", got, err)
		}
		got, err = h.svc.Cancel(context.Background(), ta.ID)
		if err != nil || got.State != api.TaskCancelled || got.Reason != api.ReasonRequested || got.Class != "" {
			t.Fatalf("cancel running: %+v %v", got, err)
		}
		if _, err := h.svc.Cancel(context.Background(), ta.ID); !errors.Is(err, ErrNotActive) {
			t.Fatalf("cancel again: %v", err)
		}
		if j := h.job("a"); j.ConsecutiveFailures != 0 || j.RetryAt != nil {
			t.Fatalf("a cancelled run is no failure: %+v", j)
		}
		if n := len(a.seen()); n != 1 {
			t.Fatalf("%d runs: b must not run", n)
		}
	})
}
