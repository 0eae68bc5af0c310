package cron

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/cron/schedule"
)

// Each run starts at its slot plus the job's stagger offset, to the nanosecond, and the
// status shows that instant as the next run and the offset.
func TestDueInstantsWithStagger(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a, b := &fakeAction{}, &fakeAction{}
		sched := every{period: time.Hour, origin: t0}
		h := start(t, dir, Config{
			Jobs: []Job{
				{Name: "a", Schedule: sched, Jitter: 5 * time.Minute, Action: a},
				{Name: "b", Schedule: sched, Jitter: 5 * time.Minute, Action: b},
			},
			offset: offsets(map[string]time.Duration{"a": 90 * time.Second, "b": 4*time.Minute + time.Millisecond}),
		}, nil)
		if j := h.job("a"); j.NextRunAt == nil || !j.NextRunAt.Equal(t0.Add(time.Hour+90*time.Second)) || j.OffsetMS != 90_000 {
			t.Fatalf("status of a: next %v offset %d", j.NextRunAt, j.OffsetMS)
		}
		sleepTo(3*time.Hour + 5*time.Minute)
		wantA := []time.Duration{time.Hour + 90*time.Second, 2*time.Hour + 90*time.Second, 3*time.Hour + 90*time.Second}
		if got := at(a.seen()); !slices.Equal(got, wantA) {
			t.Errorf("a ran at %v, want %v", got, wantA)
		}
		off := 4*time.Minute + time.Millisecond
		wantB := []time.Duration{time.Hour + off, 2*time.Hour + off, 3*time.Hour + off}
		if got := at(b.seen()); !slices.Equal(got, wantB) {
			t.Errorf("b ran at %v, want %v", got, wantB)
		}
		for i, r := range a.seen() {
			if want := t0.Add(time.Duration(i+1) * time.Hour); !r.info.Slot.Equal(want) || r.info.Kind != api.KindScheduled {
				t.Errorf("run %d: slot %v kind %s, want %v scheduled", i, r.info.Slot, r.info.Kind, want)
			}
		}
		ts := h.tasks("a")
		if got := states(ts); !slices.Equal(got, []string{"scheduled:succeeded@1", "scheduled:succeeded@1", "scheduled:succeeded@1"}) {
			t.Errorf("tasks %v", got)
		}
		if ts[0].RunKey != "a@2000-01-01T01:00:00Z" || !ts[0].DueAt.Equal(t0.Add(wantA[0])) {
			t.Errorf("task %+v", ts[0])
		}
	})
}

// The offset comes from schedule.Offset(name, jitter): stable for a name, in [0, jitter).
func TestStaggerIsScheduleOffset(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		const jitter = 5 * time.Minute
		var jobs []Job
		for i := range 5 {
			jobs = append(jobs, Job{Name: fmt.Sprintf("j%d", i), Schedule: every{period: time.Hour, origin: t0},
				Jitter: jitter, Action: &fakeAction{}})
		}
		h := start(t, dir, Config{Jobs: jobs}, nil)
		for _, j := range h.svc.Status().Jobs {
			want := schedule.Offset(j.Name, jitter)
			if j.OffsetMS != want.Milliseconds() || want < 0 || want >= jitter {
				t.Errorf("%s: offset %d ms, want %v in [0, %v)", j.Name, j.OffsetMS, want, jitter)
			}
			if !j.NextRunAt.Equal(t0.Add(time.Hour + want)) {
				t.Errorf("%s: next run %v", j.Name, j.NextRunAt)
			}
		}
	})
}

// P27: a failed run is retried after the k-th failure in a row's wait of the table; a
// success resets the count, so the next failure waits the first entry again.
func TestRetryTable_P27(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		var fails atomic.Int32
		fails.Store(3)
		a.set(func(RunInfo) error {
			if fails.Add(-1) >= 0 {
				return errBoom
			}
			return nil
		}, nil)
		h := start(t, dir, Config{Jobs: []Job{{Name: "j", Schedule: every{period: 24 * time.Hour, origin: t0},
			Retry: Retry{Max: 5}, Action: a}}}, nil)
		day := 24 * time.Hour
		sleepTo(day + time.Hour)
		// The slot at 24h fails; retries after 30s, 1m (the 2nd failure), 5m (the 3rd) succeed at the 3rd.
		want := []time.Duration{day, day + 30*time.Second, day + 90*time.Second, day + 90*time.Second + 5*time.Minute}
		if got := at(a.seen()); !slices.Equal(got, want) {
			t.Fatalf("runs at %v, want %v", got, want)
		}
		if got := states(h.tasks("j")); !slices.Equal(got, []string{"scheduled:failed@1", "retry:failed@2", "retry:failed@3", "retry:succeeded@4"}) {
			t.Fatalf("tasks %v", got)
		}
		if j := h.job("j"); j.ConsecutiveFailures != 0 || j.RetryAt != nil {
			t.Fatalf("after the success: %+v", j)
		}
		for i, r := range a.seen() {
			if r.info.RunKey != "j@2000-01-02T00:00:00Z" || r.info.Attempt != i+1 || !r.info.Slot.Equal(t0.Add(day)) {
				t.Errorf("run %d: %+v", i, r.info)
			}
		}
		// Reset: the next slot's failure waits 30 s again.
		fails.Store(1)
		sleepTo(2*day + time.Hour)
		want = append(want, 2*day, 2*day+30*time.Second)
		if got := at(a.seen()); !slices.Equal(got, want) {
			t.Fatalf("runs at %v, want %v", got, want)
		}
		if h.job("j").ConsecutiveFailures != 0 {
			t.Fatal("count not reset")
		}
	})
}

// A permanent failure is not retried, but counts as a failure.
func TestPermanentFailureNotRetried(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		a.set(func(RunInfo) error { return PermanentError(errBoom) }, nil)
		h := start(t, dir, Config{Jobs: []Job{{Name: "j", Schedule: every{period: time.Hour, origin: t0}, Action: a}}}, nil)
		sleepTo(90 * time.Minute)
		if n := len(a.seen()); n != 1 {
			t.Fatalf("%d runs", n)
		}
		ts := h.tasks("j")
		if len(ts) != 1 || ts[0].State != api.TaskFailed || ts[0].Class != api.ClassPermanent || ts[0].Error != "boom" {
			t.Fatalf("tasks %+v", ts)
		}
		if j := h.job("j"); j.ConsecutiveFailures != 1 || j.RetryAt != nil {
			t.Fatalf("job %+v", j)
		}
	})
}

// P27's disable: after DisableAfter failures in a row the job is disabled, logged once at
// error level, shown in the status with a reason; SetEnabled(true) turns it back on with a
// fresh count.
func TestDisableAfterFailures(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		a.set(func(RunInfo) error { return errBoom }, nil)
		cfg := configured(Config{Jobs: []Job{{Name: "j", Schedule: every{period: time.Hour, origin: t0},
			DisableAfter: 3, Action: a}}})
		cfg.Jobs[0].Retry.Max = 0 // no retries
		h := startAsGiven(t, dir, cfg, nil)
		sleepTo(10 * time.Hour)
		if got := at(a.seen()); !slices.Equal(got, []time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour}) {
			t.Fatalf("runs at %v", got)
		}
		j := h.job("j")
		if j.Enabled || j.NextRunAt != nil || j.ConsecutiveFailures != 3 || j.DisabledReason != "3 failures in a row; the last: boom" {
			t.Fatalf("job %+v", j)
		}
		if n := h.logs.FilterMessageSnippet("disabled after repeated failures").Len(); n != 1 {
			t.Fatalf("%d disable logs", n)
		}
		for _, e := range h.logs.FilterMessageSnippet("disabled after repeated failures").All() {
			if e.Level.String() != "error" {
				t.Errorf("logged at %s", e.Level)
			}
		}
		a.set(nil, nil)
		changed, err := h.svc.SetEnabled(context.Background(), "j", true)
		if err != nil || !changed {
			t.Fatalf("SetEnabled: %v %v", changed, err)
		}
		if j := h.job("j"); !j.Enabled || j.ConsecutiveFailures != 0 || j.DisabledReason != "" || !j.NextRunAt.Equal(t0.Add(11*time.Hour)) {
			t.Fatalf("after enable: %+v", j)
		}
		sleepTo(11*time.Hour + time.Minute)
		if n := len(a.seen()); n != 4 {
			t.Fatalf("%d runs: the slots while disabled must not be caught up", n)
		}
	})
}
