package cron

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// TestObserver: each task that starts reports how late it began (its stagger offset is part
// of when it was due, not lateness), and each that ends reports its job and state.
func TestObserver(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		var mu sync.Mutex
		var ended []string
		var late []time.Duration
		obs := Observer{
			Ended: func(job string, st api.TaskState) { mu.Lock(); ended = append(ended, job+":"+string(st)); mu.Unlock() },
			Late:  func(job string, d time.Duration) { mu.Lock(); late = append(late, d); mu.Unlock() },
		}
		ok, bad := &fakeAction{}, &fakeAction{answer: func(RunInfo) error { return errors.New("boom") }}
		sched := every{period: time.Hour, origin: t0}
		start(t, dir, Config{
			Jobs: []Job{
				{Name: "ok", Schedule: sched, Jitter: time.Minute, Action: ok},
				{Name: "bad", Schedule: sched, Action: bad},
			},
			Observe: obs,
			offset:  offsets(map[string]time.Duration{"ok": 30 * time.Second}),
		}, nil)
		sleepTo(time.Hour + time.Minute)
		mu.Lock()
		defer mu.Unlock()
		slices.Sort(ended)
		ended = slices.Compact(ended) // bad's retries fail too
		if want := []string{"bad:failed", "ok:succeeded"}; !slices.Equal(ended, want) {
			t.Errorf("ended %v, want %v", ended, want)
		}
		if len(late) < 2 || slices.Max(late) != 0 {
			t.Errorf("lateness %v, want on-time starts only", late)
		}
	})
}
