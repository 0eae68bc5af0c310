package queue

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The commit delay, in a bubble (the clock moves only while every goroutine waits): a lone
// caller never waits for company, and once commits have been shared, callers arriving
// 10 µs apart share one commit instead of leading one each.
func TestCommitDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := openTest(t, "", Options{CommitDelay: 200 * time.Microsecond})
		t0 := time.Now()
		for i := range 20 {
			mustEnqueue(t, s, fmt.Sprint("lone", i))
		}
		if d := time.Since(t0); d != 0 {
			t.Fatalf("a lone caller waited %v in 20 enqueues", d)
		}
		if st := s.Stats(); st.Delayed != 0 || st.Commits != 20 {
			t.Fatalf("lone caller: %+v", st)
		}

		const callers = 8
		// rounds runs the callers once per millisecond; caller i starts gap*i after the
		// round, and returns the stats of the rounds.
		rounds := func(n int, gap time.Duration) Stats {
			before := s.Stats()
			start := time.Now()
			var wg sync.WaitGroup
			for i := range callers {
				wg.Go(func() {
					for r := range n {
						time.Sleep(time.Until(start.Add(time.Duration(r)*time.Millisecond + time.Duration(i)*gap)))
						mustEnqueue(t, s, fmt.Sprintf("g%v-%d-%d-%d", gap, n, r, i))
					}
				})
			}
			wg.Wait()
			after := s.Stats()
			return Stats{Ops: after.Ops - before.Ops, Commits: after.Commits - before.Commits, Delayed: after.Delayed - before.Delayed}
		}
		// Callers arriving together share commits by themselves: the store learns that
		// there are several.
		if st := rounds(4, 0); st.Commits >= st.Ops {
			t.Fatalf("callers arriving together did not share commits: %+v", st)
		}
		if s.gather.peak < 2 {
			t.Fatalf("after commits shared by %d callers, the store expects %v", callers, s.gather.peak)
		}
		// Arriving 10 µs apart, each would commit alone: they wait for each other.
		const n = 10
		st := rounds(n, 10*time.Microsecond)
		if st.Ops != n*callers || st.Commits > 2*n || st.Delayed == 0 {
			t.Fatalf("callers 10 µs apart: %+v, want at most %d commits for %d", st, 2*n, n*callers)
		}
	})
}

// A negative CommitDelay turns the wait off: the same callers 10 µs apart commit one by one.
func TestCommitDelayOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := openTest(t, "", Options{CommitDelay: -1})
		s.gather.peak = 8 // as if commits of 8 had just been made
		before := s.Stats()
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 10 * time.Microsecond)
				mustEnqueue(t, s, fmt.Sprint("k", i))
			})
		}
		wg.Wait()
		if st := s.Stats(); st.Commits-before.Commits != 8 || st.Delayed != 0 {
			t.Fatalf("stats %+v, want 8 commits, none delayed", st)
		}
	})
}
