package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/postgres"
	"github.com/schedd/schedd/internal/store/postgres/pgtest"
)

// An enqueue is durable when it returns even on a server whose synchronous_commit is off
// (its commits acknowledged before their WAL is written): the store commits its own
// transactions synchronously, so a crash of the server right after loses none of them.
func TestAcknowledgedSurvivesServerCrash(t *testing.T) {
	ctx := context.Background()
	// The WAL writer flushes asynchronous commits every 10 s: without the store's own
	// setting, the enqueues below would be in memory only at the crash.
	pg := pgtest.NewCluster(t, "synchronous_commit=off", "wal_writer_delay=10s")
	s := open(t, pg.DSN(), postgres.Options{HostID: "host-a"})
	const n = 20
	for i := range n {
		if _, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: fmt.Sprint("k", i), Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	pg.Crash(t)
	pg.Start(t)
	var l []store.Entry
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if l, err = s.List(ctx, store.Filter{}); err == nil {
			break
		} else if !errors.Is(err, store.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("list after the restart: %v", err)
		}
	}
	if len(l) != n {
		t.Fatalf("%d of %d acknowledged enqueues survived the server's crash", len(l), n)
	}
}

// A store outlives a restart of its server, by itself, whether the server stops cleanly
// (-m fast) or crashes (-m immediate): while it is down an enqueue fails with
// ErrUnavailable, stores nothing, and the store says it is not connected; once it is back
// enqueues work again, the store says it is connected, and the listener listens again,
// so that an enqueue on one host wakes the other.
func TestServerRestart(t *testing.T) {
	ctx := context.Background()
	pg := pgtest.NewCluster(t)
	dsn := pg.DSN() + " connect_timeout=5"
	a := open(t, dsn, postgres.Options{HostID: "host-a", HostLease: time.Second})
	b := open(t, dsn, postgres.Options{HostID: "host-b", HostLease: time.Second})
	pgtest.WaitListening(t, dsn, postgres.Channel, 2)
	stored := 0
	for i, crash := range []bool{false, true} {
		if crash {
			pg.Crash(t)
		} else {
			pg.Stop(t)
		}
		_, _, err := a.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: fmt.Sprint("down-", i)})
		// A crash closes the server's end of the pooled connections without a word: a
		// statement written on one fails after it was sent, which the client cannot tell
		// from a lost reply, so the outcome is unknown. A clean stop says it ran nothing.
		if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrOutcomeUnknown) && !crash {
			t.Fatalf("enqueue while the server is down (crash %v) = %v, want ErrUnavailable", crash, err)
		}
		if c := a.Info().Connected; c == nil || *c {
			t.Fatalf("connected = %v while the server is down", c)
		}
		pg.Start(t)
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			_, _, err := a.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: fmt.Sprint("up-", i)})
			if err == nil {
				stored++
				break
			}
			if !errors.Is(err, store.ErrUnavailable) || time.Now().After(deadline) {
				t.Fatalf("enqueue after the restart (crash %v): %v", crash, err)
			}
		}
		if c := a.Info().Connected; c == nil || !*c {
			t.Fatalf("connected = %v once the server is back", c)
		}
		pgtest.WaitListening(t, dsn, postgres.Channel, 2)
		select { // a wake-up of before the restart
		case <-b.Wake():
		default:
		}
		if _, _, err := a.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: fmt.Sprint("wake-", i)}); err != nil {
			t.Fatal(err)
		}
		stored++
		select {
		case <-b.Wake():
		case <-time.After(10 * time.Second):
			t.Fatalf("host-b not woken by host-a's enqueue after the restart (crash %v)", crash)
		}
	}
	if l, err := a.List(ctx, store.Filter{}); err != nil || len(l) != stored {
		t.Fatalf("stored = %d entries, %v; want %d (nothing of the refused enqueues)", len(l), err, stored)
	}
}
