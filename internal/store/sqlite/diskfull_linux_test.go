package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/store"
)

// R-ENV-04 on a real file system that fills up (a small tmpfs; needs root, skipped
// otherwise): enqueue fails with ErrDiskFull and stores nothing; every entry already stored
// can still be claimed and delivered, from the space reserve; once space returns the
// reserve is rebuilt and enqueue works again.
func TestRealDiskFull(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=16m"); err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	ctx := context.Background()
	s := openTest(t, filepath.Join(dir, "q.db"), Options{probeEvery: time.Nanosecond})
	if fi, err := os.Stat(filepath.Join(dir, "q.db-reserve")); err != nil || fi.Size() != DefaultReserve {
		t.Fatalf("reserve file: %v, %v", fi, err)
	}
	var stored []store.Entry
	for i := range 50 {
		e, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: fmt.Sprint("k", i), Payload: make([]byte, 2000)})
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, e)
	}
	filler := filepath.Join(dir, "filler")
	if err := fill(filler, 1<<40, false); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the disk: %v", err)
	}
	_, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "new", Payload: make([]byte, 2000)})
	if !errors.Is(err, store.ErrDiskFull) || !s.Info().DiskFull {
		t.Fatalf("enqueue on a full disk: %v (disk_full %v)", err, s.Info().DiskFull)
	}
	ep, err := s.NewEpoch(ctx)
	if err != nil {
		t.Fatalf("epoch on a full disk: %v", err)
	}
	for _, e := range stored {
		if _, err := s.MarkSending(ctx, e.ID, ep, time.Minute); err != nil {
			t.Fatalf("claim on a full disk: %v", err)
		}
		if err := s.Complete(ctx, e.ID, ep); err != nil {
			t.Fatalf("complete on a full disk: %v", err)
		}
	}
	if _, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "new", Payload: []byte("x")}); !errors.Is(err, store.ErrDiskFull) {
		t.Fatalf("enqueue with the disk still full: %v", err)
	}
	if l, _ := s.List(ctx, store.Filter{State: store.StatePending}); len(l) != 0 {
		t.Fatalf("a refused enqueue stored something: %+v", l)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "new", Payload: []byte("x")}); err != nil {
		t.Fatalf("enqueue after space returned: %v", err)
	}
	if s.Info().DiskFull {
		t.Fatal("still disk_full")
	}
	if fi, err := os.Stat(filepath.Join(dir, "q.db-reserve")); err != nil || fi.Size() != DefaultReserve {
		t.Fatalf("reserve not rebuilt: %v, %v", fi, err)
	}
	if c, _ := s.Counts(ctx); c.Delivered != 50 || c.Pending != 1 {
		t.Fatalf("counts = %+v", c)
	}
}
