package deliveries

// The runtime keeps its items in three heaps (container/heap) that differ only in their
// order: the armed ones by due time, the due ones by dispatch order, the parked ones by
// expiry. itemHeap is the heap once; its order type says which.
type (
	timerHeap  = itemHeap[byDue]    // armed items, by due time
	readyHeap  = itemHeap[byReady]  // due items, in dispatch order (P30)
	expiryHeap = itemHeap[byExpiry] // parked items, by expiry
)

// itemOrder is a heap's order: less reports whether a comes out before b.
type itemOrder interface{ less(a, b item) bool }

// itemHeap is a container/heap of items in the order O.
type itemHeap[O itemOrder] []item

func (h itemHeap[O]) Len() int { return len(h) }
func (h itemHeap[O]) Less(i, j int) bool {
	var o O
	return o.less(h[i], h[j])
}
func (h itemHeap[O]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *itemHeap[O]) Push(x any)   { *h = append(*h, x.(item)) }
func (h *itemHeap[O]) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// byDue: due time, then the order they were armed in.
type byDue struct{}

func (byDue) less(a, b item) bool {
	if a.due != b.due {
		return a.due < b.due
	}
	return a.seq < b.seq
}

// byReady: priority, then due time, then id.
type byReady struct{}

func (byReady) less(a, b item) bool {
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	if a.due != b.due {
		return a.due < b.due
	}
	return a.id < b.id
}

// byExpiry: expiry, then the order they were armed in.
type byExpiry struct{}

func (byExpiry) less(a, b item) bool {
	if a.expires != b.expires {
		return a.expires < b.expires
	}
	return a.seq < b.seq
}
