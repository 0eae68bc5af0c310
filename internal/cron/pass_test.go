package cron

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/cron/schedule"
)

// A pass that finds jobs due at different instants (here after the wall clock jumped over
// them all) queues them by due instant, and jobs due at the same instant in config order.
func TestPassQueuesByDueThenConfigOrder(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		sched := every{period: time.Hour, origin: t0}
		offs := map[string]time.Duration{"c": 2 * time.Minute, "b": time.Minute, "e": time.Minute}
		var jobs []Job
		for _, n := range []string{"c", "a", "b", "d", "e"} {
			jobs = append(jobs, Job{Name: n, Schedule: sched, Jitter: 5 * time.Minute, Action: &fakeAction{}})
		}
		clk := &clock{}
		h := start(t, dir, Config{Jobs: jobs, offset: offsets(offs)}, clk)
		clk.jump(time.Hour + 5*time.Minute) // every job is due at the next pass
		sleepTo(time.Minute)
		if got, want := queuedJobs(t, h), []string{"a", "d", "b", "e", "c"}; !slices.Equal(got, want) {
			t.Errorf("queued %v, want %v", got, want)
		}
	})
}

// A burst, every scheduled job due at the same instant, is queued in config order too (the
// pass takes it from the config without a sort); a disabled job, not scheduled, is not in it.
func TestBurstQueuesInConfigOrder(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		sched := every{period: time.Hour, origin: t0}
		var jobs []Job
		for _, n := range []string{"c", "a", "off", "b", "e", "d"} {
			jobs = append(jobs, Job{Name: n, Schedule: sched, Disabled: n == "off", Action: &fakeAction{}})
		}
		h := start(t, dir, Config{Jobs: jobs}, nil)
		sleepTo(time.Hour + time.Minute)
		if got, want := queuedJobs(t, h), []string{"c", "a", "b", "e", "d"}; !slices.Equal(got, want) {
			t.Errorf("queued %v, want %v", got, want)
		}
	})
}

// Jobs with one expression in two zones keep their own slots even when a pass handles them
// at the same slot: on 2000-03-26 "0 1 * * *" is 01:00 UTC in both UTC and London (01:00
// London falls in the gap and is shifted to 02:00 BST), and the next day 01:00 UTC and
// 00:00 UTC.
func TestSameExpressionOtherZoneAtOneSlot(t *testing.T) {
	london, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Fatal(err)
	}
	bubble(t, func(t *testing.T, dir string) {
		parse := func(loc *time.Location) schedule.Schedule {
			c, err := schedule.Parse("0 1 * * *", loc)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		u, l, u2 := &fakeAction{}, &fakeAction{}, &fakeAction{}
		jobs := []Job{
			{Name: "utc", Schedule: parse(time.UTC), Action: u},
			{Name: "london", Schedule: parse(london), Action: l},
			{Name: "utc2", Schedule: parse(time.UTC), Action: u2},
		}
		clk := &clock{}
		from := time.Date(2000, 3, 25, 12, 0, 0, 0, time.UTC)
		clk.jump(from.Sub(t0))
		start(t, dir, Config{Jobs: jobs}, clk)
		sleepTo(2 * 24 * time.Hour)
		day := func(d, h int) time.Time { return time.Date(2000, 3, d, h, 0, 0, 0, time.UTC) }
		for _, c := range []struct {
			name string
			a    *fakeAction
			want []time.Time
		}{
			{"utc", u, []time.Time{day(26, 1), day(27, 1)}},
			{"london", l, []time.Time{day(26, 1), day(27, 0)}},
			{"utc2", u2, []time.Time{day(26, 1), day(27, 1)}},
		} {
			var got []time.Time
			for _, r := range c.a.seen() {
				got = append(got, r.info.Slot)
			}
			if !slices.EqualFunc(got, c.want, time.Time.Equal) {
				t.Errorf("%s ran for slots %v, want %v", c.name, got, c.want)
			}
		}
	})
}

// A sleep of more than a second ends 0.2 % early (Linux may end it 0.1 % late), the rest is
// slept before the loop looks at the clock; the exact instants of the timing tests show
// that the wake itself is not moved.
func TestFirstSleepEndsEarly(t *testing.T) {
	for _, c := range []struct{ d, want time.Duration }{
		{30 * time.Second, 30*time.Second - 60*time.Millisecond},
		{10 * time.Second, 10*time.Second - 20*time.Millisecond},
		{time.Second, time.Second},
		{5 * time.Millisecond, 5 * time.Millisecond},
		{0, 0},
	} {
		if got := firstSleep(c.d); got != c.want {
			t.Errorf("firstSleep(%v) = %v, want %v", c.d, got, c.want)
		}
	}
}

// burstPasses drives the passes of a service, not running, whose n jobs "* * * * *" are all
// due at each minute, on the real clock moved to just after the slot.
type burstPasses struct {
	tb     testing.TB
	svc    *Service
	n      int
	origin time.Time
	shift  atomic.Int64 // the service's wall clock: the real one, shifted
}

func newBurstPasses(tb testing.TB, n int) *burstPasses {
	sc, err := schedule.Parse("* * * * *", time.UTC)
	if err != nil {
		tb.Fatal(err)
	}
	jobs := make([]Job, n)
	for i := range jobs {
		jobs[i] = Job{Name: "job" + strconv.Itoa(i), Schedule: sc, Action: &fakeAction{}}
	}
	p := &burstPasses{tb: tb, n: n, origin: time.Date(2030, 1, 1, 0, 0, 30, 0, time.UTC)}
	p.shift.Store(int64(time.Until(p.origin)))
	p.svc, err = New(configured(Config{Jobs: jobs, OpenStore: sqliteAt(tb.TempDir()), QueueSize: n,
		Now: func() time.Time { return time.Now().Add(time.Duration(p.shift.Load())) }}))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.svc.closeStore)
	if err := p.svc.flush(); err != nil {
		tb.Fatal(err)
	}
	return p
}

// before moves the clock to 1 ms after slot i and reserves the pass's tasks, as the loop
// does before it sleeps (arm).
func (p *burstPasses) before(i int) {
	slot := p.origin.Add(time.Duration(i+1)*time.Minute - 30*time.Second)
	p.shift.Store(int64(time.Until(slot.Add(time.Millisecond))))
	p.svc.reserveTasks()
}

// after checks that the pass queued every job, then ends and commits its tasks, so that the
// next slot finds the jobs idle.
func (p *burstPasses) after() {
	if n := p.svc.q.Len(); n != p.n {
		p.tb.Fatalf("queued %d, want %d", n, p.n)
	}
	for t := p.svc.q.pop(); t != nil; t = p.svc.q.pop() {
		p.svc.end(t, api.TaskSucceeded, "", p.svc.wall())
	}
	if err := p.svc.flush(); err != nil {
		p.tb.Fatal(err)
	}
}

// A pass over a burst allocates next to nothing: its tasks were allocated before it, while
// the loop waited, so it neither pays for them nor starts a collection of the heap midway.
func TestBurstPassAllocatesNoTasks(t *testing.T) {
	const jobs = 2000
	p := newBurstPasses(t, jobs)
	for i := range 3 {
		p.before(i)
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		p.svc.tick()
		runtime.ReadMemStats(&m1)
		p.after()
		// The first pass grows each job's list of active tasks once.
		if n := m1.Mallocs - m0.Mallocs; i > 0 && n > jobs/20 {
			t.Errorf("pass %d: %d allocations for %d jobs", i, n, jobs)
		}
	}
}

// queuedJobs lists the jobs of h's tasks in the order they were queued.
func queuedJobs(t *testing.T, h *harness) []string {
	t.Helper()
	l, err := h.svc.Tasks(context.Background(), TaskFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(l.Tasks)
	var got []string
	for _, tk := range l.Tasks {
		got = append(got, tk.Job)
	}
	return got
}
