package heartbeat

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

func samplePulse() Pulse {
	return Pulse{
		AgentID: "main", SessionKey: "agent:main:main", Reason: "cron:nightly", ReasonKind: KindCron,
		Visibility: DefaultVisibility, ScheduledAt: utc("2026-05-01T10:15:00Z"), Attempt: 2,
	}
}

// testTimeout is the targets' timeout in these tests, where the config's default is not
// applied; testMethod the method.
const (
	testTimeout = 10 * time.Second
	testMethod  = http.MethodPost
)

// newTestHTTPPulser builds the pulser over a client like the service's own, with
// testMethod and testTimeout where target leaves them unset.
func newTestHTTPPulser(t *testing.T, target *HTTPTarget) *httpPulser {
	t.Helper()
	client := newHTTPClient()
	t.Cleanup(client.CloseIdleConnections)
	tg := *target
	if tg.Method == "" {
		tg.Method = testMethod
	}
	if tg.Timeout == 0 {
		tg.Timeout = testTimeout
	}
	return newHTTPPulser(&tg, client)
}

func TestHTTPTarget(t *testing.T) {
	type reply struct {
		code   int
		body   string
		header map[string]string
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
		for k, v := range answer.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(answer.code)
		_, _ = io.WriteString(w, answer.body)
	}))
	defer srv.Close()
	target := newTestHTTPPulser(t, &HTTPTarget{URL: srv.URL + "/hooks/wake", Headers: map[string]string{"Authorization": "Bearer s3cret"}})
	long := strings.Repeat("é", 150)
	for _, tc := range []struct {
		name    string
		reply   reply
		outcome outcome
		reason  string
		event   string
	}{
		{"204 ran", reply{204, "", nil}, outcomeRan, "", ""},
		{"200 with event", reply{200, `{"status":"sent","preview":"` + long + `"}`, nil}, outcomeRan, "", EventSent},
		{"event after blanks", reply{200, "\r\n  {\"status\":\"ok-token\"}\n", nil}, outcomeRan, "", EventOKToken},
		{"200 skipped event still ran", reply{200, `{"status":"skipped","reason":"duplicate"}`, nil}, outcomeRan, "", EventSkipped},
		{"unknown event status ran", reply{200, `{"status":"great"}`, nil}, outcomeRan, "", ""},
		{"busy reply", reply{200, `{"status":"skipped","reason":"requests-in-flight"}`, nil}, outcomeBusy, SkipRequestsInFlight, EventSkipped},
		{"failed reply", reply{200, `{"status":"failed","reason":"model down"}`, nil}, outcomeFailed, "model down", EventFailed},
		{"failed reply without reason", reply{200, `{"status":"failed"}`, nil}, outcomeFailed, "target reported failure", EventFailed},
		{"429 busy", reply{429, "", nil}, outcomeBusy, SkipRequestsInFlight, ""},
		{"503 busy with reason", reply{503, `{"status":"skipped","reason":"lanes-busy"}`, nil}, outcomeBusy, "lanes-busy", ""},
		{"503 busy, other reason", reply{503, `{"status":"skipped","reason":"tired"}`, nil}, outcomeBusy, SkipRequestsInFlight, ""},
		{"500 failed", reply{500, "oops", nil}, outcomeFailed, "http status 500", ""},
		{"404 failed", reply{404, "", nil}, outcomeFailed, "http status 404", ""},
		{"redirect not followed", reply{302, "", map[string]string{"Location": "/elsewhere"}}, outcomeFailed, "http status 302", ""},
		{"reply cut short", reply{200, `{"status":"sent"}`, map[string]string{"Content-Length": "100"}}, outcomeFailed, "http: unexpected EOF", ""},
		{"non-JSON body ran", reply{200, "ok", nil}, outcomeRan, "", ""},
	} {
		answer = tc.reply
		res := target.pulse(t.Context(), samplePulse())
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

// TestHTTPTargetReplyCap: a reply is read up to maxReply, never to its end: a target that
// answers an event and then streams forever costs one capped read, not the pulse's timeout.
func TestHTTPTargetReplyCap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"status":"sent","preview":"hi"}`)
		blanks := []byte(strings.Repeat(" ", 4096))
		for r.Context().Err() == nil {
			if _, err := w.Write(blanks); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	target := newTestHTTPPulser(t, &HTTPTarget{URL: srv.URL, Timeout: 5 * time.Second})
	res := target.pulse(t.Context(), samplePulse())
	if res.outcome != outcomeRan || res.event == nil || res.event.Status != EventSent || res.event.Preview != "hi" {
		t.Fatalf("endless reply: %+v (event %+v)", res, res.event)
	}
}

// TestHTTPTargetRequest: the request carries the configured method (any case), path and
// query, the headers (canonical names, values trimmed; Host and Content-Length come from
// the request itself) and the pulse as its JSON body.
func TestHTTPTargetRequest(t *testing.T) {
	type seen struct {
		method, uri, host string
		length            int64
		header            http.Header
		body              string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.RequestURI, r.Host, r.ContentLength, r.Header, string(body)}
		if r.Method == http.MethodHead {
			w.Header().Set("Content-Length", "10") // how long a GET's reply would be; none follows
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	headers := map[string]string{"authorization": "Bearer s3cret", "X-Trim": "  padded\t", "content-type": "application/x-pulse",
		"Host": "ignored.example", "Content-Length": "999", "X-Empty": ""}
	body, _ := json.Marshal(samplePulse())
	for _, method := range []string{"post", "PUT", "Patch", "HEAD"} {
		target := newTestHTTPPulser(t, &HTTPTarget{URL: srv.URL + "/sub%20dir?a=1&b=%2F", Method: method, Headers: headers})
		if res := target.pulse(t.Context(), samplePulse()); res.outcome != outcomeRan {
			t.Fatalf("%s: %+v", method, res)
		}
		r := <-got
		r.header.Del("Accept-Encoding") // net/http's own, but for HEAD
		want := http.Header{"Authorization": {"Bearer s3cret"}, "X-Trim": {"padded"}, "Content-Type": {"application/x-pulse"},
			"X-Empty": {""}, "User-Agent": {"schedd-heartbeat"}, "Content-Length": {strconv.Itoa(len(body))}}
		if r.method != strings.ToUpper(method) || r.uri != "/sub%20dir?a=1&b=%2F" || r.host != srv.Listener.Addr().String() ||
			r.length != int64(len(body)) || r.body != string(body) || !reflect.DeepEqual(r.header, want) {
			t.Fatalf("%s: request %+v\nwant headers %v", method, r, want)
		}
	}
}

func TestHTTPTargetTimeoutAndRefused(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // lets the server notice the client hanging up
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	target := newTestHTTPPulser(t, &HTTPTarget{URL: srv.URL, Method: "put", Timeout: 50 * time.Millisecond})
	res := target.pulse(t.Context(), samplePulse())
	if res.outcome != outcomeFailed || res.reason != reasonTimeout {
		t.Fatalf("hung target: %+v", res)
	}
	patient := newTestHTTPPulser(t, &HTTPTarget{URL: srv.URL, Timeout: time.Minute})
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(20*time.Millisecond, cancel)
	res = patient.pulse(ctx, samplePulse())
	if res.outcome != outcomeFailed || res.reason != reasonStopped {
		t.Fatalf("hung target, service stopping: %+v", res)
	}
	close(release)
	srv.Close()
	res = target.pulse(t.Context(), samplePulse())
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
		target, err := newPulser(&Target{Exec: &ExecTarget{Command: []string{"notify", "--now"}, Timeout: testTimeout}}, nil, runner(run), nil)
		if err != nil {
			t.Fatal(err)
		}
		res := target.pulse(t.Context(), samplePulse())
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
	target, err := newPulser(&Target{Exec: &ExecTarget{Command: []string{"0", `{"status":"sent","preview":"hi"}`}, Timeout: testTimeout}}, nil, helperRun("target"), nil)
	if err != nil {
		t.Fatal(err)
	}
	res := target.pulse(t.Context(), samplePulse())
	if res.outcome != outcomeRan || res.event == nil || res.event.Status != EventSent || res.event.Preview != "hi" {
		t.Fatalf("real exec target: %+v (event %+v)", res, res.event)
	}
}

func TestExecTargetTimeout(t *testing.T) {
	target := &execPulser{argv: []string{"x"}, limit: 100 * time.Millisecond, run: helperRun("hang")}
	if res := target.pulse(t.Context(), samplePulse()); res.outcome != outcomeFailed || res.reason != reasonTimeout {
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
	cfg := Config{Seed: testSeed, Defaults: AgentConfig{Every: "1h", Target: &Target{HTTP: &HTTPTarget{URL: srv.URL, Method: testMethod, Timeout: testTimeout}}}}
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

// TestServiceHTTPBursts runs a service on real time with its own client: every round wakes
// all agents, and the target holds each pulse until all of them arrived, so they are in
// flight together. The pulses of later rounds reuse the first round's connections (the
// default transport would keep two and dial the rest again), the event one agent's reply
// carries is recorded, and Run's end closes the connections it kept.
func TestServiceHTTPBursts(t *testing.T) {
	const agents = 8
	type barrier struct {
		mu      sync.Mutex
		arrived int
		all     chan struct{}
	}
	var current atomic.Pointer[barrier]
	var conns, closed atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p Pulse
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		b := current.Load()
		b.mu.Lock()
		if b.arrived++; b.arrived == agents {
			close(b.all)
		}
		b.mu.Unlock()
		select {
		case <-b.all:
		case <-r.Context().Done():
			return
		}
		if p.AgentID == "a0" {
			_, _ = io.WriteString(w, `{"status":"sent"}`)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			conns.Add(1)
		case http.StateClosed:
			closed.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	cfg := Config{Seed: testSeed, Defaults: AgentConfig{Every: "1h", Target: &Target{HTTP: &HTTPTarget{URL: srv.URL, Method: testMethod, Timeout: testTimeout}}}}
	for i := range agents {
		cfg.Agents = append(cfg.Agents, AgentConfig{ID: fmt.Sprintf("a%d", i)})
	}
	svc, err := New(cfg, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	stop := runService(t, svc)
	for round := 1; round <= 3; round++ {
		current.Store(&barrier{all: make(chan struct{})})
		began := time.Now()
		if err := svc.Wake(WakeRequest{Reason: ReasonManual}); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			st, ran := svc.Status(), 0
			for _, a := range st.Agents {
				if a.Last != nil && a.Last.Status == api.RunRan && !a.Last.At.Before(began) {
					ran++
				}
			}
			if ran == agents {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d of %d agents ran: %+v", round, ran, agents, st.Agents)
			}
		}
	}
	if ev := svc.Status().Agents[0].Event; ev == nil || ev.Status != EventSent {
		t.Errorf("a0's event: %+v", ev)
	}
	if n := conns.Load(); n != agents {
		t.Errorf("%d connections for 3 rounds of %d pulses in flight together, want %d", n, agents, agents)
	}
	stop()
	for deadline := time.Now().Add(5 * time.Second); closed.Load() != conns.Load(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("service stopped: %d of %d connections closed", closed.Load(), conns.Load())
		}
	}
}
