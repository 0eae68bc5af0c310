package cron

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/store/postgres"
	"github.com/schedd/schedd/internal/store/postgres/pgtest"
)

// The fleet's tests run on a real PostgreSQL and the real clock: leases are short, waits
// generous, and nothing asserts a duration.

func fleetPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	return fleetPoolOn(t, pgtest.DSN(t))
}

func fleetPoolOn(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := postgres.FleetCronOn(pool).Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return pool
}

// fleetHost is one host of a fleet under test.
type fleetHost struct {
	f    *Fleet
	stop func() // ends Run (a clean stop) and waits for it
}

func startFleet(t *testing.T, pool *pgxpool.Pool, host string, lease time.Duration, jobs []Job) *fleetHost {
	t.Helper()
	opened := make(chan struct{})
	close(opened)
	f, err := NewFleet(FleetConfig{Config: configured(Config{Jobs: jobs, Host: host, Drain: time.Second}), DB: postgres.FleetCronOn(pool),
		Opened: opened, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	var once sync.Once
	h := &fleetHost{f: f, stop: func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%s: Run: %v", host, err)
			}
		})
	}}
	t.Cleanup(h.stop)
	return h
}

func (h *fleetHost) role() string { return h.f.Status().Fleet.Role }

// slotLog records the hosts that ran each run key of a job due every 100 ms.
type slotLog struct {
	origin time.Time
	mu     sync.Mutex
	ran    map[string][]string
}

func newSlotLog() *slotLog {
	return &slotLog{origin: time.Now().Truncate(time.Second), ran: map[string][]string{}}
}

// jobs is the job as host runs it.
func (l *slotLog) jobs(host string) []Job {
	return []Job{{Name: "tick", Schedule: every{period: 100 * time.Millisecond, origin: l.origin},
		Action: &fakeAction{answer: func(i RunInfo) error {
			l.mu.Lock()
			l.ran[i.RunKey] = append(l.ran[i.RunKey], host)
			l.mu.Unlock()
			return nil
		}}}}
}

func (l *slotLog) runs() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ran)
}

// check fails t for every slot that ran more than once and returns the runs per host.
func (l *slotLog) check(t *testing.T) map[string]int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	hosts := map[string]int{}
	for key, hs := range l.ran {
		if len(hs) != 1 {
			t.Errorf("slot %s ran %d times: %v", key, len(hs), hs)
		}
		hosts[hs[0]]++
	}
	return hosts
}

// Two hosts with the same job: one leads and runs every slot, the other stands by and
// refuses changes by naming the leader; when the leader stops, the other takes over and
// no slot runs twice (P24).
func TestFleetOneLeader(t *testing.T) {
	pool := fleetPool(t)
	log := newSlotLog()
	a := startFleet(t, pool, "a", 3*time.Second, log.jobs("a"))
	waitFor(t, "a leads", func() bool { return a.role() == RoleLeader })
	b := startFleet(t, pool, "b", 3*time.Second, log.jobs("b"))
	waitFor(t, "b stands by", func() bool { st := b.f.Status().Fleet; return st.Role == RoleStandby && st.Leader == "a" })
	if _, err := b.f.RunNow(context.Background(), "tick", false); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("run on the standby: %v", err)
	}
	if st := b.f.Status(); len(st.Jobs) != 1 || st.Jobs[0].Name != "tick" {
		t.Fatalf("standby status %+v", st)
	}
	time.Sleep(time.Second)
	a.stop()
	waitFor(t, "b leads", func() bool { return b.role() == RoleLeader })
	time.Sleep(time.Second)
	b.stop()

	if hosts := log.check(t); hosts["a"] == 0 || hosts["b"] == 0 {
		t.Fatalf("runs per host %v: want both", hosts)
	}
	list, err := postgres.FleetCronOn(pool).Tasks("", 0, 0).Tasks(context.Background(), TaskFilter{Job: "tick", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range list {
		if tk.Host != "a" && tk.Host != "b" {
			t.Fatalf("task %d has host %q", tk.ID, tk.Host)
		}
	}
}

// A leader that lost its lease without noticing (its host hung, the network split) cannot
// write any more: the host that took over finds its running task lost and retries it, and
// the deposed leader stops that task instead of running on beside the retry (P28).
func TestFleetTakeover(t *testing.T) {
	pool := fleetPool(t)
	hold := make(chan struct{})
	acts := map[string]*fakeAction{"a": {hold: hold}, "b": {hold: hold}}
	job := func(host string) []Job {
		return []Job{{Name: "long", Schedule: every{period: time.Hour, origin: time.Now().Add(time.Hour)},
			Retry: Retry{Max: 1, Schedule: []time.Duration{10 * time.Millisecond}}, Action: acts[host]}}
	}
	lease := 3 * time.Second
	a := startFleet(t, pool, "a", lease, job("a"))
	waitFor(t, "a leads", func() bool { return a.role() == RoleLeader })
	first, err := a.f.RunNow(context.Background(), "long", false)
	if err != nil || first.Host != "a" {
		t.Fatalf("run: %+v %v", first, err)
	}
	// Queued, if the new leader's loop had not begun when the run was asked for: it starts
	// the run once it does.
	waitFor(t, "a runs it", func() bool {
		tk, err := a.f.Task(context.Background(), first.ID)
		return err == nil && tk.State == api.TaskRunning
	})
	// The lease runs out under a's feet, as if a had hung past it.
	if _, err := pool.Exec(context.Background(), `UPDATE schedd_cron_leader SET expires_at = now() - interval '1 ms'`); err != nil {
		t.Fatal(err)
	}
	b := startFleet(t, pool, "b", lease, job("b"))
	waitFor(t, "b leads", func() bool { return b.role() == RoleLeader })
	waitFor(t, "a stands by", func() bool { return a.role() == RoleStandby })
	acts["a"].mu.Lock()
	aRuns, aEnds := len(acts["a"].runs), len(acts["a"].ends)
	acts["a"].mu.Unlock()
	if aRuns != 1 || aEnds != 1 {
		t.Fatalf("the deposed leader's run: %d started, %d ended; want its one run stopped", aRuns, aEnds)
	}
	close(hold)
	var retry api.Task
	waitFor(t, "the lost task retried on b", func() bool {
		l, err := b.f.Tasks(context.Background(), TaskFilter{Job: "long"})
		if err != nil || len(l.Tasks) < 2 {
			return false
		}
		retry = l.Tasks[0]
		return retry.State == api.TaskSucceeded
	})
	lost, err := b.f.Task(context.Background(), first.ID)
	if err != nil || lost.State != api.TaskLost || lost.Host != "a" {
		t.Fatalf("a's task after the takeover: %+v %v", lost, err)
	}
	if retry.Attempt != 2 || retry.Host != "b" || retry.RunKey != first.RunKey {
		t.Fatalf("retry %+v", retry)
	}
	if n := len(acts["b"].seen()); n != 1 {
		t.Fatalf("b ran %d times, want the one retry", n)
	}
}

// The leader is cut off from the database while another host still reaches it: the cut-off
// leader stops leading within half a lease, the other host takes over once the lease ran
// out, and no slot runs twice; once the database is back the first host stands by (P24).
func TestFleetLeaderCutOff(t *testing.T) {
	dsn := pgtest.DSN(t)
	proxy, via := pgtest.NewProxy(t, dsn, "")
	direct := fleetPoolOn(t, dsn)
	cut, err := pgxpool.New(context.Background(), via)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cut.Close)
	log := newSlotLog()
	lease := 2 * time.Second
	a := startFleet(t, cut, "a", lease, log.jobs("a"))
	waitFor(t, "a leads", func() bool { return a.role() == RoleLeader })
	b := startFleet(t, direct, "b", lease, log.jobs("b"))
	waitFor(t, "b stands by", func() bool { return b.role() == RoleStandby })
	time.Sleep(500 * time.Millisecond)
	proxy.Down()
	waitFor(t, "a stops leading", func() bool { return a.role() != RoleLeader })
	waitFor(t, "b leads", func() bool { return b.role() == RoleLeader })
	time.Sleep(500 * time.Millisecond)
	proxy.Up()
	waitFor(t, "a stands by behind b", func() bool {
		st := a.f.Status().Fleet
		return st.Role == RoleStandby && st.Leader == "b"
	})
	a.stop()
	b.stop()

	if hosts := log.check(t); hosts["a"] == 0 || hosts["b"] == 0 {
		t.Fatalf("runs per host %v: want both", hosts)
	}
}

// The database crashes and starts again while a host leads: its commits fail, it stops
// leading, and once the server is back it leads again by itself and the job runs on, no
// slot twice (P24).
func TestFleetServerRestart(t *testing.T) {
	pg := pgtest.NewCluster(t)
	pool := fleetPoolOn(t, pg.DSN()+" connect_timeout=2")
	log := newSlotLog()
	a := startFleet(t, pool, "a", 2*time.Second, log.jobs("a"))
	waitFor(t, "a leads", func() bool { return a.role() == RoleLeader })
	term := a.f.Status().Fleet.Term
	waitFor(t, "runs", func() bool { return log.runs() >= 3 })
	pg.Crash(t)
	waitFor(t, "a stops leading", func() bool { return a.role() != RoleLeader })
	time.Sleep(time.Second)
	pg.Start(t)
	waitFor(t, "a leads again", func() bool { st := a.f.Status().Fleet; return st.Role == RoleLeader && st.Term > term })
	before := log.runs()
	waitFor(t, "runs after the restart", func() bool { return log.runs() >= before+3 })
	a.stop()
	log.check(t)
}

// TestNewFleetNeedsALease: the lease comes from the store's config; a zero is a mistake of
// the caller, not a request for some default.
func TestNewFleetNeedsALease(t *testing.T) {
	_, err := NewFleet(FleetConfig{Config: configured(Config{Host: "h"})})
	if err == nil || !strings.Contains(err.Error(), "lease") {
		t.Fatalf("NewFleet without a lease: %v, want an error naming the lease", err)
	}
}
