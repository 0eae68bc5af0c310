package heartbeat

import (
	"fmt"
	"testing"
	"time"
)

// benchState is the state of n agents after a few runs each, as the service saves it.
func benchState(n int) State {
	now := time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC)
	st := State{Version: StateVersion, Seed: "seed", Agents: make(map[string]AgentState, n)}
	for i := range n {
		st.Agents[fmt.Sprintf("a%05d", i)] = AgentState{
			IntervalMS: 30000, PhaseMS: int64(i%300) * 100, NextDueAt: now.Add(30 * time.Second),
			Last:   &LastRun{Status: StatusRan, DurationMS: 1, At: now},
			Starts: []time.Time{now.Add(-30 * time.Second), now},
		}
	}
	return st
}

// BenchmarkFileStoreSave is one state write of 10,000 agents: encode, write, fsync, rename.
func BenchmarkFileStoreSave(b *testing.B) {
	st := benchState(10000)
	fs := NewFileStore(b.TempDir(), nil)
	for b.Loop() {
		if err := fs.Save(st); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPulseJSON is the encoding of one pulse (an http body, an exec stdin).
func BenchmarkPulseJSON(b *testing.B) {
	p := Pulse{AgentID: "a00042", Reason: ReasonInterval, ReasonKind: KindInterval, Visibility: DefaultVisibility,
		ScheduledAt: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), Attempt: 1}
	buf := make([]byte, 0, 512)
	for b.Loop() {
		buf = p.appendJSON(buf[:0])
	}
}
