// Package group is the group commit both store drivers share: the operations of
// concurrent callers run together, so a burst of callers pays one round trip and one
// commit per run instead of one per operation, while a caller alone runs at once, on its
// own goroutine, as without a group. There is no goroutine of its own: the caller that
// finds room runs, and the first run to end hands the waiting operations to one of their
// callers.
package group

import (
	"context"
	"sync"
	"sync/atomic"
)

// Group runs the operations of concurrent callers together: a caller that finds fewer than
// MaxRunning runs going runs its operation at once, with those pending (up to MaxItems);
// otherwise it waits, and the first run to end hands the pending ones to one of their
// callers. Its fields are set before the first Do and not changed after.
type Group[T, R any] struct {
	MaxRunning, MaxItems int
	// Run performs items as one operation; it returns one result per item, or the error of
	// them all. Its context ends only once every caller's has: a caller that gives up does
	// not fail the others.
	Run func(ctx context.Context, items []T) ([]R, error)

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

// Do runs item, alone or with others, and returns its result. A caller whose ctx ends while
// its item still waits takes it back and returns ctx's error; once its item runs it waits
// for the outcome, so that an error always means nothing was done for it.
func (g *Group[T, R]) Do(ctx context.Context, item T) (R, error) {
	c := &call[T, R]{ctx: ctx, item: item, wake: make(chan bool, 1)}
	g.mu.Lock()
	if g.running < g.MaxRunning {
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

// Waiting is how many callers wait for a run.
func (g *Group[T, R]) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending)
}

// lead runs c's item with the pending ones (the caller counts in running), then hands the
// rest, if any, to the first of their callers, or gives its place up.
func (g *Group[T, R]) lead(c *call[T, R]) {
	g.mu.Lock()
	n := min(len(g.pending), g.MaxItems-1)
	batch := make([]*call[T, R], 0, n+1)
	batch = append(append(batch, c), g.pending[:n]...)
	rest := copy(g.pending, g.pending[n:])
	clear(g.pending[rest:]) // no finished call stays reachable from the queue
	g.pending = g.pending[:rest]
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
	res, err := g.Run(ctx, items)
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
		rest := copy(g.pending, g.pending[1:])
		g.pending[rest] = nil
		g.pending = g.pending[:rest]
		g.mu.Unlock()
		next.wake <- true // it runs in this place
		return
	}
	g.running--
	g.mu.Unlock()
}
