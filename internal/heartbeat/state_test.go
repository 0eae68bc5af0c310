package heartbeat

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedd/schedd/internal/api"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
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
			Last:   &api.HeartbeatRun{Status: api.RunRan, DurationMS: 12, At: at.Add(-time.Minute)},
			Event:  &api.HeartbeatEvent{Status: EventSent, Preview: "hi", At: at},
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
		if a.Last == nil || a.Last.Status != api.RunRan || !a.Last.At.Equal(at(first+10250*time.Millisecond)) {
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

// TestFileStoreKeepsEveryField: a state with every field set (by reflection, so a field
// added later is covered too) comes back from the file as it was saved.
func TestFileStoreKeepsEveryField(t *testing.T) {
	var want State
	n := 0
	fillNonZero(t, reflect.ValueOf(&want).Elem(), "State", &n)
	want.Version = StateVersion // Save writes its own
	fs := NewFileStore(t.TempDir(), nil)
	if err := fs.Save(want); err != nil {
		t.Fatal(err)
	}
	got, err := fs.Load()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		data, _ := os.ReadFile(fs.Path())
		t.Fatalf("loaded\n%#v\nsaved\n%#v\nfile %s", got, want, data)
	}
}

// fillNonZero sets v and everything in it to values that are not zero and differ per field
// (n counts them), with characters JSON escapes in strings. It fails on a field it cannot
// fill and on an unexported one, which the state file could not keep.
func fillNonZero(t *testing.T, v reflect.Value, path string, n *int) {
	t.Helper()
	*n++
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 5, 1, 10, 0, 0, *n, time.UTC).Add(time.Duration(*n) * time.Hour)))
			return
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				t.Fatalf("%s.%s is unexported: the state file cannot keep it", path, f.Name)
			}
			fillNonZero(t, v.Field(i), path+"."+f.Name, n)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillNonZero(t, v.Elem(), path, n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range v.Len() {
			fillNonZero(t, v.Index(i), fmt.Sprintf("%s[%d]", path, i), n)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fillNonZero(t, k, path+" key", n)
			fillNonZero(t, e, path+"[...]", n)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("%s %d <&> \"é\"\n", path, *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	default:
		t.Fatalf("%s: cannot fill a %s", path, v.Kind())
	}
	if v.IsZero() {
		t.Fatalf("%s is still zero", path)
	}
}

// TestFileStoreLoadsEarlierFile: a state file written before the state was encoded with
// encoding/json (testdata/state-v1.json) loads as it was meant, and saves back the same.
func TestFileStoreLoadsEarlierFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "state-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, StateFileName), data, 0o600); err != nil {
		t.Fatal(err)
	}
	on := true
	at := time.Date(2026, 5, 1, 10, 15, 0, 123456789, time.UTC)
	want := State{Version: StateVersion, Seed: "0f1e2d3c4b5a69788796a5b4c3d2e1f0", Enabled: &on, Agents: map[string]AgentState{
		"main": {IntervalMS: 1800000, PhaseMS: 12750, NextDueAt: at.Add(30 * time.Minute),
			Last:   &api.HeartbeatRun{Status: api.RunRan, DurationMS: 12, At: at},
			Event:  &api.HeartbeatEvent{Status: EventOKToken, Preview: "HEARTBEAT_OK <&> \"q\"\n", Reason: "r", Indicator: "ok", At: at.Add(12 * time.Millisecond)},
			Starts: []time.Time{at.Add(-30 * time.Minute), at}},
		"ops": {Last: &api.HeartbeatRun{Status: api.RunSkipped, Reason: SkipQuietHours, At: at.Truncate(time.Second)}},
	}}
	fs := NewFileStore(dir, nil)
	for i := range 2 {
		got, err := fs.Load()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("load %d: %#v, %v\nwant %#v", i, got, err, want)
		}
		if err := fs.Save(got); err != nil {
			t.Fatal(err)
		}
	}
}
