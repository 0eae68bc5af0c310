package heartbeat

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// TestServiceObserver: every outcome reaches the observer (gated skips as well as runs),
// and each pulse that ran reports how late it started.
func TestServiceObserver(t *testing.T) {
	off := false
	cfg := baseConfig(AgentConfig{ID: "quiet", Visibility: &Visibility{ShowOK: &off, ShowAlerts: &off, UseIndicator: &off}},
		AgentConfig{ID: "loud"})
	var mu sync.Mutex
	var outcomes []string
	var late []time.Duration
	obs := Observer{
		Pulse: func(agent string, st api.RunStatus) {
			mu.Lock()
			outcomes = append(outcomes, agent+":"+string(st))
			mu.Unlock()
		},
		Late: func(agent string, d time.Duration) {
			mu.Lock()
			late = append(late, d)
			mu.Unlock()
		},
	}
	serviceTest(t, cfg, harnessOpts{gateway: true, observe: obs}, func(t *testing.T, h *harness) {
		h.gw.notReady.Store(true)
		h.sleepTo(time.Minute)
		h.gw.notReady.Store(false)
		h.sleepTo(2 * time.Minute)
		h.wantPulses(1)
		mu.Lock()
		defer mu.Unlock()
		slices.Sort(outcomes)
		want := []string{"loud:ran", "loud:skipped", "quiet:skipped", "quiet:skipped"}
		if !slices.Equal(outcomes, want) {
			t.Errorf("outcomes %v, want %v", outcomes, want)
		}
		if len(late) != 1 || late[0] < 0 || late[0] > time.Second {
			t.Errorf("lateness %v, want one small value", late)
		}
	})
}
