package cron

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestConfigTakenAsGiven: the service runs a job with the values it is given, zeros
// included (retry max 0: no retries; disable_after 0: never), and refuses what it cannot
// run with instead of filling in a default of its own.
func TestConfigTakenAsGiven(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		a.set(func(RunInfo) error { return errBoom }, nil) // transient
		job := Job{Name: "j", Schedule: every{period: time.Hour, origin: t0}, Missed: MissedRunOnce, Concurrency: Forbid,
			HistoryLimit: 2, Timeout: time.Minute, Action: a}
		h := startAsGiven(t, dir, Config{Workers: 1, QueueSize: 1, Jobs: []Job{job}}, nil)
		sleepTo(20*time.Hour + time.Minute)
		var want []time.Duration
		for i := 1; i <= 20; i++ {
			want = append(want, time.Duration(i)*time.Hour)
		}
		if got := at(a.seen()); !slices.Equal(got, want) {
			t.Fatalf("runs at %v, want one per slot: no retry, never disabled", got)
		}
		if j := h.job("j"); !j.Enabled || j.ConsecutiveFailures != 20 || j.RetryAt != nil {
			t.Fatalf("job %+v", j)
		}
		if n := len(h.tasks("j")); n != 2 {
			t.Fatalf("%d tasks kept, want history_limit 2", n)
		}
	})
	good := Job{Name: "j", Schedule: every{period: time.Hour}, Missed: MissedSkip, Concurrency: Allow,
		HistoryLimit: 1, Timeout: time.Second, Action: &fakeAction{}}
	for name, mod := range map[string]func(*Config){
		"workers":         func(c *Config) { c.Workers = 0 },
		"queue size":      func(c *Config) { c.QueueSize = 0 },
		"missed":          func(c *Config) { c.Jobs[0].Missed = "" },
		"concurrency":     func(c *Config) { c.Jobs[0].Concurrency = "" },
		"retry max":       func(c *Config) { c.Jobs[0].Retry.Max = -1 },
		"retry schedule":  func(c *Config) { c.Jobs[0].Retry.Max = 1 },
		"disable_after":   func(c *Config) { c.Jobs[0].DisableAfter = -1 },
		"history_limit 0": func(c *Config) { c.Jobs[0].HistoryLimit = 0 },
		"timeout is zero": func(c *Config) { c.Jobs[0].Timeout = 0 },
	} {
		cfg := Config{Workers: 1, QueueSize: 1, OpenStore: sqliteAt(t.TempDir()), Jobs: []Job{good}}
		if svc, err := New(cfg); err != nil {
			t.Fatalf("New(good) = %v", err)
		} else {
			svc.closeStore()
		}
		mod(&cfg)
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: New = %v, want an error naming it", name, err)
		}
	}
}
