package pgstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// A caller alone runs at once, by itself; callers that come while the runs allowed are
// going wait and then run together, each getting its own result; and an error of a run
// reaches every caller in it.
func TestGroupRunsWaitingCallersTogether(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var runs [][]int
	g := &group[int, int]{maxRunning: 1, maxItems: 100, ctx: context.Background(),
		run: func(_ context.Context, items []int) ([]int, error) {
			mu.Lock()
			runs = append(runs, slices.Clone(items))
			first := len(runs) == 1
			mu.Unlock()
			if first {
				<-release // the first run holds its place while the others queue
			}
			if slices.Contains(items, -1) {
				return nil, errors.New("boom")
			}
			out := make([]int, len(items))
			for i, v := range items {
				out[i] = v * 10
			}
			return out, nil
		}}
	got := make(chan [2]int, 10)
	go func() {
		r, _ := g.do(context.Background(), 1)
		got <- [2]int{1, r}
	}()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(runs) == 1 })
	for v := 2; v <= 5; v++ {
		go func() {
			r, _ := g.do(context.Background(), v)
			got <- [2]int{v, r}
		}()
	}
	waitFor(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.pending) == 4 })
	close(release)
	for range 5 {
		r := <-got
		if r[1] != r[0]*10 {
			t.Fatalf("caller %d got %d", r[0], r[1])
		}
	}
	mu.Lock()
	if len(runs) != 2 || len(runs[0]) != 1 || len(runs[1]) != 4 {
		t.Fatalf("runs = %v, want [1] then the four waiting callers together", runs)
	}
	mu.Unlock()
	if g.running != 0 {
		t.Fatalf("%d runs still counted", g.running)
	}

	// An error is every caller's of its run.
	release = make(chan struct{})
	mu.Lock()
	runs = nil
	mu.Unlock()
	errs := make(chan error, 3)
	go func() { _, err := g.do(context.Background(), 7); errs <- err }()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(runs) == 1 })
	for _, v := range []int{8, -1} {
		go func() { _, err := g.do(context.Background(), v); errs <- err }()
	}
	waitFor(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.pending) == 2 })
	close(release)
	n := 0
	for range 3 {
		if err := <-errs; err != nil {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d callers failed, want the 2 of the failed run", n)
	}
}

// A caller whose context ends while it waits takes its item back: it never runs.
func TestGroupCanceledWaiterDoesNotRun(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var ran []int
	g := &group[int, int]{maxRunning: 1, maxItems: 100, ctx: context.Background(),
		run: func(_ context.Context, items []int) ([]int, error) {
			mu.Lock()
			ran = append(ran, items...)
			first := len(ran) == 1
			mu.Unlock()
			if first {
				<-release
			}
			return make([]int, len(items)), nil
		}}
	done := make(chan struct{})
	go func() { g.do(context.Background(), 1); close(done) }()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(ran) == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := g.do(ctx, 2); errc <- err }()
	waitFor(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.pending) == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled waiter: %v", err)
	}
	close(release)
	<-done
	if _, err := g.do(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(ran, []int{1, 3}) {
		t.Fatalf("ran %v, want 1 and 3 (not the canceled 2)", ran)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
	}
}
