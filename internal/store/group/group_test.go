package group

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
)

// A caller alone runs at once, by itself; callers that come while the runs allowed are
// going wait and then run together, each getting its own result; and an error of a run
// reaches every caller in it.
func TestGroupRunsWaitingCallersTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var mu sync.Mutex
		var runs [][]int
		g := &Group[int, int]{MaxRunning: 1, MaxItems: 100,
			Run: func(_ context.Context, items []int) ([]int, error) {
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
			r, _ := g.Do(context.Background(), 1)
			got <- [2]int{1, r}
		}()
		synctest.Wait()
		for v := 2; v <= 5; v++ {
			go func() {
				r, _ := g.Do(context.Background(), v)
				got <- [2]int{v, r}
			}()
		}
		synctest.Wait()
		if n := g.Waiting(); n != 4 {
			t.Fatalf("%d callers wait, want 4", n)
		}
		close(release)
		for range 5 {
			r := <-got
			if r[1] != r[0]*10 {
				t.Fatalf("caller %d got %d", r[0], r[1])
			}
		}
		synctest.Wait()
		if len(runs) != 2 || len(runs[0]) != 1 || len(runs[1]) != 4 {
			t.Fatalf("runs = %v, want [1] then the four waiting callers together", runs)
		}
		if g.running != 0 {
			t.Fatalf("%d runs still counted", g.running)
		}

		// An error is every caller's of its run.
		release = make(chan struct{})
		runs = nil
		errs := make(chan error, 3)
		go func() { _, err := g.Do(context.Background(), 7); errs <- err }()
		synctest.Wait()
		for _, v := range []int{8, -1} {
			go func() { _, err := g.Do(context.Background(), v); errs <- err }()
		}
		synctest.Wait()
		if n := g.Waiting(); n != 2 {
			t.Fatalf("%d callers wait, want 2", n)
		}
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
	})
}

// No run carries more than MaxItems; the callers left over run next, together.
func TestGroupBoundsARun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var sizes []int
		g := &Group[int, int]{MaxRunning: 1, MaxItems: 3,
			Run: func(_ context.Context, items []int) ([]int, error) {
				sizes = append(sizes, len(items))
				if len(sizes) == 1 {
					<-release
				}
				return make([]int, len(items)), nil
			}}
		var wg sync.WaitGroup
		wg.Go(func() { g.Do(context.Background(), 0) })
		synctest.Wait()
		for v := 1; v <= 5; v++ {
			wg.Go(func() { g.Do(context.Background(), v) })
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		if !slices.Equal(sizes, []int{1, 3, 2}) {
			t.Fatalf("runs of %v, want 1, then 3 (the bound), then the 2 left", sizes)
		}
	})
}

// A caller whose context ends while it waits takes its item back: it never runs.
func TestGroupCanceledWaiterDoesNotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var ran []int
		g := &Group[int, int]{MaxRunning: 1, MaxItems: 100,
			Run: func(_ context.Context, items []int) ([]int, error) {
				ran = append(ran, items...)
				if len(ran) == 1 {
					<-release
				}
				return make([]int, len(items)), nil
			}}
		done := make(chan struct{})
		go func() { g.Do(context.Background(), 1); close(done) }()
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { _, err := g.Do(ctx, 2); errc <- err }()
		synctest.Wait()
		if n := g.Waiting(); n != 1 {
			t.Fatalf("%d callers wait, want 1", n)
		}
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("canceled waiter: %v", err)
		}
		close(release)
		<-done
		if _, err := g.Do(context.Background(), 3); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ran, []int{1, 3}) {
			t.Fatalf("ran %v, want 1 and 3 (not the canceled 2)", ran)
		}
	})
}

// A run goes on while one of its callers still waits for it: the caller that leads it, or
// any other, giving up does not fail the others (nor itself: its item is in the run, so it
// gets the outcome). Once every caller gave up, the run's context ends.
func TestGroupRunOutlivesOneCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hold := make(chan struct{})
		runCtx := make(chan context.Context, 2)
		g := &Group[string, string]{MaxRunning: 1, MaxItems: 100,
			Run: func(ctx context.Context, items []string) ([]string, error) {
				runCtx <- ctx
				<-hold
				return items, ctx.Err()
			}}
		first := make(chan error, 1)
		go func() { _, err := g.Do(context.Background(), "first"); first <- err }()
		<-runCtx
		actx, cancelA := context.WithCancel(context.Background())
		type res struct {
			v   string
			err error
		}
		a, b := make(chan res, 1), make(chan res, 1)
		go func() { v, err := g.Do(actx, "a"); a <- res{v, err} }()
		synctest.Wait()
		bctx, cancelB := context.WithCancel(context.Background())
		go func() { v, err := g.Do(bctx, "b"); b <- res{v, err} }()
		synctest.Wait()
		if n := g.Waiting(); n != 2 {
			t.Fatalf("%d callers wait, want 2", n)
		}
		hold <- struct{}{} // the first run ends; "a" leads "a" and "b"
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		ctx := <-runCtx
		cancelA()
		synctest.Wait()
		if ctx.Err() != nil {
			t.Fatal("the run's context ended while b still waits for it")
		}
		cancelB()
		synctest.Wait()
		if ctx.Err() == nil {
			t.Fatal("the run's context goes on after every caller gave up")
		}
		close(hold)
		if r := <-a; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("a = %+v, want the run's outcome: canceled, as every caller gave up", r)
		}
		if r := <-b; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("b = %+v", r)
		}
	})
}
