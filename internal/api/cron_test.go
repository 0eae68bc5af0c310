package api

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestTaskStateValidTerminal(t *testing.T) {
	for _, s := range []TaskState{TaskQueued, TaskRunning, TaskSucceeded, TaskFailed, TaskTimedOut, TaskCancelled, TaskSkipped, TaskLost} {
		if !s.Valid() {
			t.Errorf("%s not valid", s)
		}
		if s.Terminal() == (s == TaskQueued || s == TaskRunning) {
			t.Errorf("%s: terminal %v", s, s.Terminal())
		}
	}
	if TaskState("done").Valid() || TaskState("done").Terminal() {
		t.Error("an unknown state passes")
	}
}

// Unset instants are null, never year 1.
func TestCronJSONNulls(t *testing.T) {
	b, _ := json.Marshal(CronJob{Name: "j"})
	for _, f := range []string{`"next_run_at":null`, `"last":null`} {
		if !strings.Contains(string(b), f) {
			t.Errorf("%s lacks %s", b, f)
		}
	}
	b, _ = json.Marshal(Task{ID: 1, Kind: KindManual})
	for _, f := range []string{`"slot":null`, `"started_at":null`, `"ended_at":null`} {
		if !strings.Contains(string(b), f) {
			t.Errorf("%s lacks %s", b, f)
		}
	}
}
