package api

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestGatewayJSON: unset times and a zero pid are null, never 0 or year 1, and what is
// written reads back the same.
func TestGatewayJSON(t *testing.T) {
	b, err := json.Marshal(Gateway{State: GatewayBackoff, Restarts: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{`"pid":null`, `"started_at":null`, `"ready_since":null`, `"next_start_at":null`, `"last_exit":null`, `"inflight":null`, `"history":[]`} {
		if !strings.Contains(string(b), f) {
			t.Errorf("%s lacks %s", b, f)
		}
	}
	at := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	code, n := 3, 2
	in := Gateway{State: GatewayReady, PID: 42, StartedAt: at, ReadySince: at.Add(time.Second), Restarts: 1,
		ConsecutiveFailures: 1, NextStartAt: at.Add(time.Minute), StatusText: "ok", Inflight: &n,
		LastExit: &Exit{Reason: ExitExited, Code: &code, At: at, PID: 41},
		History: []GatewayRun{{StartedAt: at.Add(-time.Hour), PID: 41, Exit: &Exit{Reason: ExitExited, Code: &code, At: at, PID: 41}},
			{StartedAt: at, PID: 42}}}
	b, err = json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Gateway
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n in %+v\nout %+v", in, out)
	}
}

func TestDeliveryStateValid(t *testing.T) {
	for _, s := range []DeliveryState{DeliveryPending, DeliverySending, DeliveryDelivered, DeliveryDead} {
		if !s.Valid() {
			t.Errorf("%s not valid", s)
		}
	}
	if DeliveryState("done").Valid() || DeliveryState("").Valid() {
		t.Error("an unknown state is valid")
	}
}
