package sqlite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/store"
)

// TestOnCommit: each group commit is reported once it is over, with its duration, and a
// failed one (a failed fsync) with the storage error that failed it.
func TestOnCommit(t *testing.T) {
	var fail atomic.Bool
	var mu sync.Mutex
	var errs []error
	var took []time.Duration
	s := openTest(t, "", Options{
		FaultHook: func(op string) error {
			if op == "commit" && fail.Load() {
				return fmt.Errorf("fsync: %w", syscall.EIO)
			}
			return nil
		},
		OnCommit: func(d time.Duration, err error) {
			mu.Lock()
			defer mu.Unlock()
			took, errs = append(took, d), append(errs, err)
		},
	})
	ctx := context.Background()
	if _, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "a", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	if _, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "b", Payload: []byte("x")}); err == nil {
		t.Fatal("enqueue with a failing commit succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 2 || errs[0] != nil || !errors.Is(errs[1], store.ErrStorage) || !errors.Is(errs[1], syscall.EIO) {
		t.Fatalf("commits reported %v, want nil then the storage error", errs)
	}
	if took[0] <= 0 {
		t.Errorf("commit took %v", took[0])
	}
}
