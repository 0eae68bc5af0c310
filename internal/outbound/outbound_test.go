package outbound

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/platform"
)

// Exchange sends the request as given and keeps the start of the body: MaxBody of a 2xx,
// MaxErrorBody of any other reply.
func TestExchangeKeepsTheStartOfTheBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut || r.Header.Get("X-Test") != "yes" {
			t.Errorf("request %s %v", r.Method, r.Header)
		}
		w.Header().Set("X-Reply", "1")
		if r.URL.Path == "/bad" {
			w.WriteHeader(http.StatusBadRequest)
		}
		_, _ = w.Write([]byte(strings.Repeat("x", 100)))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		path string
		code int
		keep int
	}{{"/ok", 200, 10}, {"/bad", 400, 20}} {
		r := Exchange(t.Context(), srv.Client(), Request{Method: http.MethodPut, URL: srv.URL + tc.path,
			Header: http.Header{"X-Test": {"yes"}}, MaxBody: 10, MaxErrorBody: 20, Drain: 1 << 10})
		if r.Fault != NoFault || r.Err != nil || r.Code != tc.code || len(r.Body) != tc.keep ||
			r.Header.Get("X-Reply") != "1" || r.Elapsed <= 0 {
			t.Fatalf("%s: %+v", tc.path, r)
		}
	}
}

// The faults of an exchange are told apart.
func TestExchangeFaults(t *testing.T) {
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hold)

	r := Exchange(t.Context(), srv.Client(), Request{Method: "BAD METHOD", URL: srv.URL})
	if r.Fault != FaultRequest || r.Replied() || r.Verdict(time.Now()).Class != Permanent {
		t.Fatalf("bad method: %+v", r)
	}
	r = Exchange(t.Context(), srv.Client(), Request{Method: http.MethodGet, URL: srv.URL, Timeout: 50 * time.Millisecond})
	if r.Fault != FaultTimeout || r.Verdict(time.Now()).Class != Transient {
		t.Fatalf("timeout: %+v", r)
	}
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	r = Exchange(ctx, srv.Client(), Request{Method: http.MethodGet, URL: srv.URL})
	if r.Fault != FaultCancelled {
		t.Fatalf("cancel: %+v", r)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	r = Exchange(t.Context(), http.DefaultClient, Request{Method: http.MethodGet, URL: closed.URL + "/?token=secret"})
	v := r.Verdict(time.Now())
	if r.Fault != FaultTransport || v.Class != Transient || strings.Contains(v.Reason, "secret") {
		t.Fatalf("refused connection: %+v, %+v", r, v)
	}
}

// One classification of HTTP statuses, with Retry-After kept on a transient reply.
func TestStatusVerdict(t *testing.T) {
	now := time.Now()
	for code, want := range map[int]Class{200: Success, 204: Success, 302: Permanent, 400: Permanent, 404: Permanent,
		408: Transient, 425: Transient, 429: Transient, 500: Transient, 503: Transient} {
		if v := StatusVerdict(code, http.Header{"Retry-After": {"7"}}, now); v.Class != want ||
			(want == Transient) != (v.RetryAfter == 7*time.Second) {
			t.Errorf("%d: %+v, want %v", code, v, want)
		}
	}
}

// One classification of how a command ended: 0 succeeds, 75 and the listed codes and a
// signal are transient, any other code is permanent.
func TestExitVerdict(t *testing.T) {
	for _, tc := range []struct {
		st   platform.ExitStatus
		want Class
	}{
		{platform.ExitStatus{Exited: true}, Success},
		{platform.ExitStatus{Exited: true, Code: 75}, Transient},
		{platform.ExitStatus{Exited: true, Code: 3}, Transient},
		{platform.ExitStatus{Exited: true, Code: 1}, Permanent},
		{platform.ExitStatus{Signaled: true, SignalName: "SIGKILL", Code: -1}, Transient},
	} {
		if v := ExitVerdict(tc.st, 3); v.Class != tc.want || v.Reason != tc.st.String() {
			t.Errorf("%v: %+v, want %v", tc.st, v, tc.want)
		}
	}
}

// Run passes the command to the RunFunc with its timeout on ctx, and tells a command that
// could not start from one stopped by its timeout.
func TestRunFaults(t *testing.T) {
	var got platform.RunSpec
	run := RunFunc(func(ctx context.Context, spec platform.RunSpec) (platform.RunResult, error) {
		got = spec
		switch spec.Argv[0] {
		case "missing":
			return platform.RunResult{}, &platform.SpawnError{Op: "lookpath", Err: errors.New("not found")}
		case "slow":
			<-ctx.Done()
			return platform.RunResult{}, ctx.Err()
		}
		if _, ok := ctx.Deadline(); !ok {
			t.Error("no deadline")
		}
		return platform.RunResult{Status: platform.ExitStatus{Exited: true, Code: 2}, Stdout: []byte("out")}, nil
	})
	r := run.Run(t.Context(), Command{Argv: []string{"ok"}, Env: []string{"A=1"}, Stdin: []byte("in"), Timeout: time.Minute,
		MaxOutput: 9, StopGrace: time.Second})
	if r.Fault != NoFault || r.Exit.Code != 2 || string(r.Stdout) != "out" || r.Verdict().Class != Permanent ||
		string(got.Stdin) != "in" || !slices.Equal(got.Env, []string{"A=1"}) || got.MaxOutput != 9 || got.StopGrace != time.Second {
		t.Fatalf("ran %+v with %+v", r, got)
	}
	if r := run.Run(t.Context(), Command{Argv: []string{"missing"}}); r.Fault != FaultStart || r.Verdict().Class != Permanent {
		t.Fatalf("missing: %+v", r)
	}
	if r := run.Run(t.Context(), Command{Argv: []string{"slow"}, Timeout: time.Millisecond}); r.Fault != FaultTimeout ||
		r.Verdict().Class != Transient {
		t.Fatalf("slow: %+v", r)
	}
}

// Environ scrubs the base like any child's environment and lets the additions win.
func TestEnviron(t *testing.T) {
	env := Environ([]string{"A=1", "B=2"}, "B=3", "C=4")
	if !slices.Equal(env, []string{"A=1", "B=3", "C=4"}) {
		t.Fatalf("env = %q", env)
	}
}

func TestTail(t *testing.T) {
	if got := Tail([]byte("first\nsecond  line\n"), 13); got != ": second line" {
		t.Fatalf("tail = %q", got)
	}
	if got := Tail([]byte(" \n"), 10); got != "" {
		t.Fatalf("tail of blanks = %q", got)
	}
}
