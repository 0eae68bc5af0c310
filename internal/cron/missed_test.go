package cron

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
)

const day = 24 * time.Hour

// downtime runs a service with job until t0+upTo, stops it, lets down pass with no service,
// and starts a new one on the same state dir (a restart after downtime).
func downtime(t *testing.T, dir string, job Job, upTo, down time.Duration) *harness {
	t.Helper()
	h1 := start(t, dir, Config{Jobs: []Job{job}}, nil)
	sleepTo(upTo)
	if err := h1.stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(down)
	h2 := start(t, dir, Config{Jobs: []Job{job}}, nil)
	synctest.Wait()
	return h2
}

// P25, run_once: after ten days down, the hourly job runs once for all the missed slots, at
// once, for the newest missed slot; then on schedule again.
func TestMissedRunOnce_P25(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		job := Job{Name: "j", Schedule: every{period: time.Hour, origin: t0}, Action: a}
		h := downtime(t, dir, job, 90*time.Minute, 10*day)
		back := 90*time.Minute + 10*day
		sleepTo(back + time.Hour)
		want := []time.Duration{time.Hour, back, 10*day + 2*time.Hour}
		if got := at(a.seen()); !slices.Equal(got, want) {
			t.Fatalf("runs at %v, want %v", got, want)
		}
		ts := h.tasks("j")
		if got := states(ts); !slices.Equal(got, []string{"scheduled:succeeded@1", "catch_up:succeeded@1", "scheduled:succeeded@1"}) {
			t.Fatalf("tasks %v", got)
		}
		if !ts[1].Slot.Equal(t0.Add(10*day + time.Hour)) {
			t.Errorf("catch-up slot %v, want the newest missed one", ts[1].Slot)
		}
	})
}

// P25, skip: after downtime nothing runs for the missed slots; they are recorded as one
// skipped task that counts them (up to 100: the count stops there), and an on-time newest
// slot still runs.
func TestMissedSkip_P25(t *testing.T) {
	for _, tt := range []struct {
		name     string
		down     time.Duration // from 1h30m
		runs     []time.Duration
		recorded string
	}{
		{"ten days", 10 * day, []time.Duration{time.Hour, 10*day + 2*time.Hour},
			"at least 100 missed runs, the first for slot 2000-01-01T02:00:00Z"},
		// Down until 4h: 2h and 3h are missed, 4h is on time.
		{"two slots", 150 * time.Minute, []time.Duration{time.Hour, 4 * time.Hour, 5 * time.Hour},
			"2 missed runs, the first for slot 2000-01-01T02:00:00Z"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T, dir string) {
				a := &fakeAction{}
				job := Job{Name: "j", Schedule: every{period: time.Hour, origin: t0}, Missed: MissedSkip, Action: a}
				h := downtime(t, dir, job, 90*time.Minute, tt.down)
				sleepTo(tt.runs[len(tt.runs)-1] + time.Minute)
				if got := at(a.seen()); !slices.Equal(got, tt.runs) {
					t.Fatalf("runs at %v, want %v", got, tt.runs)
				}
				ts := h.tasks("j")
				if got := states(ts[:3]); !slices.Equal(got, []string{"scheduled:succeeded@1", "catch_up:skipped:missed@1", "scheduled:succeeded@1"}) {
					t.Fatalf("tasks %v", got)
				}
				if ts[1].Error != tt.recorded {
					t.Errorf("skipped task error %q, want %q", ts[1].Error, tt.recorded)
				}
			})
		})
	}
}

// starting_deadline: a catch-up older than the deadline is skipped; one within it runs.
func TestStartingDeadlineSkipsOldCatchUp_P25(t *testing.T) {
	for _, tt := range []struct {
		name  string
		down  time.Duration // from 1h30m
		state string
	}{
		{"older", 10*day + 25*time.Minute, "catch_up:skipped:deadline@1"}, // newest slot 55 min late
		{"within", 10*day + 35*time.Minute, "catch_up:succeeded@1"},       // newest slot 5 min late: still missed (downtime), but in time
	} {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T, dir string) {
				a := &fakeAction{}
				job := Job{Name: "j", Schedule: every{period: time.Hour, origin: t0}, StartingDeadline: 10 * time.Minute, Action: a}
				h := downtime(t, dir, job, 90*time.Minute, tt.down)
				ts := h.tasks("j")
				if len(ts) != 2 || states(ts)[1] != tt.state {
					t.Fatalf("tasks %v, want the second %s", states(ts), tt.state)
				}
			})
		})
	}
}

// A schedule of one run a second, after ten days down: the newest slot is found without
// walking 864,000 slots, and one catch-up runs.
func TestMissedManySlotsFindsNewest_P25(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		job := Job{Name: "j", Schedule: every{period: time.Second, origin: t0}, Action: a}
		h1 := start(t, dir, Config{Jobs: []Job{job}}, nil)
		a.set(nil, nil)
		sleepTo(1500 * time.Millisecond)
		h1.stop()
		time.Sleep(10 * day)
		h := start(t, dir, Config{Jobs: []Job{job}}, nil)
		runs := a.seen()
		if len(runs) != 2 || runs[1].info.Kind != api.KindCatchUp || !runs[1].info.Slot.Equal(t0.Add(10*day+time.Second)) {
			t.Fatalf("runs %+v", runs)
		}
		_ = h
	})
}

// A wall clock that jumps forward (suspend, NTP step) is noticed within one sleep (30 s):
// the slots it jumped over give one catch-up run, no slot runs twice, and the schedule goes
// on from the new wall time.
func TestClockJumpForward(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		clk := &clock{}
		h := start(t, dir, Config{Jobs: []Job{{Name: "j", Schedule: every{period: time.Hour, origin: t0}, Action: a}}}, clk)
		sleepTo(30 * time.Minute)
		clk.jump(3 * time.Hour) // wall 3h30m: slots 1h, 2h and 3h were jumped over
		sleepTo(31 * time.Minute)
		runs := a.seen()
		if len(runs) != 1 || runs[0].info.Kind != api.KindCatchUp || !runs[0].info.Slot.Equal(t0.Add(3*time.Hour)) {
			t.Fatalf("runs %+v", runs)
		}
		if d := runs[0].at.Sub(t0); d > 30*time.Minute+maxSleep {
			t.Errorf("noticed after %v", d)
		}
		sleepTo(3 * time.Hour) // wall 6h: slots 4h, 5h and 6h on time
		var slots []time.Duration
		for _, r := range a.seen() {
			slots = append(slots, r.info.Slot.Sub(t0))
		}
		if !slices.Equal(slots, []time.Duration{3 * time.Hour, 4 * time.Hour, 5 * time.Hour, 6 * time.Hour}) {
			t.Fatalf("slots %v", slots)
		}
		_ = h
	})
}

// A wall clock that steps back runs no slot twice (slots are wall instants, a handled one is
// never run again), and a pending retry is pulled in to now plus its wait instead of
// waiting the step longer.
func TestClockStepBack(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		a.set(func(r RunInfo) error {
			if r.Attempt == 1 && r.Slot.Equal(t0.Add(time.Hour)) {
				return errBoom
			}
			return nil
		}, nil)
		clk := &clock{}
		h := start(t, dir, Config{Jobs: []Job{{Name: "j", Schedule: every{period: time.Hour, origin: t0}, Action: a}}}, clk)
		sleepTo(time.Hour + 10*time.Second) // the 1h slot failed; its retry is due at wall 1h0m30s
		clk.jump(-time.Hour)                // wall 0h0m10s
		sleepTo(4 * time.Hour)              // wall 3h
		var got []string
		for _, r := range a.seen() {
			got = append(got, r.at.Sub(t0).String()+" "+r.info.Slot.Sub(t0).String())
		}
		// The loop wakes at 1h0m30s (the retry's time, on the monotonic clock), sees the step
		// back and pulls the retry in to then + 30 s, instead of the wall's 1h0m30s (virtual
		// 2h0m20s); the 1h slot never runs again; 2h and 3h at wall time.
		want := []string{"1h0m0s 1h0m0s", "1h1m0s 1h0m0s", "3h0m0s 2h0m0s", "4h0m0s 3h0m0s"}
		if !slices.Equal(got, want) {
			t.Fatalf("runs %v, want %v", got, want)
		}
		_ = h
	})
}

// With nothing scheduled the loop sets no timer: an idle daemon is not woken (it never even
// reads the clock). With a job scheduled far ahead it wakes every maxSleep to notice jumps.
func TestIdleHasNoTimer(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		clk := &clock{}
		h := start(t, dir, Config{Jobs: []Job{{Name: "off", Schedule: every{period: time.Minute, origin: t0},
			Disabled: true, Action: &fakeAction{}}}}, clk)
		before := clk.reads.Load()
		time.Sleep(30 * day)
		synctest.Wait()
		if n := clk.reads.Load() - before; n != 0 {
			t.Fatalf("idle loop read the clock %d times in 30 days", n)
		}
		if _, err := h.svc.SetEnabled(t.Context(), "off", true); err != nil {
			t.Fatal(err)
		}
		before = clk.reads.Load()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if n := clk.reads.Load() - before; n < 10 || n > 200 {
			t.Fatalf("%d clock reads in 10 minutes with a job every minute", n)
		}
	})
}

// P26: a schedule whose Next returns the instant it was asked about cannot make a job spin:
// its runs are minRefireGap apart.
func TestRefireGap_P26(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		a := &fakeAction{}
		start(t, dir, Config{Jobs: []Job{{Name: "j", Schedule: stuck{}, Action: a}}}, nil)
		sleepTo(9 * time.Second)
		if got := at(a.seen()); !slices.Equal(got, []time.Duration{2 * time.Second, 4 * time.Second, 6 * time.Second, 8 * time.Second}) {
			t.Fatalf("runs at %v", got)
		}
	})
}

// stuck is a broken schedule: Next(t) is t.
type stuck struct{}

func (stuck) Next(t time.Time) (time.Time, bool) { return t, true }
func (stuck) String() string                     { return "stuck" }
