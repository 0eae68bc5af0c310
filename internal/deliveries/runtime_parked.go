package deliveries

import (
	"container/heap"
	"time"
)

// Entries whose sink is not ready (the gateway down, or not up yet) are parked by sink:
// they wait without a worker, a store read or a timer each. The readiness of a sink with
// parked entries is asked once every RearmFloor, whatever their number, and whenever an
// entry of that sink comes due or is enqueued; the first answer that says ready sends them
// all. Meanwhile only those whose TTL ends are taken out (to be dead-lettered), from a heap
// ordered by expiry: the cost of waiting is the readiness calls and the expiries, not a
// pass over the entries.

// parkedSink holds the parked items of one sink.
type parkedSink struct {
	items    []item     // in the order they were parked
	expiring expiryHeap // those of items that expire, soonest first
	gone     int        // items taken out since (expired), still in items
}

// current reports whether it is still the arm of its id (not superseded, not of a stopped
// runtime); the caller holds mu.
func (r *scheduler) current(it item) bool {
	sl, ok := r.slots[it.id]
	return it.gen == r.gen && ok && sl.seq == it.seq
}

// place dispatches a due item, or parks it when its sink is not ready and it has not
// expired; the caller holds mu.
func (r *scheduler) place(it item, notReady bool, now time.Time) {
	if !r.current(it) {
		return // armed anew meanwhile, or of a stopped runtime
	}
	if notReady && (it.expires == 0 || now.UnixMilli() < it.expires) {
		r.park(it, now)
		return
	}
	r.dispatch(it)
}

// dispatch queues a current item for a worker; the caller holds mu.
func (r *scheduler) dispatch(it item) {
	delete(r.slots, it.id)
	r.busy[it.id] = it.gen
	heap.Push(&r.ready, it)
}

// park adds it to its sink's parked items; the caller holds mu.
func (r *scheduler) park(it item, now time.Time) {
	p := r.parked[it.sink]
	if p == nil {
		p = &parkedSink{}
		r.parked[it.sink] = p
	}
	p.items = append(p.items, it)
	if it.expires != 0 {
		heap.Push(&p.expiring, it)
	}
	if r.parkAt.IsZero() {
		r.parkAt = now.Add(RearmFloor)
		r.poke() // the loop's timer may be set for later
	}
}

// unpark dispatches the parked items of a sink found ready; the caller holds mu.
func (r *scheduler) unpark(sink uint32) {
	p := r.parked[sink]
	if p == nil {
		return
	}
	delete(r.parked, sink)
	for _, it := range p.items {
		if r.current(it) {
			r.dispatch(it)
		}
	}
}

// expireParked dispatches the parked items of a sink that is still not ready whose TTL has
// ended (their attempt dead-letters them); the caller holds mu.
func (r *scheduler) expireParked(sink uint32, nowMs int64) {
	p := r.parked[sink]
	if p == nil {
		return
	}
	for p.expiring.Len() > 0 && p.expiring[0].expires <= nowMs {
		it := heap.Pop(&p.expiring).(item)
		if r.current(it) {
			r.dispatch(it)
		}
		p.gone++
	}
	if p.gone > len(p.items)/2 {
		// Drop what was taken out, once it is most of the list: linear in what expired.
		kept := p.items[:0]
		for _, it := range p.items {
			if r.current(it) {
				kept = append(kept, it)
			}
		}
		clear(p.items[len(kept):])
		p.items, p.gone = kept, 0
		if len(kept) == 0 {
			delete(r.parked, sink)
		}
	}
}

// poke wakes the runtime loop; the caller holds mu.
func (r *scheduler) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}
