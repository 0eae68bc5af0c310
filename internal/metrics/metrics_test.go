package metrics

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/schedd/schedd/internal/api"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func status(st api.Status) func(context.Context) api.Status {
	return func(context.Context) api.Status { return st }
}

// labels gathers m and returns, per family name, the values each label took.
func labels(t *testing.T, m *Metrics) map[string]map[string][]string {
	t.Helper()
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]map[string][]string{}
	for _, f := range fams {
		byLabel := map[string][]string{}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if !slices.Contains(byLabel[l.GetName()], l.GetValue()) {
					byLabel[l.GetName()] = append(byLabel[l.GetName()], l.GetValue())
				}
			}
		}
		out[f.GetName()] = byLabel
	}
	return out
}

// TestLabelsBounded feeds every hook values that must never become label values (IDs,
// error texts, unknown states) and checks that each label keeps to its set, with "other"
// for the rest, while the config names (agent, sink, job) pass as given.
func TestLabelsBounded(t *testing.T) {
	m := New("1.2.3", status(api.Status{
		Gateway:    api.Gateway{State: "weird"},
		Restart:    &api.Restart{Requests: map[api.RestartSource]int64{"cli": 2, "from-a-script-1234": 7}},
		Deliveries: &api.Deliveries{Pending: 3},
		Cron:       &api.Cron{Queued: 1},
	}))
	m.Gateway(api.Gateway{State: api.GatewayStarting, Restarts: 1, LastExit: &api.Exit{Reason: "exit 3 at pid 4242"}})
	m.Gateway(api.Gateway{State: api.GatewayStarting, Restarts: 2, LastExit: &api.Exit{Reason: api.ExitLivenessTimeout}})
	m.Pulse("main", "ok-token sekrit")
	m.Pulse("main", api.RunRan)
	m.PulseLate("main", -time.Second)
	m.Attempt("webhook", "delivered", "", time.Second)
	m.Attempt("webhook", "HTTP 503 from https://user:pass@host/", "permanent error (matches /chat not found/)", 0)
	m.DeadLetter("permanent error (HTTP 404)")
	m.DeadLetter("max_retries")
	m.Commit(0, "disk I/O error: fsync /var/lib/schedd/deliveries.db")
	m.Commit(time.Millisecond, "")
	m.CronEnded("nightly", "exploded")
	m.CronEnded("nightly", api.TaskSucceeded)
	m.CronLate("nightly", time.Second)
	m.RecoveryPass(api.RecoverySummary{Scanned: 1, Recovered: 1})
	m.RestartEnded(api.RestartResult{OK: true, Mode: "deferred", DeferredMs: 1500, Forced: true, DurationMs: 200})

	sets := map[string][]string{
		"reason/schedd_gateway_restarts_total":           exitReasons,
		"state/schedd_gateway_state":                     gatewayStates,
		"source/schedd_gateway_restart_requests_total":   restartSources,
		"status/schedd_heartbeat_pulses_total":           pulseStatuses,
		"result/schedd_delivery_attempts_total":          AttemptResults,
		"class/schedd_delivery_attempts_total":           AttemptClasses,
		"reason/schedd_delivery_dead_letters_total":      DeadReasons,
		"kind/schedd_delivery_store_commit_errors_total": CommitErrorKinds,
		"outcome/schedd_delivery_recovery_entries_total": recoveryOutcomes,
		"state/schedd_cron_runs_total":                   cronEndStates,
		"state/schedd_deliveries_queue_depth":            {"pending", "sending", "dead"},
		"state/schedd_cron_tasks":                        {"queued", "running"},
		"agent/schedd_heartbeat_pulses_total":            {"main"},
		"agent/schedd_heartbeat_lateness_seconds":        {"main"},
		"sink/schedd_delivery_attempts_total":            {"webhook"},
		"sink/schedd_delivery_latency_seconds":           {"webhook"},
		"job/schedd_cron_runs_total":                     {"nightly"},
		"job/schedd_cron_lateness_seconds":               {"nightly"},
		"version/schedd_build_info":                      {"1.2.3"},
		"goversion/schedd_build_info":                    {"go"}, // prefix
	}
	got := labels(t, m)
	for name, byLabel := range got {
		if !strings.HasPrefix(name, "schedd_") {
			continue
		}
		for label, values := range byLabel {
			set, ok := sets[label+"/"+name]
			if !ok {
				t.Errorf("%s has label %s with no declared set", name, label)
				continue
			}
			for _, v := range values {
				switch {
				case label == "goversion" && strings.HasPrefix(v, "go"):
				case label != "agent" && label != "sink" && label != "job" && label != "version" && v == other:
				case !slices.Contains(set, v):
					t.Errorf("%s{%s=%q}: not in %v", name, label, v, set)
				}
			}
		}
	}
	// What fell outside a set was counted as "other", not dropped.
	for _, want := range []struct{ family, label string }{
		{"schedd_gateway_restarts_total", "reason"}, {"schedd_heartbeat_pulses_total", "status"},
		{"schedd_delivery_attempts_total", "result"}, {"schedd_delivery_attempts_total", "class"},
		{"schedd_delivery_dead_letters_total", "reason"}, {"schedd_delivery_store_commit_errors_total", "kind"},
		{"schedd_cron_runs_total", "state"},
	} {
		if !slices.Contains(got[want.family][want.label], other) {
			t.Errorf("%s{%s}: no %q series; got %v", want.family, want.label, other, got[want.family][want.label])
		}
	}
}

// TestNilRecordsNothing: the daemon calls the hooks whether the endpoint is on or not.
func TestNilRecordsNothing(t *testing.T) {
	var m *Metrics
	m.Gateway(api.Gateway{Restarts: 3})
	m.RestartEnded(api.RestartResult{})
	m.Pulse("a", api.RunRan)
	m.PulseLate("a", time.Second)
	m.Attempt("s", "delivered", "none", time.Second)
	m.DeadLetter("expired")
	m.RecoveryPass(api.RecoverySummary{})
	m.Commit(time.Second, "")
	m.CronEnded("j", api.TaskFailed)
	m.CronLate("j", time.Second)
}

// TestGatewayCountsOnce: the supervisor reports each state change with the whole snapshot;
// a restart and a time to ready are counted once however often the snapshot repeats.
func TestGatewayCountsOnce(t *testing.T) {
	m := New("v", status(api.Status{}))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ready := api.Gateway{State: api.GatewayReady, StartedAt: t0, ReadySince: t0.Add(1500 * time.Millisecond)}
	m.Gateway(api.Gateway{State: api.GatewayStarting, StartedAt: t0})
	m.Gateway(ready)
	m.Gateway(ready)
	restarted := api.Gateway{State: api.GatewayStarting, StartedAt: t0.Add(time.Minute), Restarts: 1,
		LastExit: &api.Exit{Reason: api.ExitRestart}}
	m.Gateway(restarted)
	m.Gateway(restarted)
	fams, _ := m.reg.Gather()
	for _, f := range fams {
		switch f.GetName() {
		case "schedd_gateway_start_duration_seconds":
			h := f.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != 1 || h.GetSampleSum() != 1.5 {
				t.Errorf("start duration: %d samples summing to %v, want 1 of 1.5", h.GetSampleCount(), h.GetSampleSum())
			}
		case "schedd_gateway_restarts_total":
			for _, mt := range f.GetMetric() {
				want := 0.0
				if mt.GetLabel()[0].GetValue() == "restart" {
					want = 1
				}
				if v := mt.GetCounter().GetValue(); v != want {
					t.Errorf("restarts{reason=%s} = %v, want %v", mt.GetLabel()[0].GetValue(), v, want)
				}
			}
		}
	}
}

// TestServe: /metrics answers GET in the text format and nothing else; the server stops
// with its context.
func TestServe(t *testing.T) {
	m := New("v9", status(api.Status{Gateway: api.Gateway{State: api.GatewayReady}}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(method, path string) (int, string) {
		req, _ := http.NewRequest(method, base+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("GET", "/metrics")
	for _, want := range []string{`schedd_build_info{goversion="go`, "schedd_gateway_up 1", "go_goroutines ", "process_"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("GET /metrics = %d, body lacks %q:\n%.2000s", code, want, body)
		}
	}
	if code, _ := get("POST", "/metrics"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics = %d, want 405", code)
	}
	if code, _ := get("GET", "/"); code != http.StatusNotFound {
		t.Errorf("GET / without ServePage = %d, want 404", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestRestartEnded: every restart's duration is observed; the idle wait only for one that
// waited, and a forced one is counted.
func TestRestartEnded(t *testing.T) {
	m := New("v", status(api.Status{}))
	m.RestartEnded(api.RestartResult{OK: true, Mode: "immediate", DurationMs: 250})
	m.RestartEnded(api.RestartResult{OK: true, Mode: "deferred", DeferredMs: 90_000, Forced: true, DurationMs: 1250})
	fams, _ := m.reg.Gather()
	got := map[string]string{}
	for _, f := range fams {
		mt := f.GetMetric()
		if len(mt) == 0 {
			continue
		}
		if h := mt[0].GetHistogram(); h != nil {
			got[f.GetName()] = fmt.Sprintf("%d/%g", h.GetSampleCount(), h.GetSampleSum())
		} else if c := mt[0].GetCounter(); c != nil {
			got[f.GetName()] = fmt.Sprint(c.GetValue())
		}
	}
	for name, want := range map[string]string{
		"schedd_gateway_restart_duration_seconds": "2/1.5",
		"schedd_gateway_restart_deferral_seconds": "1/90",
		"schedd_gateway_forced_restarts_total":    "1",
	} {
		if got[name] != want {
			t.Errorf("%s = %s, want %s", name, got[name], want)
		}
	}
}

// TestStatusGauges: the store's health, each agent's next pulse and each cron job's run of
// failures are read from the status, for the alert rules.
func TestStatusGauges(t *testing.T) {
	due := time.Date(2026, 3, 1, 12, 0, 0, 500_000_000, time.UTC)
	down := false
	st := api.Status{
		Deliveries: &api.Deliveries{Connected: &down},
		Heartbeat:  &api.Heartbeat{Agents: []api.AgentStatus{{ID: "main", NextDueAt: &due}, {ID: "quiet"}}},
		Cron:       &api.Cron{Jobs: []api.CronJob{{Name: "nightly", ConsecutiveFailures: 3}, {Name: "hourly"}}},
	}
	values := func() map[string]float64 {
		fams, err := New("v", status(st)).reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, f := range fams {
			for _, mt := range f.GetMetric() {
				key := f.GetName()
				for _, l := range mt.GetLabel() {
					key += "/" + l.GetValue()
				}
				out[key] = mt.GetGauge().GetValue()
			}
		}
		return out
	}
	got := values()
	for key, want := range map[string]float64{
		"schedd_delivery_store_up":                         0,
		"schedd_heartbeat_next_due_timestamp_seconds/main": 1772366400.5,
		"schedd_cron_job_consecutive_failures/nightly":     3,
		"schedd_cron_job_consecutive_failures/hourly":      0,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, want)
		}
	}
	if _, ok := got["schedd_heartbeat_next_due_timestamp_seconds/quiet"]; ok {
		t.Error("an agent with no next pulse has a next-due series")
	}
	// A sqlite store (no connection) that reads fine is up; one that cannot be read is not.
	st.Deliveries = &api.Deliveries{}
	if v := values()["schedd_delivery_store_up"]; v != 1 {
		t.Errorf("readable sqlite store: up = %v, want 1", v)
	}
	st.Deliveries = &api.Deliveries{ReadError: &api.StoreError{Message: "disk I/O error"}}
	if v := values()["schedd_delivery_store_up"]; v != 0 {
		t.Errorf("unreadable store: up = %v, want 0", v)
	}
}
