package heartbeat

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"pgregory.net/rapid"
)

func TestFileStoreRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	fs := NewFileStore(dir, nil)
	st, err := fs.Load()
	if err != nil || len(st.Agents) != 0 || st.Enabled != nil {
		t.Fatalf("missing file: %+v, %v", st, err)
	}
	off := false
	at := utc("2026-05-01T10:15:00Z")
	want := State{Seed: "s", Enabled: &off, Agents: map[string]AgentState{
		"main": {IntervalMS: 60000, PhaseMS: 1234, NextDueAt: at,
			Last:   &LastRun{Status: StatusRan, DurationMS: 12, At: at.Add(-time.Minute)},
			Event:  &Event{Status: EventSent, Preview: "hi", At: at},
			Starts: []time.Time{at.Add(-time.Minute)}},
	}}
	for range 2 { // the second save replaces the first
		if err := fs.Save(want); err != nil {
			t.Fatal(err)
		}
	}
	got, err := fs.Load()
	if err != nil || got.Version != StateVersion || got.Seed != "s" || got.Enabled == nil || *got.Enabled ||
		!got.Agents["main"].NextDueAt.Equal(at) || got.Agents["main"].Last.DurationMS != 12 || got.Agents["main"].Event.Preview != "hi" {
		t.Fatalf("loaded %+v, %v", got, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != StateFileName {
		t.Fatalf("dir holds %v: temp files left behind", entries)
	}
}

// TestFileStoreQuarantinesCorruptState covers R-ENV-06: garbage or a torn file is moved
// aside with a logged reason and the service starts fresh instead of crash-looping.
func TestFileStoreQuarantinesCorruptState(t *testing.T) {
	for name, content := range map[string]string{
		"garbage":         "{\"version\":1,\"agents\":{\"main\":",
		"unknown version": `{"version":99}`,
		"not an object":   `[1,2,3]`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, StateFileName), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			core, logs := observer.New(zapcore.WarnLevel)
			st, err := NewFileStore(dir, zap.New(core)).Load()
			if err != nil || len(st.Agents) != 0 {
				t.Fatalf("Load: %+v, %v", st, err)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), StateFileName+".corrupt-") {
				t.Fatalf("dir holds %v, want the quarantined file only", entries)
			}
			aside, _ := os.ReadFile(filepath.Join(dir, entries[0].Name()))
			if string(aside) != content {
				t.Fatal("quarantined content changed")
			}
			if e := logs.All(); len(e) != 1 || e[0].ContextMap()["problem"] == "" {
				t.Fatalf("logs %+v, want one warning with the problem", e)
			}
		})
	}
}

// TestServiceRestartNeitherResetsNorDoubleFires covers P20 across a daemon restart with
// the file store: the persisted due time (moved by a manual run) is kept rather than reset
// to the phase slot, the last run shows before anything runs, a restart right after a run
// does not run it again, and slots missed while down are not caught up.
func TestServiceRestartNeitherResetsNorDoubleFires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		t0 := time.Now()
		first := slot(testSeed, "main", time.Minute)
		at := func(d time.Duration) time.Time { return t0.Add(d).UTC() }
		pulsesAt := func(h *harness) []time.Time {
			var out []time.Time
			for _, g := range h.exec.seen() {
				out = append(out, h.exec.start.Add(g.at).UTC())
			}
			return out
		}

		h1 := startHarness(t, baseConfig(), harnessOpts{store: NewFileStore(dir, nil)})
		h1.start = t0
		h1.sleepTo(first + 10*time.Second)
		if err := h1.svc.Wake(WakeRequest{AgentID: "main", Reason: "manual"}); err != nil {
			t.Fatal(err)
		}
		h1.sleepTo(first + 11*time.Second)
		if got := pulsesAt(h1); len(got) != 2 || !got[1].Equal(at(first+10250*time.Millisecond)) {
			t.Fatalf("first life pulses %v", got)
		}
		if err := h1.stop(); err != nil {
			t.Fatal(err)
		}

		// Restart: the manual run moved the schedule to first+70.25s; it is kept.
		h2 := startHarness(t, baseConfig(), harnessOpts{store: NewFileStore(dir, nil)})
		h2.start = t0
		a := h2.agent("main")
		if !a.NextDueAt.Equal(at(first + 70250*time.Millisecond)) {
			t.Fatalf("after restart next_due_at %v, want %v (not reset)", a.NextDueAt, at(first+70250*time.Millisecond))
		}
		if a.Last == nil || a.Last.Status != StatusRan || !a.Last.At.Equal(at(first+10250*time.Millisecond)) {
			t.Fatalf("after restart last %+v", a.Last)
		}
		h2.sleepTo(first + 70250*time.Millisecond)
		if got := pulsesAt(h2); len(got) != 1 || !got[0].Equal(at(first+70250*time.Millisecond)) {
			t.Fatalf("second life pulses %v, want exactly one at first+70.25s", got)
		}
		if err := h2.stop(); err != nil {
			t.Fatal(err)
		}

		// Restart right after that run: it does not run again; the next slot is regular.
		h3 := startHarness(t, baseConfig(), harnessOpts{store: NewFileStore(dir, nil)})
		h3.start = t0
		h3.sleepTo(first + 119*time.Second)
		if got := pulsesAt(h3); len(got) != 0 {
			t.Fatalf("double fire after restart: %v", got)
		}
		h3.sleepTo(first + 120*time.Second)
		if got := pulsesAt(h3); len(got) != 1 || !got[0].Equal(at(first+120*time.Second)) {
			t.Fatalf("third life pulses %v", got)
		}
		if err := h3.stop(); err != nil {
			t.Fatal(err)
		}

		// Down for ten slots: no catch-up burst on start, just the next slot.
		time.Sleep(10*time.Minute + 30*time.Second)
		h4 := startHarness(t, baseConfig(), harnessOpts{store: NewFileStore(dir, nil)})
		h4.start = t0
		h4.sleepTo(first + 12*time.Minute + 59*time.Second)
		if got := pulsesAt(h4); len(got) != 0 {
			t.Fatalf("catch-up after downtime: %v", got)
		}
		h4.sleepTo(first + 13*time.Minute)
		if got := pulsesAt(h4); len(got) != 1 {
			t.Fatalf("fourth life pulses %v", got)
		}
		if err := h4.stop(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestServiceSaveFailureIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, baseConfig(), harnessOpts{store: failingStore{}})
		if err := h.svc.SetEnabled(false); err == nil {
			t.Error("SetEnabled hid a failed save")
		}
		if err := h.stop(); err == nil {
			t.Error("Run hid a failed final save")
		}
	})
}

type failingStore struct{}

func (failingStore) Load() (State, error) { return State{}, nil }
func (failingStore) Save(State) error     { return os.ErrPermission }

func TestStateJSONMatchesEncodingJSON(t *testing.T) {
	on := false
	st := benchState(3)
	st.Enabled = &on
	a := st.Agents["a00001"]
	a.Event = &Event{Status: EventOKToken, Preview: "HEARTBEAT_OK \"quoted\"\n", Indicator: "ok", At: a.Last.At}
	a.NextDueAt = time.Time{}
	st.Agents["a00001"] = a
	st.Agents["idle"] = AgentState{Last: &LastRun{Status: StatusSkipped, Reason: SkipQuietHours}}
	for _, st := range []State{st, {Version: StateVersion}, benchState(100)} {
		want, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.appendJSON(nil); string(got) != string(want) {
			t.Errorf("appendJSON:\n got %s\nwant %s", got, want)
		}
	}
}

// TestStateJSONRoundTrip: what appendJSON writes, Load reads back as it was, for any
// strings and instants.
func TestStateJSONRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		instant := func(label string) time.Time {
			return time.Unix(0, rapid.Int64Range(0, 4e18).Draw(t, label)).UTC()
		}
		st := State{Version: StateVersion, Seed: rapid.String().Draw(t, "seed"), Agents: map[string]AgentState{}}
		for i := range rapid.IntRange(0, 4).Draw(t, "agents") {
			a := AgentState{IntervalMS: rapid.Int64().Draw(t, "interval"), PhaseMS: rapid.Int64().Draw(t, "phase"), NextDueAt: instant("due")}
			if rapid.Bool().Draw(t, "last") {
				a.Last = &LastRun{Status: RunStatus(rapid.String().Draw(t, "status")), Reason: rapid.String().Draw(t, "reason"),
					DurationMS: rapid.Int64().Draw(t, "took"), At: instant("at")}
			}
			if rapid.Bool().Draw(t, "event") {
				a.Event = &Event{Status: rapid.String().Draw(t, "ev"), Preview: rapid.String().Draw(t, "preview"),
					Reason: rapid.String().Draw(t, "evreason"), Indicator: rapid.String().Draw(t, "ind"), At: instant("evat")}
			}
			for range rapid.IntRange(0, 3).Draw(t, "starts") {
				a.Starts = append(a.Starts, instant("start"))
			}
			st.Agents[fmt.Sprintf("%s-%d", rapid.String().Draw(t, "id"), i)] = a
		}
		var got, want State
		if err := json.Unmarshal(st.appendJSON(nil), &got); err != nil {
			t.Fatalf("invalid JSON: %v", err)
		}
		data, _ := json.Marshal(st)
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded\n%+v\nencoding/json gives\n%+v", got, want)
		}
	})
}
