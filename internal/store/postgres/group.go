package postgres

import (
	"context"
	"sync"
	"sync/atomic"
)

// group runs the operations of concurrent callers together: a caller that finds fewer than
// maxRunning runs going runs its operation at once, with those pending (up to maxItems);
// otherwise it waits, and the first run to end hands the pending ones to one of their
// callers. So one caller alone runs at once, as without a group, and a burst of callers
// shares statements and commits: a round trip and a commit per run, not per operation.
type group[T, R any] struct {
	maxRunning, maxItems int
	// run performs items as one operation; it returns one result per item, or the error of
	// them all. Its context ends only once every caller's has: a caller that gives up does
	// not fail the others.
	run func(ctx context.Context, items []T) ([]R, error)

	mu      sync.Mutex
	running int
	pending []*call[T, R]
}

type call[T, R any] struct {
	ctx  context.Context
	item T
	res  R
	err  error
	// wake gets true when this caller is to run a group (its own item first), false
	// when its item ran (res and err are set).
	wake chan bool
}

// do runs item, alone or with others, and returns its result. A caller whose ctx ends while
// its item still waits takes it back and returns ctx's error; once its item runs it waits
// for the outcome, so that an error always means nothing was done for it.
func (g *group[T, R]) do(ctx context.Context, item T) (R, error) {
	c := &call[T, R]{ctx: ctx, item: item, wake: make(chan bool, 1)}
	g.mu.Lock()
	if g.running < g.maxRunning {
		g.running++
		g.mu.Unlock()
		g.lead(c)
		return c.res, c.err
	}
	g.pending = append(g.pending, c)
	g.mu.Unlock()
	var lead bool
	select {
	case lead = <-c.wake:
	case <-ctx.Done():
		g.mu.Lock()
		for i, p := range g.pending {
			if p == c {
				g.pending = append(g.pending[:i], g.pending[i+1:]...)
				g.mu.Unlock()
				var zero R
				return zero, ctx.Err()
			}
		}
		g.mu.Unlock()
		lead = <-c.wake
	}
	if lead {
		g.lead(c)
	}
	return c.res, c.err
}

// lead runs c's item with the pending ones (the caller counts in running), then hands the
// rest, if any, to the first of their callers, or gives its place up.
func (g *group[T, R]) lead(c *call[T, R]) {
	g.mu.Lock()
	n := min(len(g.pending), g.maxItems-1)
	batch := make([]*call[T, R], 0, n+1)
	batch = append(append(batch, c), g.pending[:n]...)
	g.pending = append(g.pending[:0], g.pending[n:]...)
	g.mu.Unlock()

	items := make([]T, len(batch))
	ctx, cancel := context.WithCancel(context.WithoutCancel(c.ctx))
	var left atomic.Int64
	left.Store(int64(len(batch)))
	stops := make([]func() bool, len(batch))
	for i, b := range batch {
		items[i] = b.item
		stops[i] = context.AfterFunc(b.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	res, err := g.run(ctx, items)
	for _, stop := range stops {
		stop()
	}
	cancel()
	for i, b := range batch {
		if err != nil {
			b.err = err
		} else {
			b.res = res[i]
		}
		if b != c {
			b.wake <- false
		}
	}

	g.mu.Lock()
	if len(g.pending) > 0 {
		next := g.pending[0]
		g.pending = g.pending[1:]
		g.mu.Unlock()
		next.wake <- true // it runs in this place
		return
	}
	g.running--
	g.mu.Unlock()
}
