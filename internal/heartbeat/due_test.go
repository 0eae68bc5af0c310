package heartbeat

import (
	"testing"

	"pgregory.net/rapid"
)

// TestDueHeap: after any pushes, key changes and removals, every entry sits at the index
// its agent records, no child is due before its parent, and the agents of the removed
// entries know they left.
func TestDueHeap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var h dueHeap
		var agents []*agent
		for range rapid.IntRange(1, 200).Draw(t, "ops") {
			switch op := rapid.IntRange(0, 2).Draw(t, "op"); {
			case op == 0 || len(h) == 0:
				a := &agent{dueIdx: -1}
				agents = append(agents, a)
				h.push(a, rapid.Int64Range(0, 50).Draw(t, "ns"))
			case op == 1:
				i := rapid.IntRange(0, len(h)-1).Draw(t, "fix")
				h[i].ns = rapid.Int64Range(0, 50).Draw(t, "ns")
				h.fix(i)
			default:
				h.remove(rapid.IntRange(0, len(h)-1).Draw(t, "remove"))
			}
			in := 0
			for i, e := range h {
				if e.a.dueIdx != i {
					t.Fatalf("entry %d: its agent says %d", i, e.a.dueIdx)
				}
				if i > 0 && e.ns < h[(i-1)/2].ns {
					t.Fatalf("entry %d (%d) before its parent (%d)", i, e.ns, h[(i-1)/2].ns)
				}
			}
			for _, a := range agents {
				if a.dueIdx >= 0 {
					in++
				}
			}
			if in != len(h) {
				t.Fatalf("%d agents think they are in a heap of %d", in, len(h))
			}
		}
	})
}
