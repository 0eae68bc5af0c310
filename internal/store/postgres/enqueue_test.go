package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/postgres"
	"github.com/schedd/schedd/internal/store/postgres/pgtest"
)

// Concurrent enqueues on one host, grouped into shared statements, never pass MaxEntries:
// far from it they skip the count, near it they count, and each gets its own result.
func TestConcurrentEnqueuesKeepTheBound(t *testing.T) {
	ctx := context.Background()
	const max = 40
	s := open(t, pgtest.DSN(t), postgres.Options{MaxEntries: max})
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, full := 0, 0
	ids := map[int64]string{}
	for i := range 100 {
		wg.Go(func() {
			key := fmt.Sprint("k", i)
			e, c, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: key, Payload: []byte(key)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, store.ErrQueueFull):
				full++
			case err != nil:
				t.Error(err)
			case !c || e.Key != key:
				t.Errorf("%s: created %v, entry %+v", key, c, e)
			default:
				created++
				if other, dup := ids[e.ID]; dup {
					t.Errorf("%s and %s got the same id %d", key, other, e.ID)
				}
				ids[e.ID] = key
			}
		})
	}
	wg.Wait()
	if created != max || full != 100-max {
		t.Fatalf("%d created, %d refused as full; want %d and %d", created, full, max, 100-max)
	}
	for id, key := range ids {
		e, err := s.Get(ctx, id)
		if err != nil || e.Key != key || string(e.Payload) != key {
			t.Fatalf("entry %d = %+v, %v; want key %s", id, e, err, key)
		}
	}
	// Room again once entries leave.
	l, _ := s.List(ctx, store.Filter{Limit: 5})
	for _, e := range l {
		if err := s.Drop(ctx, e.ID); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		if _, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: fmt.Sprint("again", i)}); err != nil {
			t.Fatalf("enqueue %d after 5 drops: %v", i, err)
		}
	}
	if _, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "one-too-many"}); !errors.Is(err, store.ErrQueueFull) {
		t.Fatalf("the %dth live entry: %v", max+1, err)
	}
}

// Enqueues close together notify the other hosts once, and those that did not notify are
// told of by a notification that follows shortly: the last entry of a burst wakes the
// other hosts too.
func TestBurstOfEnqueuesWakesOtherHosts(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	a := open(t, dsn, postgres.Options{HostID: "host-a"})
	b := open(t, dsn, postgres.Options{HostID: "host-b"})
	pgtest.WaitListening(t, dsn, postgres.Channel, 2)
	for i := range 20 {
		if _, _, err := a.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: fmt.Sprint("k", i)}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// The first notification: b hears it before the rest of the burst.
			select {
			case <-b.Wake():
			case <-time.After(10 * time.Second):
				t.Fatal("host-b was not woken by the first enqueue")
			}
		}
	}
	select {
	case <-b.Wake():
	case <-time.After(10 * time.Second):
		t.Fatal("host-b was not woken after the rest of the burst")
	}
}
