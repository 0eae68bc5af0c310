package cron

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/schedd/schedd/internal/store"
)

type queued struct {
	t    *task
	prio int
	at   time.Duration // enqueued, after the queue's base
}

// P30: among the tasks in the queue, each pop takes the one with the lowest (priority, seq)
// unless aging promoted another: a task of priority p+k popped before one of priority p was
// enqueued at least k aging steps before it. Within a priority the order is FIFO.
func TestQueueOrder_P30(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		step := time.Duration(rapid.IntRange(1, 100).Draw(rt, "step")) * time.Millisecond
		base := time.Unix(0, 0)
		q := newQueue(step, base)
		in := map[*task]queued{}
		now := time.Duration(0)
		ops := rapid.SliceOfN(rapid.IntRange(-4, 4), 1, 200).Draw(rt, "ops")
		for i, op := range ops {
			now += time.Duration(rapid.IntRange(0, 300).Draw(rt, "gap")) * time.Millisecond
			if op == 4 && q.Len() > 0 { // a pop
				got := q.pop()
				g := in[got]
				delete(in, got)
				for _, o := range in {
					before := g.prio < o.prio || g.prio == o.prio && g.t.seq < o.t.seq
					if !before && time.Duration(g.prio-o.prio)*step > o.at-g.at {
						rt.Fatalf("op %d: popped prio %d seq %d (at %v) before prio %d seq %d (at %v) without aging",
							i, g.prio, g.t.seq, g.at, o.prio, o.t.seq, o.at)
					}
					if g.prio == o.prio && g.t.seq > o.t.seq {
						rt.Fatalf("op %d: FIFO broken within priority %d", i, g.prio)
					}
				}
				continue
			}
			tk := &task{qidx: -1}
			q.push(tk, op, base.Add(now))
			in[tk] = queued{t: tk, prio: op, at: now}
		}
	})
}

// With every task enqueued at once, the pop order is exactly (priority, seq).
func TestQueueOrderSameInstant_P30(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		q := newQueue(time.Second, time.Unix(0, 0))
		prios := rapid.SliceOfN(rapid.IntRange(-maxPriority, maxPriority), 1, 100).Draw(rt, "prios")
		for _, p := range prios {
			q.push(&task{qidx: -1, Task: store.Task{Attempt: p}}, p, time.Unix(0, 0)) // attempt carries the priority here
		}
		var last *task
		for q.Len() > 0 {
			tk := q.pop()
			if last != nil && (tk.Attempt < last.Attempt || tk.Attempt == last.Attempt && tk.seq < last.seq) {
				rt.Fatalf("popped (%d, %d) after (%d, %d)", tk.Attempt, tk.seq, last.Attempt, last.seq)
			}
			last = tk
		}
	})
}

// P31: one worker takes a task every `service`; high-priority tasks keep coming at that rate
// over a backlog, so the queue is never empty. A low-priority task, k levels lower, still
// starts within k aging steps plus the backlog ahead of it.
func TestQueueNoStarvation_P31(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		step := time.Duration(rapid.IntRange(1, 20).Draw(rt, "step")) * time.Second
		service := time.Duration(rapid.IntRange(1, 5).Draw(rt, "service")) * time.Second
		backlog := rapid.IntRange(1, 20).Draw(rt, "backlog")
		k := rapid.IntRange(1, 10).Draw(rt, "k")
		base := time.Unix(0, 0)
		q := newQueue(step, base)
		for range backlog {
			q.push(&task{qidx: -1}, 0, base)
		}
		low := &task{qidx: -1}
		q.push(low, k, base)
		bound := time.Duration(k)*step + time.Duration(backlog+1)*service
		for now := time.Duration(0); now <= 2*bound; now += service {
			q.push(&task{qidx: -1}, 0, base.Add(now)) // the load
			if q.pop() == low {
				if now > bound {
					rt.Fatalf("low started after %v, bound %v", now, bound)
				}
				return
			}
		}
		rt.Fatalf("low never started (bound %v)", bound)
	})
}

func TestQueueRemove(t *testing.T) {
	q := newQueue(time.Second, time.Unix(0, 0))
	ts := []*task{{qidx: -1}, {qidx: -1}, {qidx: -1}}
	for _, tk := range ts {
		q.push(tk, 0, time.Unix(0, 0))
	}
	q.remove(ts[1])
	q.remove(ts[1]) // twice: no effect
	if a, b := q.pop(), q.pop(); a != ts[0] || b != ts[2] || q.pop() != nil {
		t.Fatal("remove took the wrong task")
	}
}
