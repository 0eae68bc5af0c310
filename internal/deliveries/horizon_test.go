package deliveries

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/sqlite"
	"github.com/schedd/schedd/internal/store/storetest"
)

// nearCounter is a store that counts the entries its reads of what is near pass, and
// those reads.
type nearCounter struct {
	store.Store
	entries, nears, firsts atomic.Int64
}

func (c *nearCounter) Near(ctx context.Context, before time.Time, page int, f func([]store.Ref)) error {
	c.nears.Add(1)
	return c.Store.Near(ctx, before, page, func(refs []store.Ref) {
		c.entries.Add(int64(len(refs)))
		f(refs)
	})
}

func (c *nearCounter) FirstDue(ctx context.Context, from time.Time) (time.Time, bool, error) {
	c.firsts.Add(1)
	return c.Store.FirstDue(ctx, from)
}

// horizon is what the runtime holds: timer heap items, armed ids, and when its horizon
// moves next (zero: never).
func (r *scheduler) horizon() (timers, slots int, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.timers.Len(), len(r.slots), r.horizonAt
}

// wantIdle fails unless the runtime holds nothing for entries and its one timer is the
// move of its horizon, at at.
func wantIdle(t *testing.T, s *Service, at time.Time) {
	t.Helper()
	timers, slots, moves := s.rt.horizon()
	if timers != 0 || slots != 0 || !moves.Equal(at) {
		t.Fatalf("runtime holds %d timer items, %d armed ids, moves its horizon at %v; want none, none, %v",
			timers, slots, moves, at)
	}
}

// A backlog due in a day (a sink down for a day) is neither read nor armed until the
// horizon reaches it: the idle runtime holds one timer, for Horizon/2 before the first
// entry, and its store is read at the start (nothing near) and once more then, when it
// arms them all. They are sent from their due time.
func TestHorizonBacklogDueInADay(t *testing.T) {
	const n = 10_000
	synctest.Test(t, func(t *testing.T) {
		mem := storetest.NewMemory()
		t0 := time.Now()
		due := t0.Add(24 * time.Hour)
		for i := range n {
			mem.Put(store.Entry{ID: int64(i + 1), Sink: "hook", Key: fmt.Sprint("k", i), Payload: []byte("x"), State: store.StatePending,
				CreatedAt: t0, NextAttemptAt: due.Add(time.Duration(i%10) * time.Millisecond)})
		}
		ds := &nearCounter{Store: mem}
		sink := &fakeSink{}
		s := runHook(t, ds, sink)
		synctest.Wait()
		moves := due.Add(-Horizon / 2)
		wantIdle(t, s, moves)
		if sum, _ := s.LastRecovery(); sum.Scanned != n || sum.DeferredBackoff != n || sum.Total() != n {
			t.Fatalf("summary %+v, want %d scanned, all deferred", sum, n)
		}
		if e, nears, firsts := ds.entries.Load(), ds.nears.Load(), ds.firsts.Load(); e != 0 || nears != 2 || firsts != 1 || mem.Calls("live") != 0 {
			t.Fatalf("start read %d entries in %d reads of what is near, %d of the first due, %d of every live entry; "+
				"want none in two, one, none", e, nears, firsts, mem.Calls("live"))
		}
		time.Sleep(time.Until(moves) - time.Millisecond)
		synctest.Wait()
		wantIdle(t, s, moves)
		if e, nears := ds.entries.Load(), ds.nears.Load(); e != 0 || nears != 2 || len(sink.Sends()) != 0 {
			t.Fatalf("idle for a day: %d entries read in %d reads, %d sent", e, nears, len(sink.Sends()))
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if timers, slots, at := s.rt.horizon(); timers != n || slots != n || !at.IsZero() {
			t.Fatalf("after the move: %d timer items, %d armed, next move %v; want %d, %d, none", timers, slots, at, n, n)
		}
		time.Sleep(time.Until(due))
		synctest.Wait()
		if sends := sink.Sends(); len(sends) == 0 || !sends[0].at.Equal(due) {
			t.Fatalf("sends %v..., want the first at %v", sends[:min(len(sends), 1)], due)
		}
		if e, nears := ds.entries.Load(), ds.nears.Load(); e != n || nears != 3 {
			t.Fatalf("%d entries read in %d reads; want each once, in three reads", e, nears)
		}
	})
}

// An entry whose failure puts its next attempt past the horizon is not armed until the
// horizon reaches it, and is sent at that time; likewise after a new retry table
// (reconfigure) and across a restart of the service.
func TestHorizonFailBeyond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := storetest.NewMemory()
		var fails atomic.Int32
		fails.Store(2)
		sink := &fakeSink{script: func(Delivery) error {
			if fails.Add(-1) >= 0 {
				return TransientError(errors.New("HTTP 503"))
			}
			return nil
		}}
		cfg := parityConfig()
		cfg.Schedule = []time.Duration{2 * time.Hour}
		s := newService(t, cfg, mem, map[string]Sink{"hook": sink})
		stop := start(t, s)
		synctest.Wait()
		t0 := time.Now()
		e := enqueueReq(t, s, Request{Sink: "hook", Key: "k"})
		synctest.Wait()
		retry := t0.Add(2 * time.Hour)
		wantIdle(t, s, retry.Add(-Horizon/2))
		if g := mustGet(t, mem, e.ID); g.State != store.StatePending || !g.NextAttemptAt.Equal(retry) {
			t.Fatalf("after the failure: %+v", g)
		}

		// A new retry table: the next failure waits 3 h.
		cfg.Schedule = []time.Duration{3 * time.Hour}
		if _, err := s.Reconfigure(cfg, map[string]Sink{"hook": sink}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(retry))
		synctest.Wait()
		if sends := sink.Sends(); len(sends) != 2 || !sends[1].at.Equal(retry) {
			t.Fatalf("sends %+v, want the second at %v", sends, retry)
		}
		again := retry.Add(3 * time.Hour)
		wantIdle(t, s, again.Add(-Horizon/2))

		// A restart in between: the new runtime finds it in the store.
		stop()
		time.Sleep(time.Hour)
		s = newService(t, cfg, mem, map[string]Sink{"hook": sink})
		stop = start(t, s)
		defer stop()
		synctest.Wait()
		wantIdle(t, s, again.Add(-Horizon/2))
		time.Sleep(time.Until(again))
		synctest.Wait()
		if sends := sink.Sends(); len(sends) != 3 || !sends[2].at.Equal(again) {
			t.Fatalf("sends %+v, want the third at %v", sends, again)
		}
		if g := mustGet(t, mem, e.ID); g.State != store.StateDelivered {
			t.Fatalf("entry %+v, want delivered", g)
		}
	})
}

// An entry enqueued past the horizon of a runtime whose next move is later (or none) pulls
// the move before it; one enqueued within it is armed at once. An operator's retry is
// armed at once.
func TestHorizonPulledByWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := storetest.NewMemory()
		sink := &fakeSink{}
		s := runHook(t, mem, sink)
		synctest.Wait()
		wantIdle(t, s, time.Time{}) // an empty store: no timer at all
		t0 := time.Now()
		res, err := s.EnqueueBatch(t.Context(), []Request{{Sink: "hook", Key: "a"}})
		if err != nil || res[0].Err != nil {
			t.Fatal(err, res)
		}
		synctest.Wait()
		// Put behind the runtime's back as a lost commit reply would, then armed by the
		// retry of its key: due in an hour, past the horizon.
		later := putEntry(mem, store.Entry{Sink: "hook", State: store.StatePending, NextAttemptAt: t0.Add(time.Hour)})
		s.rt.armEntry(later)
		wantIdle(t, s, t0.Add(time.Hour-Horizon/2))
		soon := putEntry(mem, store.Entry{Sink: "hook", State: store.StatePending, NextAttemptAt: t0.Add(time.Minute)})
		s.rt.armEntry(soon)
		if timers, slots, _ := s.rt.horizon(); timers != 1 || slots != 1 {
			t.Fatalf("an entry within the horizon: %d timer items, %d armed; want 1, 1", timers, slots)
		}
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		var got []string
		for _, sd := range sink.Sends() {
			got = append(got, fmt.Sprint(sd.id, "@", sd.at.Sub(t0)))
		}
		if want := fmt.Sprint([]string{fmt.Sprint(res[0].Entry.ID, "@0s"), fmt.Sprint(soon.ID, "@1m0s"),
			fmt.Sprint(later.ID, "@1h0m0s")}); fmt.Sprint(got) != want {
			t.Fatalf("sends %v, want %v", got, want)
		}
		wantIdle(t, s, time.Time{})
	})
}

// A failed read at a move of the horizon is retried with backoff (1 s, then 2 s), and no
// entry is lost: those it was to arm are sent at their due time.
func TestHorizonMoveRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := storetest.NewMemory()
		t0 := time.Now()
		due := t0.Add(time.Hour)
		e := putEntry(mem, store.Entry{Sink: "hook", State: store.StatePending, NextAttemptAt: due})
		sink := &fakeSink{}
		s := runHook(t, mem, sink)
		synctest.Wait()
		moves := due.Add(-Horizon / 2)
		wantIdle(t, s, moves)
		var fails atomic.Int32
		fails.Store(2)
		mem.SetReadFault(func(op string) error {
			if op == "first" || op == "near" {
				if fails.Add(-1) >= 0 {
					return errBoom
				}
			}
			return nil
		})
		time.Sleep(time.Until(moves) + 2*time.Second)
		synctest.Wait()
		wantIdle(t, s, moves.Add(3*time.Second))
		time.Sleep(time.Second)
		synctest.Wait()
		if timers, slots, _ := s.rt.horizon(); timers != 1 || slots != 1 {
			t.Fatalf("after the retried move: %d timer items, %d armed; want 1, 1", timers, slots)
		}
		time.Sleep(time.Until(due))
		synctest.Wait()
		if sends := sink.Sends(); len(sends) != 1 || sends[0].id != e.ID || !sends[0].at.Equal(due) {
			t.Fatalf("sends %+v, want one at %v", sends, due)
		}
	})
}

// The same on the SQLite store: a backlog due in a day is found by its index on the due
// time, neither read nor armed before the horizon reaches it, and sent at its due time.
func TestHorizonSQLite(t *testing.T) {
	const n = 1000
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "schedd.db"), sqliteSettings)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() }) // after the service stops (cleanups run last first)
		t0 := time.Now()
		due := t0.Add(24 * time.Hour)
		ns := make([]store.NewEntry, n)
		for i := range ns {
			ns[i] = store.NewEntry{Sink: "hook", Key: fmt.Sprint("k", i), Payload: []byte("x"), NotBefore: due}
		}
		if _, err := st.EnqueueBatch(ctx, ns); err != nil {
			t.Fatal(err)
		}
		ds := &nearCounter{Store: st}
		sink := &fakeSink{}
		s := runHook(t, ds, sink)
		synctest.Wait()
		moves := due.Add(-Horizon / 2)
		wantIdle(t, s, moves)
		time.Sleep(time.Until(moves) - time.Millisecond)
		synctest.Wait()
		wantIdle(t, s, moves)
		if e, nears := ds.entries.Load(), ds.nears.Load(); e != 0 || nears != 2 {
			t.Fatalf("idle for a day: %d entries read in %d reads; want none in two", e, nears)
		}
		time.Sleep(time.Until(due) + time.Second)
		synctest.Wait()
		if sends := sink.Sends(); len(sends) != n || !sends[0].at.Equal(due) {
			t.Fatalf("%d sent; want %d from %v", len(sends), n, due)
		}
		if c, err := st.Counts(ctx); err != nil || c.Delivered != n {
			t.Fatalf("counts %+v, %v", c, err)
		}
	})
}
