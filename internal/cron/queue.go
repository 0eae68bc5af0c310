package cron

import (
	"container/heap"
	"time"
)

// queue is the bounded job queue: due tasks wait here for a worker, best rank first.
//
// A task's rank is its enqueue time plus its priority times the aging step: a task of
// priority p waits as if it had been enqueued p steps later. So among tasks enqueued
// together lower priorities run first (P30), equal priorities run in enqueue order (FIFO,
// the sequence breaks ties), and a waiting task gains one level per step: one of priority
// p+k enqueued more than k steps before one of priority p runs first, so a low priority
// still runs under a steady high-priority load (P31). Ranks never change once given, so
// this aging costs nothing but the heap's O(log n).
type queue struct {
	list []*task
	seq  uint64
	step time.Duration
	base time.Time // the monotonic origin of ranks
}

func newQueue(step time.Duration, base time.Time) *queue { return &queue{step: step, base: base} }

// rank is the rank of a task of priority prio enqueued at the monotonic instant now. The
// priority is bounded by maxPriority and the step by maxAgingStep, so it cannot overflow.
func (q *queue) rank(now time.Time, prio int) int64 {
	return int64(now.Sub(q.base)) + int64(prio)*int64(q.step)
}

// push queues t with priority prio at the monotonic instant now; a task pushed again (held
// back) keeps its rank.
func (q *queue) push(t *task, prio int, now time.Time) {
	if t.seq == 0 {
		q.seq++
		t.seq = q.seq
		t.rank = q.rank(now, prio)
	}
	heap.Push(q, t)
}

// pop takes the best task; nil when the queue is empty.
func (q *queue) pop() *task {
	if len(q.list) == 0 {
		return nil
	}
	return heap.Pop(q).(*task)
}

// remove takes t out of the queue if it is in it.
func (q *queue) remove(t *task) {
	if t.qidx >= 0 && t.qidx < len(q.list) && q.list[t.qidx] == t {
		heap.Remove(q, t.qidx)
	}
}

func (q *queue) Len() int { return len(q.list) }

func (q *queue) Less(i, j int) bool {
	a, b := q.list[i], q.list[j]
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.seq < b.seq
}

func (q *queue) Swap(i, j int) {
	q.list[i], q.list[j] = q.list[j], q.list[i]
	q.list[i].qidx, q.list[j].qidx = i, j
}

func (q *queue) Push(x any) {
	t := x.(*task)
	t.qidx = len(q.list)
	q.list = append(q.list, t)
}

func (q *queue) Pop() any {
	n := len(q.list) - 1
	t := q.list[n]
	q.list[n] = nil
	q.list = q.list[:n]
	t.qidx = -1
	return t
}
