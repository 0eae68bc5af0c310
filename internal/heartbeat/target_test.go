package heartbeat

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

func samplePulse() Pulse {
	return Pulse{
		AgentID: "main", SessionKey: "agent:main:main", Reason: "cron:nightly", ReasonKind: KindCron,
		Visibility: DefaultVisibility, ScheduledAt: utc("2026-05-01T10:15:00Z"), Attempt: 2,
	}
}

// httpTransports are the two ways an http target is pulsed: over the service's own
// connections (plain http://) and through an *http.Client (everything else).
var httpTransports = []struct {
	name string
	wire bool
}{{"wire", true}, {"net/http", false}}

// newTestHTTPPulser builds the pulser over the transport named, with its cleanup.
func newTestHTTPPulser(t *testing.T, wire bool, target *HTTPTarget) *httpPulser {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	var pool *wirePool
	if wire {
		pool = newWirePool()
		t.Cleanup(func() { pool.closeIdle(true) })
	}
	h := newHTTPPulser(target, client, pool, DefaultHTTPTimeout)
	if (h.wire != nil) != wire {
		t.Fatalf("target %s: wire %v, want %v", target.URL, h.wire != nil, wire)
	}
	return h
}

// deadline is when a pulse to target started now times out.
func deadline(target pulser) time.Time { return time.Now().Add(target.timeout()) }

func TestHTTPTarget(t *testing.T) {
	for _, tr := range httpTransports {
		t.Run(tr.name, func(t *testing.T) { testHTTPTarget(t, tr.wire) })
	}
}

func testHTTPTarget(t *testing.T, wire bool) {
	type reply struct {
		code int
		body string
	}
	var answer reply
	var got struct {
		method, path, ctype, auth string
		pulse                     Pulse
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got.method, got.path, got.ctype, got.auth = r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Authorization")
		got.pulse = Pulse{}
		_ = json.Unmarshal(body, &got.pulse)
		w.WriteHeader(answer.code)
		_, _ = io.WriteString(w, answer.body)
	}))
	defer srv.Close()
	target := newTestHTTPPulser(t, wire, &HTTPTarget{URL: srv.URL + "/hooks/wake", Headers: map[string]string{"Authorization": "Bearer s3cret"}})
	if target.timeout() != DefaultHTTPTimeout || target.method != http.MethodPost {
		t.Fatalf("defaults: %+v", target)
	}
	long := strings.Repeat("é", 150)
	for _, tc := range []struct {
		name    string
		reply   reply
		outcome outcome
		reason  string
		event   string
	}{
		{"204 ran", reply{204, ""}, outcomeRan, "", ""},
		{"200 with event", reply{200, `{"status":"sent","preview":"` + long + `"}`}, outcomeRan, "", EventSent},
		{"200 skipped event still ran", reply{200, `{"status":"skipped","reason":"duplicate"}`}, outcomeRan, "", EventSkipped},
		{"busy reply", reply{200, `{"status":"skipped","reason":"requests-in-flight"}`}, outcomeBusy, SkipRequestsInFlight, EventSkipped},
		{"failed reply", reply{200, `{"status":"failed","reason":"model down"}`}, outcomeFailed, "model down", EventFailed},
		{"429 busy", reply{429, ""}, outcomeBusy, SkipRequestsInFlight, ""},
		{"503 busy with reason", reply{503, `{"status":"skipped","reason":"lanes-busy"}`}, outcomeBusy, "lanes-busy", ""},
		{"500 failed", reply{500, "oops"}, outcomeFailed, "http status 500", ""},
		{"404 failed", reply{404, ""}, outcomeFailed, "http status 404", ""},
		{"non-JSON body ran", reply{200, "ok"}, outcomeRan, "", ""},
	} {
		answer = tc.reply
		res := target.pulse(t.Context(), deadline(target), samplePulse())
		if res.outcome != tc.outcome || res.reason != tc.reason {
			t.Errorf("%s: %+v, want outcome %d reason %q", tc.name, res, tc.outcome, tc.reason)
		}
		if ev := res.event; (ev == nil) != (tc.event == "") || (ev != nil && ev.Status != tc.event) {
			t.Errorf("%s: event %+v, want %q", tc.name, ev, tc.event)
		}
		if res.event != nil && len(res.event.Preview) > maxPreview {
			t.Errorf("%s: preview of %d bytes", tc.name, len(res.event.Preview))
		}
		if got.method != "POST" || got.path != "/hooks/wake" || got.ctype != "application/json" ||
			got.auth != "Bearer s3cret" || got.pulse != samplePulse() {
			t.Fatalf("%s: request %+v", tc.name, got)
		}
	}
}

func TestHTTPTargetTimeoutAndRefused(t *testing.T) {
	for _, tr := range httpTransports {
		t.Run(tr.name, func(t *testing.T) { testHTTPTargetTimeoutAndRefused(t, tr.wire) })
	}
}

func testHTTPTargetTimeoutAndRefused(t *testing.T, wire bool) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // lets the server notice the client hanging up
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	target := newTestHTTPPulser(t, wire, &HTTPTarget{URL: srv.URL, Method: "put", Timeout: 50 * time.Millisecond})
	res := target.pulse(t.Context(), deadline(target), samplePulse())
	if res.outcome != outcomeFailed || res.reason != reasonTimeout {
		t.Fatalf("hung target: %+v", res)
	}
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(20*time.Millisecond, cancel)
	res = target.pulse(ctx, time.Now().Add(time.Minute), samplePulse())
	if res.outcome != outcomeFailed || res.reason != reasonStopped {
		t.Fatalf("hung target, service stopping: %+v", res)
	}
	close(release)
	srv.Close()
	res = target.pulse(t.Context(), deadline(target), samplePulse())
	if res.outcome != outcomeFailed || !strings.HasPrefix(res.reason, "http: ") || strings.Contains(res.reason, srv.URL) {
		t.Fatalf("refused: %+v (the reason must not carry the URL)", res)
	}
}

func TestExecTargetClassifies(t *testing.T) {
	for _, tc := range []struct {
		name    string
		code    int
		stdout  string
		err     error
		outcome outcome
		reason  string
		event   string
	}{
		{"exit 0", 0, "", nil, outcomeRan, "", ""},
		{"exit 0 with event", 0, `{"status":"ok-empty"}`, nil, outcomeRan, "", EventOKEmpty},
		{"exit 75 busy", ExitBusy, "", nil, outcomeBusy, SkipRequestsInFlight, ""},
		{"busy reply", 0, `{"status":"skipped","reason":"requests-in-flight"}`, nil, outcomeBusy, SkipRequestsInFlight, EventSkipped},
		{"exit 3 failed", 3, "", nil, outcomeFailed, "exit status 3", ""},
		{"start error", -1, "", io.ErrUnexpectedEOF, outcomeFailed, io.ErrUnexpectedEOF.Error(), ""},
	} {
		var gotArgv, gotEnv []string
		var gotStdin []byte
		run := func(ctx context.Context, argv, env []string, stdin []byte) (int, []byte, error) {
			gotArgv, gotEnv, gotStdin = argv, env, stdin
			return tc.code, []byte(tc.stdout), tc.err
		}
		target, err := newPulser(&Target{Exec: &ExecTarget{Command: []string{"notify", "--now"}}}, nil, nil, run)
		if err != nil {
			t.Fatal(err)
		}
		res := target.pulse(t.Context(), deadline(target), samplePulse())
		if res.outcome != tc.outcome || res.reason != tc.reason {
			t.Errorf("%s: %+v, want outcome %d reason %q", tc.name, res, tc.outcome, tc.reason)
		}
		if ev := res.event; (ev == nil) != (tc.event == "") || (ev != nil && ev.Status != tc.event) {
			t.Errorf("%s: event %+v, want %q", tc.name, ev, tc.event)
		}
		var p Pulse
		if err := json.Unmarshal(gotStdin, &p); err != nil || p != samplePulse() || strings.Join(gotArgv, " ") != "notify --now" ||
			envValue(gotEnv, "SCHEDD_REASON_KIND") != "cron" || envValue(gotEnv, "SCHEDD_SESSION_KEY") != "agent:main:main" {
			t.Fatalf("%s: ran %v with env %v and stdin %s", tc.name, gotArgv, gotEnv, gotStdin)
		}
	}
}

// TestExecTargetRealProcess pulses the test binary itself: it checks that the SCHEDD_*
// environment matches the pulse on stdin and answers with an event and an exit code.
func TestExecTargetRealProcess(t *testing.T) {
	target, err := newPulser(&Target{Exec: &ExecTarget{Command: []string{"0", `{"status":"sent","preview":"hi"}`}}}, nil, nil, helperRun("target"))
	if err != nil {
		t.Fatal(err)
	}
	res := target.pulse(t.Context(), deadline(target), samplePulse())
	if res.outcome != outcomeRan || res.event == nil || res.event.Status != EventSent || res.event.Preview != "hi" {
		t.Fatalf("real exec target: %+v (event %+v)", res, res.event)
	}
}

func TestExecTargetTimeout(t *testing.T) {
	target := &execPulser{argv: []string{"x"}, limit: 100 * time.Millisecond, run: helperRun("hang")}
	if res := target.pulse(t.Context(), deadline(target), samplePulse()); res.outcome != outcomeFailed || res.reason != reasonTimeout {
		t.Fatalf("hung command: %+v", res)
	}
}

func TestPulseJSONShape(t *testing.T) {
	data, err := json.Marshal(samplePulse())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"agent_id":"main","session_key":"agent:main:main","reason":"cron:nightly","reason_kind":"cron",` +
		`"visibility":{"show_ok":false,"show_alerts":true,"use_indicator":true},"scheduled_at":"2026-05-01T10:15:00Z","attempt":2}`
	if string(data) != want {
		t.Fatalf("pulse JSON\n got %s\nwant %s", data, want)
	}
}

// TestServiceHTTPTargetEndToEnd runs a service on real time against an HTTP target: a
// manual wake arrives after the coalescing window.
func TestServiceHTTPTargetEndToEnd(t *testing.T) {
	got := make(chan Pulse, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p Pulse
		_ = json.NewDecoder(r.Body).Decode(&p)
		got <- p
	}))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	cfg := Config{Seed: testSeed, Defaults: AgentConfig{Every: "1h", Target: &Target{HTTP: &HTTPTarget{URL: srv.URL}}}}
	svc, err := New(cfg, Deps{HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	defer runService(t, svc)()
	if err := svc.Wake(WakeRequest{Reason: "manual"}); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-got:
		if p.AgentID != DefaultAgentID || p.Reason != "manual" || p.Attempt != 1 {
			t.Fatalf("pulse %+v", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no pulse")
	}
}

func TestPulseJSONMatchesEncodingJSON(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC)
	for _, p := range []Pulse{
		{},
		{AgentID: "main", SessionKey: "agent:main:main", Reason: "interval", ReasonKind: KindInterval,
			Visibility: DefaultVisibility, ScheduledAt: at, Attempt: 1},
		{AgentID: "ops", Reason: "hook:deploy v2", ReasonKind: KindHook, ScheduledAt: at.Truncate(time.Second), Attempt: 12},
	} {
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.appendJSON(nil); string(got) != string(want) {
			t.Errorf("appendJSON:\n got %s\nwant %s", got, want)
		}
	}
}

// FuzzPulseJSON: the hand-written encoding decodes to what encoding/json's does, for any
// strings (quotes, control characters, invalid UTF-8).
func FuzzPulseJSON(f *testing.F) {
	f.Add("main", "agent:main:main", "manual", int64(0), 1)
	f.Add("a\"b", "x\\y\n", "héllo \u2028 <&>", int64(1e18), -3)
	f.Add("\xff\xfe", "\x00", "", int64(-1), 0)
	f.Fuzz(func(t *testing.T, agent, session, reason string, ns int64, attempt int) {
		p := Pulse{AgentID: agent, SessionKey: session, Reason: reason, ReasonKind: KindOf(reason),
			ScheduledAt: time.Unix(0, ns).UTC(), Attempt: attempt, Visibility: ResolvedVisibility{ShowOK: ns%2 == 0}}
		want, err := json.Marshal(p)
		if err != nil {
			t.Skip() // a time outside what RFC 3339 can write
		}
		got := p.appendJSON(nil)
		var a, b Pulse
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("appendJSON wrote invalid JSON %q: %v", got, err)
		}
		if err := json.Unmarshal(want, &b); err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Fatalf("decoded %+v, encoding/json gives %+v", a, b)
		}
	})
}

func TestPulseEnv(t *testing.T) {
	p := Pulse{AgentID: "main", SessionKey: "agent:main:x", Reason: "hook:deploy", ReasonKind: KindHook,
		Visibility: DefaultVisibility, ScheduledAt: time.Date(2026, 5, 1, 10, 0, 0, 5e8, time.FixedZone("X", 3600)), Attempt: 3}
	want := []string{"SCHEDD_AGENT_ID=main", "SCHEDD_SESSION_KEY=agent:main:x", "SCHEDD_REASON=hook:deploy",
		"SCHEDD_REASON_KIND=hook", "SCHEDD_VISIBILITY=show_alerts,use_indicator",
		"SCHEDD_SCHEDULED_AT=2026-05-01T09:00:00.5Z", "SCHEDD_ATTEMPT=3"}
	if got := PulseEnv(p); !slices.Equal(got, want) {
		t.Fatalf("PulseEnv =\n%q\nwant\n%q", got, want)
	}
}
