package heartbeat

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestDueHeap: after any additions, time changes and removals, every agent in the heap
// sits at the index it records, an agent out of it records -1, and dueAt lists exactly the
// agents due, earliest first.
func TestDueHeap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := newDueHeap()
		t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
		var agents []*agent
		for range rapid.IntRange(1, 200).Draw(t, "ops") {
			switch op := rapid.IntRange(0, 2).Draw(t, "op"); {
			case op == 0 || len(agents) == 0:
				a := &agent{id: fmt.Sprint(len(agents)), dueIdx: -1}
				agents = append(agents, a)
				a.nextDue = t0.Add(time.Duration(rapid.IntRange(0, 50).Draw(t, "at")) * time.Second)
				h.set(a)
			case op == 1:
				a := agents[rapid.IntRange(0, len(agents)-1).Draw(t, "move")]
				a.nextDue = t0.Add(time.Duration(rapid.IntRange(0, 50).Draw(t, "at")) * time.Second)
				h.set(a)
			default:
				h.remove(agents[rapid.IntRange(0, len(agents)-1).Draw(t, "remove")])
			}
			in := 0
			for _, a := range agents {
				if a.dueIdx >= 0 {
					in++
					if h.list[a.dueIdx] != a {
						t.Fatalf("agent %s records index %d, another agent is there", a.id, a.dueIdx)
					}
				}
			}
			if in != h.Len() {
				t.Fatalf("%d agents think they are in a heap of %d", in, h.Len())
			}
			now := t0.Add(time.Duration(rapid.IntRange(0, 50).Draw(t, "now")) * time.Second)
			var want []*agent
			for _, a := range h.list {
				if !a.nextDue.After(now) {
					want = append(want, a)
				}
			}
			slices.SortFunc(want, func(x, y *agent) int {
				if c := x.nextDue.Compare(y.nextDue); c != 0 {
					return c
				}
				return strings.Compare(x.id, y.id)
			})
			if got := h.dueAt(now); !slices.Equal(got, want) {
				t.Fatalf("due at %v: %v, want %v", now, ids(got), ids(want))
			}
		}
	})
}

func ids(agents []*agent) []string {
	out := make([]string, len(agents))
	for i, a := range agents {
		out[i] = a.id
	}
	return out
}
