package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
)

func TestServiceIntervalPulsesOnPhaseSlots(t *testing.T) {
	serviceTest(t, baseConfig(), harnessOpts{}, func(t *testing.T, h *harness) {
		first := slot(testSeed, "main", time.Minute)
		if due := h.agent("main").NextDueAt; due == nil || !due.Equal(h.start.Add(first)) {
			t.Fatalf("next_due_at %v, want start+%v", due, first)
		}
		h.sleepTo(first - time.Millisecond)
		h.wantPulses(0)
		h.sleepTo(first)
		got := h.wantPulses(1)
		p := got[0].p
		if got[0].at != first || p.AgentID != "main" || p.Reason != "interval" || p.ReasonKind != KindInterval ||
			p.Attempt != 1 || !p.ScheduledAt.Equal(h.start.Add(first)) || p.Visibility != DefaultVisibility {
			t.Fatalf("pulse %+v at %v", p, got[0].at)
		}
		for key, want := range map[string]string{
			"SCHEDD_AGENT_ID": "main", "SCHEDD_SESSION_KEY": "", "SCHEDD_REASON": "interval",
			"SCHEDD_REASON_KIND": "interval", "SCHEDD_VISIBILITY": "show_alerts,use_indicator",
		} {
			if v := envValue(got[0].env, key); v != want {
				t.Errorf("%s=%q, want %q", key, v, want)
			}
		}
		h.sleepTo(first + time.Minute)
		h.sleepTo(first + 2*time.Minute)
		got = h.wantPulses(3)
		if got[1].at != first+time.Minute || got[2].at != first+2*time.Minute {
			t.Fatalf("pulses at %v, %v", got[1].at, got[2].at)
		}
		a := h.agent("main")
		if a.Last == nil || a.Last.Status != api.RunRan || !a.Last.At.Equal(h.start.Add(first+2*time.Minute)) {
			t.Fatalf("last %+v", a.Last)
		}
		if !a.NextDueAt.Equal(h.start.Add(first + 3*time.Minute)) {
			t.Fatalf("next_due_at %v", a.NextDueAt)
		}
		if n := h.logs.FilterMessage("heartbeat pulse").Len(); n != 3 {
			t.Fatalf("%d pulse log lines, want one per run (3)", n)
		}
	})
}

func TestServiceBusyTargetRetriedAfterOneSecond(t *testing.T) {
	serviceTest(t, baseConfig(), harnessOpts{}, func(t *testing.T, h *harness) {
		first := slot(testSeed, "main", time.Minute)
		h.exec.setAnswer(func(p Pulse) (int, []byte, error) {
			if p.Attempt < 3 {
				return ExitBusy, nil, nil
			}
			return 0, nil, nil
		})
		h.sleepTo(first)
		h.wantPulses(1)
		if a := h.agent("main"); a.Last.Status != api.RunSkipped || a.Last.Reason != SkipRequestsInFlight {
			t.Fatalf("busy pulse recorded as %+v", a.Last)
		}
		h.sleepTo(first + 999*time.Millisecond)
		h.wantPulses(1)
		h.sleepTo(first + time.Second)
		h.sleepTo(first + 2*time.Second)
		got := h.wantPulses(3)
		for i, g := range got {
			if g.at != first+time.Duration(i)*time.Second || g.p.Attempt != i+1 || g.p.Reason != "interval" ||
				!g.p.ScheduledAt.Equal(h.start.Add(first)) {
				t.Fatalf("pulse %d: %+v at %v", i, g.p, g.at)
			}
		}
		// Busy retries did not push the schedule: the next slot is the regular one.
		h.sleepTo(first + time.Minute)
		if got := h.wantPulses(4); got[3].p.Attempt != 1 {
			t.Fatalf("regular pulse after retries: %+v", got[3].p)
		}
	})
}

func TestServiceGatewayBusyRetriesWithoutPushingSchedule(t *testing.T) {
	serviceTest(t, baseConfig(), harnessOpts{gateway: true}, func(t *testing.T, h *harness) {
		first := slot(testSeed, "main", time.Minute)
		h.gw.inflight.Store(2)
		h.sleepTo(first + 3500*time.Millisecond)
		h.wantPulses(0)
		if probes := h.gw.probes.Load(); probes != 4 { // at +0, +1s, +2s, +3s
			t.Fatalf("%d busy probes, want 4 (one per second)", probes)
		}
		if a := h.agent("main"); a.Last == nil || a.Last.Reason != SkipRequestsInFlight {
			t.Fatalf("last %+v, want requests-in-flight", a.Last)
		}
		h.gw.inflight.Store(0)
		h.sleepTo(first + 4*time.Second)
		got := h.wantPulses(1)
		if got[0].at != first+4*time.Second || !got[0].p.ScheduledAt.Equal(h.start.Add(first)) {
			t.Fatalf("pulse %+v at %v", got[0].p, got[0].at)
		}
		h.sleepTo(first + time.Minute)
		h.wantPulses(2)
	})
}

func TestServiceGatewayNotReadyAndAlertsDisabledSkip(t *testing.T) {
	off := false
	cfg := baseConfig(AgentConfig{ID: "quiet", Visibility: &Visibility{ShowOK: &off, ShowAlerts: &off, UseIndicator: &off}},
		AgentConfig{ID: "loud"})
	serviceTest(t, cfg, harnessOpts{gateway: true}, func(t *testing.T, h *harness) {
		h.gw.notReady.Store(true)
		h.sleepTo(time.Minute)
		h.wantPulses(0)
		for _, id := range []string{"quiet", "loud"} {
			if a := h.agent(id); a.Last == nil || a.Last.Reason != SkipGatewayNotReady {
				t.Fatalf("%s: last %+v, want gateway-not-ready", id, a.Last)
			}
		}
		h.gw.notReady.Store(false)
		h.sleepTo(2 * time.Minute)
		got := h.wantPulses(1)
		if got[0].p.AgentID != "loud" {
			t.Fatalf("pulsed %s", got[0].p.AgentID)
		}
		if a := h.agent("quiet"); a.Last.Reason != SkipAlertsDisabled {
			t.Fatalf("quiet: last %+v, want alerts-disabled", a.Last)
		}
		if n := h.logs.FilterMessage("heartbeat skipped").Len(); n != 3 {
			t.Fatalf("%d skip log lines, want one per skip (3)", n)
		}
	})
}

func TestServiceManualWakeWithinCoalescingWindow(t *testing.T) {
	serviceTest(t, baseConfig(), harnessOpts{}, func(t *testing.T, h *harness) {
		first := slot(testSeed, "main", time.Minute)
		h.sleepTo(first + 10*time.Second)
		h.wantPulses(1)
		if err := h.svc.Wake(WakeRequest{AgentID: "main", Reason: "manual"}); err != nil {
			t.Fatal(err)
		}
		h.sleepTo(first + 10*time.Second + 249*time.Millisecond)
		h.wantPulses(1)
		h.sleepTo(first + 10*time.Second + 250*time.Millisecond)
		got := h.wantPulses(2)
		if got[1].p.Reason != "manual" || got[1].p.ReasonKind != KindManual {
			t.Fatalf("pulse %+v", got[1].p)
		}
		// A manual run counts as a fresh run: the next one is a full interval later.
		want := h.start.Add(first + 70*time.Second + 250*time.Millisecond)
		if due := h.agent("main").NextDueAt; !due.Equal(want) {
			t.Fatalf("next_due_at %v, want %v", due, want)
		}
		if err := h.svc.Wake(WakeRequest{AgentID: "nobody"}); !errors.Is(err, ErrUnknownAgent) {
			t.Fatalf("unknown agent: %v", err)
		}
	})
}

// TestServiceManualWakeBeforeSlot: a manual run 10 s before a slot makes the agent due an
// interval later, 10 s before a later slot, off the slots. The interval run there is not
// followed by that slot 10 s later: the agent is due at the slot after it, so two runs
// are never within half an interval of each other unless a wake asks.
func TestServiceManualWakeBeforeSlot(t *testing.T) {
	serviceTest(t, baseConfig(), harnessOpts{}, func(t *testing.T, h *harness) {
		first := slot(testSeed, "main", time.Minute)
		h.sleepTo(first + 50*time.Second)
		h.wantPulses(1)
		if err := h.svc.Wake(WakeRequest{AgentID: "main", Reason: "manual"}); err != nil {
			t.Fatal(err)
		}
		h.sleepTo(first + 110*time.Second + 250*time.Millisecond)
		got := h.wantPulses(3)
		if got[1].p.ReasonKind != KindManual || got[2].p.ReasonKind != KindInterval {
			t.Fatalf("pulses %+v, want a manual run, then an interval run", got)
		}
		if want := h.start.Add(first + 180*time.Second); !h.agent("main").NextDueAt.Equal(want) {
			t.Fatalf("after the interval run next_due_at %v, want %v (not the slot 9.75 s later)", h.agent("main").NextDueAt, want)
		}
		h.sleepTo(first + 180*time.Second)
		if got := h.wantPulses(4); got[3].at-got[2].at < 30*time.Second {
			t.Fatalf("interval runs at %v and %v are less than half an interval apart", got[2].at, got[3].at)
		}
	})
}

func TestServiceFiveWakesGiveOnePulse(t *testing.T) {
	serviceTest(t, baseConfig(), harnessOpts{}, func(t *testing.T, h *harness) {
		for i := range 5 {
			h.sleepTo(time.Second + time.Duration(i)*20*time.Millisecond)
			if err := h.svc.Wake(WakeRequest{AgentID: "main", Reason: "manual"}); err != nil {
				t.Fatal(err)
			}
		}
		h.sleepTo(5 * time.Second)
		got := h.wantPulses(1)
		if got[0].at != time.Second+250*time.Millisecond {
			t.Fatalf("pulse at %v, want 1.25s (the first wake's window)", got[0].at)
		}
	})
}

func TestServiceTargetedWakeDoesNotFanOut(t *testing.T) {
	serviceTest(t, baseConfig(AgentConfig{ID: "a", Every: "1h"}, AgentConfig{ID: "b", Every: "1h"}), harnessOpts{},
		func(t *testing.T, h *harness) {
			if err := h.svc.Wake(WakeRequest{SessionKey: "agent:b:main", Reason: "exec-event"}); err != nil {
				t.Fatal(err)
			}
			h.sleepTo(time.Second)
			got := h.wantPulses(1)
			if got[0].p.AgentID != "b" || got[0].p.SessionKey != "agent:b:main" || got[0].p.Reason != "exec-event" {
				t.Fatalf("pulse %+v", got[0].p)
			}
			// A broadcast event wake reaches every agent.
			if err := h.svc.Wake(WakeRequest{Reason: "cron:nightly"}); err != nil {
				t.Fatal(err)
			}
			h.sleepTo(2 * time.Second)
			got = h.wantPulses(2) // b is inside its 30 s spacing
			if got[1].p.AgentID != "a" {
				t.Fatalf("broadcast pulsed %+v", got[1].p)
			}
		})
}

func TestServiceCooldownMinSpacingAndFloodGuard(t *testing.T) {
	const every = 24 * time.Hour
	cfg := baseConfig()
	cfg.Defaults.Every = "24h"
	if slot(testSeed, "main", every) < 5*time.Minute {
		t.Fatal("precondition: the first interval slot must be after the test's window")
	}
	serviceTest(t, cfg, harnessOpts{}, func(t *testing.T, h *harness) {
		ms := time.Millisecond
		wake := func(at time.Duration, reason string) {
			t.Helper()
			h.sleepTo(at)
			if err := h.svc.Wake(WakeRequest{AgentID: "main", Reason: reason}); err != nil {
				t.Fatal(err)
			}
		}
		wake(0, "exec-event")             // first run is free: 250ms
		wake(5*time.Second, "exec-event") // min-spacing: deferred to 30.25s
		wake(31*time.Second, "manual")    // exempt: 31.25s
		wake(32*time.Second, "manual")    // 32.25s
		wake(33*time.Second, "manual")    // 33.25s: five starts within 60 s
		wake(40*time.Second, "hook:wake") // flood until 60.251s, then min-spacing until 63.25s
		h.sleepTo(2 * time.Minute)
		got := h.exec.seen()
		want := []struct {
			at     time.Duration
			reason string
		}{
			{250 * ms, "exec-event"}, {30250 * ms, "exec-event"}, {31250 * ms, "manual"},
			{32250 * ms, "manual"}, {33250 * ms, "manual"}, {63250 * ms, "hook:wake"},
		}
		if len(got) != len(want) {
			t.Fatalf("pulses %+v", got)
		}
		for i, w := range want {
			if got[i].at != w.at || got[i].p.Reason != w.reason {
				t.Errorf("pulse %d: %s at %v, want %s at %v", i, got[i].p.Reason, got[i].at, w.reason, w.at)
			}
		}
		var reasons []string
		for _, e := range h.logs.FilterMessage("heartbeat skipped").All() {
			reasons = append(reasons, e.ContextMap()["skip_reason"].(string))
		}
		if len(reasons) != 3 || reasons[0] != SkipMinSpacing || reasons[1] != SkipFlood || reasons[2] != SkipMinSpacing {
			t.Fatalf("deferrals %v, want min-spacing, flood, min-spacing", reasons)
		}
	})
}

func TestServiceQuietHoursSkipAndSeekAhead(t *testing.T) {
	cfg := baseConfig()
	cfg.Defaults.Every = "1h"
	cfg.Defaults.ActiveHours = &ActiveHours{Start: "08:00", End: "22:00", Timezone: "UTC"}
	serviceTest(t, cfg, harnessOpts{}, func(t *testing.T, h *harness) {
		phase := Phase(testSeed, "main", time.Hour)
		first := h.start.Add(8*time.Hour + phase) // the bubble starts at 00:00 UTC
		if due := h.agent("main").NextDueAt; !due.Equal(first) {
			t.Fatalf("next_due_at %v, want the first active slot %v", due, first)
		}
		h.sleepTo(time.Hour)
		if err := h.svc.Wake(WakeRequest{AgentID: "main", Reason: "manual"}); err != nil {
			t.Fatal(err)
		}
		h.sleepTo(time.Hour + time.Second)
		h.wantPulses(0)
		a := h.agent("main")
		if a.Last == nil || a.Last.Status != api.RunSkipped || a.Last.Reason != SkipQuietHours {
			t.Fatalf("last %+v, want skipped quiet-hours", a.Last)
		}
		e := h.logs.FilterMessage("heartbeat skipped").All()
		if len(e) != 1 || e[0].ContextMap()["skip_reason"] != SkipQuietHours || e[0].ContextMap()["agent"] != "main" {
			t.Fatalf("skip log %+v", e)
		}
		// Slots run only inside the window: 8:xx .. 21:xx, 14 runs a day.
		h.sleepTo(24 * time.Hour)
		got := h.exec.seen()
		if len(got) != 14 {
			t.Fatalf("%d runs in a day, want 14", len(got))
		}
		for _, g := range got {
			if hr := h.start.Add(g.at).Hour(); hr < 8 || hr >= 22 {
				t.Fatalf("pulse at %v outside active hours", h.start.Add(g.at))
			}
		}
	})
}

func TestServiceDisableStopsPulsesAndSurvivesRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &memStore{}
		h := startHarness(t, baseConfig(), harnessOpts{store: store})
		first := slot(testSeed, "main", time.Minute)
		h.sleepTo(first)
		h.wantPulses(1)
		if err := h.svc.SetEnabled(false); err != nil {
			t.Fatal(err)
		}
		if err := h.svc.Wake(WakeRequest{AgentID: "main", Reason: "manual"}); err != nil {
			t.Fatal(err)
		}
		h.sleepTo(first + 5*time.Minute)
		h.wantPulses(1)
		if st := h.svc.Status(); st.Enabled || st.Agents[0].NextDueAt.Before(h.start.Add(first+5*time.Minute)) {
			t.Fatalf("status %+v: want disabled with the schedule still moving", st)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}

		h2 := startHarness(t, baseConfig(), harnessOpts{store: store})
		defer func() {
			if err := h2.stop(); err != nil {
				t.Error(err)
			}
		}()
		h2.start = h.start
		if h2.svc.Enabled() {
			t.Fatal("the switch did not survive the restart")
		}
		h2.sleepTo(first + 8*time.Minute)
		if n := len(h2.exec.seen()); n != 0 {
			t.Fatalf("%d pulses while disabled", n)
		}
		if err := h2.svc.SetEnabled(true); err != nil {
			t.Fatal(err)
		}
		h2.sleepTo(first + 9*time.Minute)
		got := h2.exec.seen()
		if len(got) != 1 || !got[0].p.ScheduledAt.Equal(h.start.Add(first+9*time.Minute)) ||
			!h2.exec.start.Add(got[0].at).Equal(h.start.Add(first+9*time.Minute)) {
			t.Fatalf("after enable: %+v", got)
		}
	})
}

func TestServiceReloadKeepsScheduleAndAppliesNewIntervals(t *testing.T) {
	serviceTest(t, baseConfig(), harnessOpts{}, func(t *testing.T, h *harness) {
		first := slot(testSeed, "main", time.Minute)
		before := *h.agent("main").NextDueAt
		cfg := baseConfig()
		cfg.Defaults.Session = "agent:main:other"
		if err := h.svc.UpdateConfig(cfg); err != nil {
			t.Fatal(err)
		}
		if after := *h.agent("main").NextDueAt; !after.Equal(before) {
			t.Fatalf("reload moved next_due_at %v -> %v", before, after)
		}
		h.sleepTo(first + 30*time.Second)
		got := h.wantPulses(1) // exactly once: no double fire on reload
		if got[0].p.SessionKey != "agent:main:other" {
			t.Fatalf("reload not applied: %+v", got[0].p)
		}

		// Per-agent intervals take effect without a restart.
		if err := h.svc.UpdateConfig(baseConfig(AgentConfig{ID: "ten", Every: "10m"}, AgentConfig{ID: "fifteen", Every: "15m"})); err != nil {
			t.Fatal(err)
		}
		end := 2 * time.Hour
		h.sleepTo(end)
		counts := map[string][]time.Duration{}
		for _, g := range h.exec.seen()[1:] {
			counts[g.p.AgentID] = append(counts[g.p.AgentID], g.at)
		}
		for id, every := range map[string]time.Duration{"ten": 10 * time.Minute, "fifteen": 15 * time.Minute} {
			runs := counts[id]
			if len(runs) < 2 {
				t.Fatalf("%s ran %d times", id, len(runs))
			}
			for i := 1; i < len(runs); i++ {
				if runs[i]-runs[i-1] != every {
					t.Fatalf("%s runs %v not %v apart", id, runs, every)
				}
			}
			if p := Phase(testSeed, id, every); runs[0]%every != p {
				t.Fatalf("%s first run %v not on its phase %v", id, runs[0], p)
			}
		}
		if len(h.svc.Status().Agents) != 2 {
			t.Fatalf("status %+v", h.svc.Status())
		}
	})
}

// TestServiceTargetFailuresDoNotStopTicks covers R-SUP-06 for the heartbeat loop: a
// panicking or failing target is recorded and the schedule goes on.
func TestServiceTargetFailuresDoNotStopTicks(t *testing.T) {
	serviceTest(t, baseConfig(), harnessOpts{}, func(t *testing.T, h *harness) {
		first := slot(testSeed, "main", time.Minute)
		h.exec.setAnswer(func(p Pulse) (int, []byte, error) { panic("target bug") })
		h.sleepTo(first)
		if a := h.agent("main"); a.Last.Status != api.RunFailed {
			t.Fatalf("panic recorded as %+v", a.Last)
		}
		h.exec.setAnswer(func(p Pulse) (int, []byte, error) { return 0, nil, errors.New("cannot start") })
		h.sleepTo(first + time.Minute)
		h.exec.setAnswer(func(p Pulse) (int, []byte, error) { return 3, nil, nil })
		h.sleepTo(first + 2*time.Minute)
		if a := h.agent("main"); a.Last.Status != api.RunFailed || a.Last.Reason != "exit status 3" {
			t.Fatalf("last %+v", a.Last)
		}
		h.exec.setAnswer(nil)
		h.sleepTo(first + 3*time.Minute)
		h.wantPulses(4)
		if a := h.agent("main"); a.Last.Status != api.RunRan {
			t.Fatalf("last %+v", a.Last)
		}
	})
}

// TestServiceSlowTargetNeverOverlapsItself covers R-DLV-07 and P20's "never concurrently
// with itself": a hanging target is cut off by its own timeout and its next slot is skipped
// as in-progress instead of starting a second run.
func TestServiceSlowTargetNeverOverlapsItself(t *testing.T) {
	cfg := baseConfig()
	cfg.Defaults.Target = &Target{Exec: &ExecTarget{Command: []string{"slow"}, Timeout: 90 * time.Second}}
	serviceTest(t, cfg, harnessOpts{}, func(t *testing.T, h *harness) {
		first := slot(testSeed, "main", time.Minute)
		hold := make(chan struct{})
		h.exec.setHold(hold) // every run hangs until its timeout
		h.sleepTo(first + time.Minute)
		h.wantPulses(1)
		if a := h.agent("main"); a.Last.Reason != SkipInProgress {
			t.Fatalf("second slot: last %+v, want in-progress", a.Last)
		}
		h.sleepTo(first + 90*time.Second)
		if a := h.agent("main"); a.Last.Status != api.RunFailed || a.Last.Reason != "timeout" || a.Last.DurationMS != 90000 {
			t.Fatalf("after the timeout: last %+v", a.Last)
		}
		h.sleepTo(first + 2*time.Minute)
		h.wantPulses(2)
		if peak := h.exec.peak.Load(); peak != 1 {
			t.Fatalf("%d concurrent runs of one agent", peak)
		}
		close(hold)
	})
}

func TestServiceRecordsTargetEvent(t *testing.T) {
	serviceTest(t, baseConfig(), harnessOpts{}, func(t *testing.T, h *harness) {
		h.exec.setAnswer(func(p Pulse) (int, []byte, error) {
			return 0, []byte(`{"status":"ok-token","preview":"HEARTBEAT_OK","reason":""}` + "\n"), nil
		})
		h.sleepTo(slot(testSeed, "main", time.Minute))
		a := h.agent("main")
		if a.Event == nil || a.Event.Status != EventOKToken || a.Event.Preview != "HEARTBEAT_OK" || a.Event.Indicator != "ok" {
			t.Fatalf("event %+v", a.Event)
		}
	})
}

func TestServiceStoppedNeverFires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, baseConfig(), harnessOpts{})
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		h.sleepTo(10 * time.Minute)
		h.wantPulses(0)
		if err := h.svc.Run(t.Context()); !errors.Is(err, ErrRunning) {
			t.Fatalf("second Run: %v", err)
		}
	})
}

// TestServiceClockJumpRunsAtMostOnce covers P20 (a jump over many intervals runs once on
// resume, no catch-up) and P21 (a wall-clock jump is noticed within one 30 s sleep).
func TestServiceClockJumpRunsAtMostOnce(t *testing.T) {
	cfg := baseConfig()
	cfg.Defaults.Every = "10m"
	serviceTest(t, cfg, harnessOpts{}, func(t *testing.T, h *harness) {
		first := slot(testSeed, "main", 10*time.Minute)
		h.sleepTo(first)
		h.wantPulses(1)
		h.clk.jump(2 * time.Hour) // suspend: twelve slots pass on the wall clock only
		h.sleepTo(first + 30*time.Second)
		got := h.wantPulses(2)
		if got[1].at > first+maxSleep {
			t.Fatalf("jump noticed after %v", got[1].at-first)
		}
		wallNow := h.clk.now()
		want := NextSlot(wallNow, 10*time.Minute, Phase(testSeed, "main", 10*time.Minute))
		if due := h.agent("main").NextDueAt; !due.Equal(want) {
			t.Fatalf("next_due_at %v, want the next slot %v", due, want)
		}
		h.sleepTo(first + 2*time.Minute)
		h.wantPulses(2)
	})
}

// TestServiceWallClockStepBackRebases covers R-ENV-01: after the wall clock steps back two
// hours, the next pulse comes on the next slot of the new wall time (not two hours late),
// and run starts recorded before the step do not hold the cooldown gate shut.
func TestServiceWallClockStepBackRebases(t *testing.T) {
	cfg := baseConfig()
	cfg.Defaults.Every = "10m"
	serviceTest(t, cfg, harnessOpts{}, func(t *testing.T, h *harness) {
		every := 10 * time.Minute
		phase := Phase(testSeed, "main", every)
		first := slot(testSeed, "main", every)
		h.sleepTo(first)
		h.wantPulses(1)
		h.sleepTo(first + time.Minute)
		h.clk.jump(-2 * time.Hour)
		h.sleepTo(first + time.Minute + maxSleep)
		if n := h.logs.FilterMessage("wall clock stepped back; heartbeat schedule rebased").Len(); n != 1 {
			t.Fatalf("%d rebase log lines", n)
		}
		due := *h.agent("main").NextDueAt
		if !due.Equal(NextSlot(h.clk.now(), every, phase)) && !due.Equal(NextSlot(h.clk.now().Add(-maxSleep), every, phase)) {
			t.Fatalf("next_due_at %v after the step, wall now %v", due, h.clk.now())
		}
		if err := h.svc.Wake(WakeRequest{AgentID: "main", Reason: "exec-event"}); err != nil {
			t.Fatal(err)
		}
		h.sleepTo(first + time.Minute + maxSleep + time.Second)
		if got := h.wantPulses(2); got[1].p.Reason != "exec-event" {
			t.Fatalf("event wake after the step: %+v", got[1].p)
		}
		h.sleepTo(first + time.Minute + maxSleep + every + time.Second)
		if got := h.exec.seen(); len(got) != 3 || got[2].p.Reason != "interval" {
			t.Fatalf("pulses %+v: want an interval pulse within one interval of the step", got)
		}
	})
}

// TestServiceWorkersStartOnDemand: a service whose agents never pulse keeps no worker;
// many slow pulses at once start workers up to pulseWorkers and no more, and the pulses
// beyond that wait for a free worker instead of running all at once.
func TestServiceWorkersStartOnDemand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		none := baseConfig()
		none.Defaults.Target = nil
		h := startHarness(t, none, harnessOpts{})
		h.sleepTo(time.Hour)
		h.svc.mu.Lock()
		workers := h.svc.workers
		h.svc.mu.Unlock()
		if err := h.stop(); err != nil || workers != 0 {
			t.Fatalf("no target: %d workers, Run %v", workers, err)
		}
	})
	const agents = pulseWorkers + 36
	var list []AgentConfig
	for i := range agents {
		list = append(list, AgentConfig{ID: fmt.Sprintf("a%03d", i)})
	}
	serviceTest(t, baseConfig(list...), harnessOpts{}, func(t *testing.T, h *harness) {
		hold := make(chan struct{})
		h.exec.setHold(hold)
		if err := h.svc.Wake(WakeRequest{Reason: ReasonManual}); err != nil {
			t.Fatal(err)
		}
		h.sleepTo(time.Second)
		h.svc.mu.Lock()
		workers := h.svc.workers
		h.svc.mu.Unlock()
		if workers != pulseWorkers || h.exec.peak.Load() != pulseWorkers || len(h.exec.seen()) != pulseWorkers {
			t.Fatalf("%d workers, %d concurrent pulses, %d started; want %d of each", workers, h.exec.peak.Load(), len(h.exec.seen()), pulseWorkers)
		}
		close(hold)
		h.sleepTo(2 * time.Second)
		h.wantPulses(agents)
	})
}

// countingClock is a wall clock that counts how often the service reads it: every timer
// wake-up of the scheduler reads it.
type countingClock struct{ reads atomic.Int64 }

func (c *countingClock) now() time.Time { c.reads.Add(1); return time.Now() }

// TestServiceIdleNeverWakes: with no agent scheduled the service arms no timer at all (an
// idle daemon is never woken by heartbeats); once an agent is scheduled it wakes for it,
// and when the config drops it again the wake-ups stop.
func TestServiceIdleNeverWakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		off := false
		idle := Config{Seed: testSeed, Defaults: AgentConfig{Every: "1m", Target: execTarget(), Enabled: &off}}
		clk := &countingClock{}
		exec := &fakeExec{start: time.Now()}
		svc, err := New(idle, Deps{Run: runner(exec.run), Host: time.UTC, Now: clk.now})
		if err != nil {
			t.Fatal(err)
		}
		defer runService(t, svc)()
		time.Sleep(time.Minute) // the first state save
		synctest.Wait()
		before := clk.reads.Load()
		time.Sleep(7 * 24 * time.Hour)
		synctest.Wait()
		if n := clk.reads.Load() - before; n != 0 {
			t.Fatalf("idle for a week: the scheduler read the clock %d times", n)
		}

		if err := svc.UpdateConfig(baseConfig()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(exec.seen()); n != 60 {
			t.Fatalf("an agent every minute pulsed %d times in an hour", n)
		}
		if err := svc.UpdateConfig(idle); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		before = clk.reads.Load()
		time.Sleep(24 * time.Hour)
		synctest.Wait()
		if n := clk.reads.Load() - before; n != 0 {
			t.Fatalf("idle again for a day: the scheduler read the clock %d times", n)
		}
	})
}

// countingStore counts saves.
type countingStore struct {
	memStore
	saves atomic.Int64
}

func (c *countingStore) Save(st State) error { c.saves.Add(1); return c.memStore.Save(st) }

// TestServiceNoAgentsWritesNothing: with no agent configured and none persisted there is
// no state to write, so an idle daemon is not woken to write an empty state file (the
// write used to come 5 s after every start); the switch, once set, is saved.
func TestServiceNoAgentsWritesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &countingStore{}
		svc, err := New(Config{Seed: testSeed}, Deps{Run: runner((&fakeExec{start: time.Now()}).run), Host: time.UTC, Store: store})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- svc.Run(ctx) }()
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := store.saves.Load(); n != 0 {
			t.Fatalf("no agents: the state was saved %d times in an hour", n)
		}
		if err := svc.SetEnabled(false); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := store.saves.Load(); n == 0 {
			t.Fatal("the switch was not saved")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
