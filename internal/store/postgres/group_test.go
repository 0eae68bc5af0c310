package postgres

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
	g := &group[int, int]{maxRunning: 1, maxItems: 100,
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
	g := &group[int, int]{maxRunning: 1, maxItems: 100,
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

// A run goes on while one of its callers still waits for it: the caller that leads it, or
// any other, giving up does not fail the others (nor itself: its item is in the run, so it
// gets the outcome). Once every caller gave up, the run's context ends.
func TestGroupRunOutlivesOneCaller(t *testing.T) {
	hold := make(chan struct{})
	runCtx := make(chan context.Context, 2)
	g := &group[string, string]{maxRunning: 1, maxItems: 100,
		run: func(ctx context.Context, items []string) ([]string, error) {
			runCtx <- ctx
			<-hold
			return items, ctx.Err()
		}}
	first := make(chan error, 1)
	go func() { _, err := g.do(context.Background(), "first"); first <- err }()
	<-runCtx
	actx, cancelA := context.WithCancel(context.Background())
	type res struct {
		v   string
		err error
	}
	a, b := make(chan res, 1), make(chan res, 1)
	go func() { v, err := g.do(actx, "a"); a <- res{v, err} }()
	waitFor(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.pending) == 1 })
	bctx, cancelB := context.WithCancel(context.Background())
	go func() { v, err := g.do(bctx, "b"); b <- res{v, err} }()
	waitFor(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.pending) == 2 })
	hold <- struct{}{} // the first run ends; "a" leads "a" and "b"
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	ctx := <-runCtx
	cancelA()
	time.Sleep(20 * time.Millisecond)
	if ctx.Err() != nil {
		t.Fatal("the run's context ended while b still waits for it")
	}
	cancelB()
	waitFor(t, func() bool { return ctx.Err() != nil })
	close(hold)
	if r := <-a; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("a = %+v, want the run's outcome: canceled, as every caller gave up", r)
	}
	if r := <-b; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("b = %+v", r)
	}
}
