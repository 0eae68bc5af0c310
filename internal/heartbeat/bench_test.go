package heartbeat

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// benchState is the state of n agents after a few runs each, as the service saves it.
func benchState(n int) State {
	now := time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC)
	st := State{Version: StateVersion, Seed: "seed", Agents: make(map[string]AgentState, n)}
	for i := range n {
		st.Agents[fmt.Sprintf("a%05d", i)] = AgentState{
			IntervalMS: 30000, PhaseMS: int64(i%300) * 100, NextDueAt: now.Add(30 * time.Second),
			Last:   &api.HeartbeatRun{Status: api.RunRan, DurationMS: 1, At: now},
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

// benchService is a service with n agents every 30 s, not running, its state in memory.
func benchService(b *testing.B, n int) *Service {
	cfg := Config{Seed: "seed", Defaults: AgentConfig{Every: "30s", Target: execTarget()}}
	for i := range n {
		cfg.Agents = append(cfg.Agents, AgentConfig{ID: fmt.Sprintf("a%05d", i)})
	}
	svc, err := New(cfg, Deps{Environ: []string{}, Run: runner(func(context.Context, []string, []string, []byte) (int, []byte, error) { return 0, nil, nil })})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	for _, a := range svc.order {
		a.last = &api.HeartbeatRun{Status: api.RunRan, DurationMS: 1, At: now}
		a.starts = []time.Time{now.Add(-30 * time.Second), now}
	}
	return svc
}

// BenchmarkSnapshot is what a state write holds the service's lock for, at 10,000 agents.
func BenchmarkSnapshot(b *testing.B) {
	svc := benchService(b, 10000)
	for b.Loop() {
		svc.mu.Lock()
		_ = svc.snapshotLocked()
		svc.mu.Unlock()
	}
}

// BenchmarkServiceFlush is one timed state write of a service with 10,000 agents: the copy
// under the lock, the map, the encoding, write, fsync and rename.
func BenchmarkServiceFlush(b *testing.B) {
	svc := benchService(b, 10000)
	svc.store = NewFileStore(b.TempDir(), nil)
	for b.Loop() {
		svc.mu.Lock()
		svc.dirty = true
		svc.mu.Unlock()
		if err := svc.flush(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHTTPPulse is one pulse to a target on loopback that answers 204 at once, over
// the service's client: what a pulse costs on HTTP (the target's work, in the same process
// here, is included).
func BenchmarkHTTPPulse(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	client := newHTTPClient()
	defer client.CloseIdleConnections()
	target := newHTTPPulser(&HTTPTarget{URL: srv.URL, Method: testMethod, Timeout: testTimeout}, client)
	p := samplePulse()
	b.ReportAllocs()
	for b.Loop() {
		if res := target.pulse(b.Context(), p); res.outcome != outcomeRan {
			b.Fatal(res)
		}
	}
}
