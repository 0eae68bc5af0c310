package cron

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

func runAct(t *testing.T, a Action, d *Deps) outcome {
	t.Helper()
	if err := a.Check(d); err != nil {
		t.Fatal(err)
	}
	s := &Service{deps: *d}
	return s.runAction(context.Background(), a, RunInfo{Job: "j", RunKey: "j@2026-01-01T00:00:00Z", Attempt: 1}, time.Minute)
}

// http: 2xx succeeds with the body kept; 429 and 5xx are transient, other statuses
// permanent; a redirect is not followed; headers and the run key as idempotency key are
// sent; no header value or query appears in an error.
func TestHTTPAction(t *testing.T) {
	var got *http.Request
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		switch r.URL.Path {
		case "/ok":
			io.WriteString(w, "fine")
		case "/busy":
			w.WriteHeader(http.StatusTooManyRequests)
		case "/down":
			w.WriteHeader(http.StatusBadGateway)
		case "/moved":
			http.Redirect(w, r, "/ok", http.StatusFound)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	d := &Deps{HTTPClient: newHTTPClient()}
	defer d.HTTPClient.CloseIdleConnections()
	o := runAct(t, &HTTP{URL: srv.URL + "/ok?token=s3cret", Headers: map[string]string{"Authorization": "Bearer s3cret"}, Body: []byte("hello")}, d)
	if o.state != api.TaskSucceeded || o.res.HTTPStatus != 200 || string(o.res.Output) != "fine" {
		t.Fatalf("ok: %+v", o)
	}
	if got.Method != http.MethodPost || body != "hello" || got.Header.Get("Authorization") != "Bearer s3cret" ||
		got.Header.Get(IdempotencyHeader) != "cron:j@2026-01-01T00:00:00Z" {
		t.Fatalf("request %s %q %v", got.Method, body, got.Header)
	}
	if o := runAct(t, &HTTP{URL: srv.URL + "/ok"}, d); got.Method != http.MethodGet || o.state != api.TaskSucceeded {
		t.Fatalf("no body: %s", got.Method)
	}
	for path, class := range map[string]Class{"/busy": Transient, "/down": Transient, "/missing": Permanent, "/moved": Permanent} {
		o := runAct(t, &HTTP{URL: srv.URL + path + "?token=s3cret", Headers: map[string]string{"X-Key": "s3cret"}}, d)
		if o.state != api.TaskFailed || o.class != class || o.res.HTTPStatus == 0 {
			t.Errorf("%s: %+v", path, o)
		}
		if strings.Contains(o.err, "s3cret") {
			t.Errorf("%s: a secret in the error %q", path, o.err)
		}
	}
	if got.URL.Path == "/ok" {
		t.Error("the redirect was followed")
	}
	srv.Close()
	o = runAct(t, &HTTP{URL: srv.URL + "/ok?token=s3cret"}, d)
	if o.state != api.TaskFailed || o.class != Transient || strings.Contains(o.err, "s3cret") {
		t.Fatalf("connection refused: %+v", o)
	}
	if err := (&HTTP{URL: "ftp://x"}).Check(d); err == nil {
		t.Error("an ftp URL passed Check")
	}
}

// deliver succeeds once the delivery is stored, under the run's idempotency key; its
// errors are transient unless marked permanent.
func TestDeliverAction(t *testing.T) {
	var req DeliverRequest
	d := &Deps{Deliver: func(_ context.Context, r DeliverRequest) (int64, error) {
		req = r
		if r.Sink == "gone" {
			return 0, PermanentError(errors.New("unknown sink"))
		}
		return 42, nil
	}}
	o := runAct(t, &Deliver{Sink: "hook", Data: []byte("payload")}, d)
	if o.state != api.TaskSucceeded || string(o.res.Output) != "delivery 42 stored" ||
		req.Sink != "hook" || req.Key != "cron:j@2026-01-01T00:00:00Z" || string(req.Data) != "payload" {
		t.Fatalf("%+v %+v", o, req)
	}
	if o := runAct(t, &Deliver{Sink: "gone"}, d); o.state != api.TaskFailed || o.class != Permanent {
		t.Fatalf("gone: %+v", o)
	}
	if err := (&Deliver{Sink: "hook"}).Check(&Deps{}); err == nil {
		t.Error("no delivery service passed Check")
	}
}

// heartbeat_wake asks for a wake with the reason "cron:<job>" unless one is set.
func TestHeartbeatWakeAction(t *testing.T) {
	var agent, reason string
	d := &Deps{Wake: func(_ context.Context, a, r string) error { agent, reason = a, r; return nil }}
	if o := runAct(t, &HeartbeatWake{Agent: "main"}, d); o.state != api.TaskSucceeded || agent != "main" || reason != "cron:j" {
		t.Fatalf("%+v %s %s", o, agent, reason)
	}
	runAct(t, &HeartbeatWake{Reason: "nightly"}, d)
	if agent != "" || reason != "nightly" {
		t.Fatalf("%s %s", agent, reason)
	}
	if err := (&HeartbeatWake{}).Check(&Deps{}); err == nil {
		t.Error("no dispatcher passed Check")
	}
}

// A panicking action is a permanent failure, not a crash.
func TestPanicIsFailure(t *testing.T) {
	o := runAct(t, panicky{}, &Deps{})
	if o.state != api.TaskFailed || o.class != Permanent || o.err != "panic: oops" {
		t.Fatalf("%+v", o)
	}
}

type panicky struct{}

func (panicky) Kind() string      { return "panicky" }
func (panicky) Check(*Deps) error { return nil }
func (panicky) Run(context.Context, *Deps, RunInfo) (Result, error) {
	panic("oops")
}

// New refuses bad jobs, naming each and its field.
func TestNewRefusesBadJobs(t *testing.T) {
	sched := every{period: time.Minute}
	_, err := New(configured(Config{OpenStore: sqliteAt(t.TempDir()), Jobs: []Job{
		{Name: "", Schedule: sched, Action: &fakeAction{}},
		{Name: "a b", Schedule: sched, Action: &fakeAction{}},
		{Name: "ok", Schedule: sched, Action: &fakeAction{}},
		{Name: "ok", Schedule: sched, Action: &fakeAction{}},
		{Name: "nosched", Action: &fakeAction{}},
		{Name: "bad", Schedule: sched, Missed: "all", Concurrency: "queue", Jitter: -1, Action: &Exec{}},
		{Name: "wake", Schedule: sched, Action: &HeartbeatWake{}},
	}}))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"cron job 1: empty name", `cron job 2: name "a b"`, "cron job ok: defined twice",
		"cron job nosched: no schedule", `cron job bad: missed "all"`, `concurrency "queue"`, "jitter -1ns is negative",
		"action exec: empty command", "cron job wake: action heartbeat_wake: no heartbeat dispatcher"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
