package sqlite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/schedd/schedd/internal/store"
)

func batchOf(n int, prefix string) []store.NewEntry {
	ns := make([]store.NewEntry, n)
	for i := range ns {
		ns[i] = store.NewEntry{Sink: "hook", Key: fmt.Sprint(prefix, i), Payload: []byte("payload")}
	}
	return ns
}

// A batch is one operation of the group commit: its entries are stored in one commit
// (one transaction, one sync), and a concurrent single enqueue may share that commit.
func TestBatchIsOneCommit(t *testing.T) {
	var sizes []int
	var mu sync.Mutex
	s := openTest(t, "", Options{beforeCommit: func(n int) {
		mu.Lock()
		defer mu.Unlock()
		sizes = append(sizes, n)
	}})
	before := s.Stats()
	res, err := s.EnqueueBatch(context.Background(), batchOf(500, "k"))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.Created || r.Err != nil {
			t.Fatalf("[%d] = %+v", i, r)
		}
	}
	st := s.Stats()
	if st.Commits-before.Commits != 1 || st.Ops-before.Ops != 1 {
		t.Fatalf("stats %+v -> %+v, want one operation in one commit", before, st)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sizes) != 1 || sizes[0] != 1 {
		t.Fatalf("commits of batch sizes %v, want one commit of one operation", sizes)
	}
	if c, _ := s.Counts(context.Background()); c.Pending != 500 || s.live != 500 {
		t.Fatalf("counts = %+v, live %d", c, s.live)
	}
}

// A failed commit fails the whole batch: nothing of it is stored, no entry is reported
// created, and the live count is unchanged (P9).
func TestBatchFailedCommitStoresNothing(t *testing.T) {
	var fail atomic.Bool
	s := openTest(t, "", Options{FaultHook: func(op string) error {
		if op == "commit" && fail.Load() {
			return fmt.Errorf("fsync: %w", syscall.EIO)
		}
		return nil
	}})
	mustEnqueue(t, s, "before")
	fail.Store(true)
	res, err := s.EnqueueBatch(context.Background(), batchOf(10, "k"))
	if !errors.Is(err, store.ErrStorage) || !errors.Is(err, syscall.EIO) || res != nil {
		t.Fatalf("batch on a failing commit = %+v, %v; want no results and ErrStorage wrapping EIO", res, err)
	}
	if c, _ := s.Counts(context.Background()); c.Pending != 1 || s.live != 1 {
		t.Fatalf("after the failed batch: %+v, live %d", c, s.live)
	}
	fail.Store(false)
	if res, err := s.EnqueueBatch(context.Background(), batchOf(10, "k")); err != nil || !res[9].Created {
		t.Fatalf("the same batch afterwards = %+v, %v", res, err)
	}
}

// A disk that fills during a batch refuses the whole batch (ErrDiskFull, nothing stored),
// as a single enqueue is refused; batches are stored again once space returns.
func TestBatchDiskFull(t *testing.T) {
	var full atomic.Bool
	s := openTest(t, "", Options{FaultHook: func(op string) error {
		if op == "enqueue_batch" && full.Load() {
			return syscall.ENOSPC
		}
		return nil
	}})
	full.Store(true)
	if _, err := s.EnqueueBatch(context.Background(), batchOf(3, "k")); !errors.Is(err, store.ErrDiskFull) {
		t.Fatalf("batch on a full disk: %v, want ErrDiskFull", err)
	}
	if !s.Info().DiskFull {
		t.Fatal("the store does not say the disk is full")
	}
	if c, _ := s.Counts(context.Background()); c.Pending != 0 {
		t.Fatalf("stored on a full disk: %+v", c)
	}
	full.Store(false)
	if res, err := s.EnqueueBatch(context.Background(), batchOf(3, "k")); err != nil || !res[2].Created {
		t.Fatalf("batch once space returned = %+v, %v", res, err)
	}
}
