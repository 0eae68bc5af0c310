package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storetest"
)

// A lazy store creates nothing until the first enqueue: reads answer as an empty store,
// operations on ids are ErrNotFound, and Info says it is not open.
func TestLazyOpensOnFirstEnqueue(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	l, err := OpenLazy(ctx, path, settings(Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if info := l.Info(); info.Opened || info.Driver != "sqlite" || info.Synchronous != SyncFull || info.Path != path {
		t.Fatalf("info before open = %+v", info)
	}
	if _, err := l.Get(ctx, 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get = %v", err)
	}
	if es, err := l.List(ctx, store.Filter{}); err != nil || len(es) != 0 {
		t.Fatalf("list = %v, %v", es, err)
	}
	if _, err := l.List(ctx, store.Filter{State: "bogus"}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("list of a bad state = %v", err)
	}
	if c, err := l.Counts(ctx); err != nil || c != (store.Counts{}) {
		t.Fatalf("counts = %+v, %v", c, err)
	}
	for name, err := range map[string]error{
		"drop":     l.Drop(ctx, 1),
		"complete": l.Complete(ctx, 1, 1),
		"fail":     l.Fail(ctx, 1, 1, store.Failure{Err: "x"}),
		"release":  l.Release(ctx, 1, 1, time.Now()),
		"dead":     l.Dead(ctx, 1, 1, "r", ""),
	} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s = %v, want ErrNotFound", name, err)
		}
	}
	if _, err := l.Retry(ctx, 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("retry = %v", err)
	}
	if n, err := l.Purge(ctx, store.PurgeFilter{State: store.StateDead, OlderThan: time.Now()}); n != 0 || err != nil {
		t.Errorf("purge = %d, %v", n, err)
	}
	// Refused before the file is created for it.
	if _, _, err := l.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "big", Payload: make([]byte, storetest.MaxPayload+1)}); !errors.Is(err, store.ErrPayloadTooLarge) {
		t.Fatalf("enqueue of a large payload = %v", err)
	}
	if _, _, err := l.Enqueue(ctx, store.NewEntry{Key: "no-sink"}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("enqueue without a sink = %v", err)
	}
	res, err := l.EnqueueBatch(ctx, []store.NewEntry{{Key: "no-sink"}, {Sink: "hook", Key: "big", Payload: make([]byte, storetest.MaxPayload+1)}})
	if err != nil || len(res) != 2 || !errors.Is(res[0].Err, store.ErrInvalid) || !errors.Is(res[1].Err, store.ErrPayloadTooLarge) {
		t.Fatalf("a batch of refused entries = %+v, %v", res, err)
	}
	select {
	case <-l.Opened():
		t.Fatal("opened by reads")
	default:
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file exists before the first enqueue: %v", err)
	}

	res, err = l.EnqueueBatch(ctx, []store.NewEntry{{Key: "no-sink"}, {Sink: "hook", Key: "k", Payload: []byte("p-k")}})
	if err != nil || res[0].Err == nil || !res[1].Created {
		t.Fatalf("a batch with one valid entry = %+v, %v", res, err)
	}
	e := res[1].Entry
	select {
	case <-l.Opened():
	default:
		t.Fatal("not opened by a batch")
	}
	if !l.Info().Opened || l.SQLite() == nil {
		t.Fatalf("info after open = %+v", l.Info())
	}
	if g, err := l.Get(ctx, e.ID); err != nil || g.Key != "k" {
		t.Fatalf("get after open = %+v, %v", g, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "late"}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("enqueue after close = %v", err)
	}
}

// An existing file is opened at once (its entries are recovered at startup), with Open's
// errors; a closed lazy store that never opened creates nothing.
func TestLazyOpensExistingFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "q.db")
	s := openTest(t, path, Options{})
	mustEnqueue(t, s, "k")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLazy(ctx, path, settings(Options{}))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Opened():
	default:
		t.Fatal("an existing store was not opened at once")
	}
	if c, err := l.Counts(ctx); err != nil || c.Pending != 1 {
		t.Fatalf("counts = %+v, %v", c, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	bad := filepath.Join(dir, "bad.db")
	if err := os.WriteFile(bad, []byte("not a database, not at all, not even close to one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLazy(ctx, bad, settings(Options{})); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("open of a damaged file = %v, want ErrCorrupt", err)
	}

	never := filepath.Join(dir, "never.db")
	l, err = OpenLazy(ctx, never, settings(Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(never); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a store never used was created: %v", err)
	}
}
