package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/schedd/schedd/internal/platform"
)

// helperEnv turns the test binary into a small command for the exec probes: it prints
// os.Args[2] to stdout and os.Args[3] to stderr, then exits with code os.Args[1];
// "hang" blocks instead.
const helperEnv = "SCHEDD_PROBE_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helper(os.Args[1:]))
	}
	if sc := os.Getenv(fakeOpenClawEnv); sc != "" {
		os.Exit(fakeOpenClaw(sc, os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}

func helper(args []string) int {
	if len(args) > 0 && args[0] == "hang" {
		time.Sleep(time.Hour) // killed by the probe's context
	}
	code, _ := strconv.Atoi(args[0])
	if len(args) > 1 {
		fmt.Print(args[1])
	}
	if len(args) > 2 {
		fmt.Fprint(os.Stderr, args[2])
	}
	return code
}

// serve answers every GET with status and body, and records the request's headers.
func serve(t *testing.T, status int, body string) (url string, got *http.Header) {
	t.Helper()
	got = new(http.Header)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*got = r.Header.Clone()
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, got
}

// check runs p.Check with a timeout long enough for anything but a hang.
func check(t *testing.T, p Checker) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	return p.Check(ctx)
}

func TestHTTPStatus(t *testing.T) {
	for _, tc := range []struct {
		status int
		ok     bool
	}{
		{200, true}, {204, true}, {299, true},
		{301, false}, {404, false}, {500, false}, {503, false},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			url, _ := serve(t, tc.status, "")
			err := check(t, HTTP{URL: url})
			if tc.ok && err != nil {
				t.Fatalf("Check: %v, want nil", err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "status "+strconv.Itoa(tc.status))) {
				t.Fatalf("Check: %v, want a failure naming status %d", err, tc.status)
			}
		})
	}
}

func TestHTTPSendsHeaders(t *testing.T) {
	url, got := serve(t, 200, "")
	if err := check(t, HTTP{URL: url, Headers: map[string]string{"Authorization": "Bearer x"}}); err != nil {
		t.Fatal(err)
	}
	if v := got.Get("Authorization"); v != "Bearer x" {
		t.Fatalf("Authorization = %q", v)
	}
}

// TestHTTPRedirects: a redirect on the probed host is followed; one to another host is not,
// so the probe's headers (a token, say) never reach it.
func TestHTTPRedirects(t *testing.T) {
	other, got := serve(t, 200, "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/here":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/away":
			http.Redirect(w, r, other+"/ok", http.StatusFound)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	t.Cleanup(srv.Close)
	if err := check(t, HTTP{URL: srv.URL + "/here"}); err != nil {
		t.Fatalf("a redirect on the same host: %v", err)
	}
	err := check(t, HTTP{URL: srv.URL + "/away", Headers: map[string]string{"X-Token": "secret"}})
	if err == nil || !strings.Contains(err.Error(), "another host") {
		t.Fatalf("a redirect to another host: %v, want a failure saying so", err)
	}
	if got.Get("X-Token") != "" {
		t.Fatal("the token reached the other host")
	}
}

func TestHTTPPointer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		pointer string
		want    string // "" = passes, else part of the error
	}{
		{"true", 200, `{"status": {"ready": true}}`, "/status/ready", ""},
		{"array index", 200, `{"checks": [false, true]}`, "/checks/1", ""},
		{"escaped key", 200, `{"a/b": {"~": true}}`, "/a~1b/~0", ""},
		{"false", 200, `{"ready": false}`, "/ready", "is false, want true"},
		{"string true", 200, `{"ready": "true"}`, "/ready", `is "true", want true`},
		{"null", 200, `{"ready": null}`, "/ready", "is null, want true"},
		{"missing", 200, `{"status": {}}`, "/status/ready", `no key "ready"`},
		{"inside a scalar", 200, `{"status": 1}`, "/status/ready", "is inside 1"},
		{"not JSON", 200, `ready`, "/ready", "not JSON"},
		{"true but 503", 503, `{"ready": true}`, "/ready", "status 503"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := serve(t, tc.status, tc.body)
			err := check(t, HTTP{URL: url, Pointer: tc.pointer})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Check: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestHTTPInflight(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       int
		err        string
	}{
		{"zero", `{"inFlight": 0}`, 0, ""},
		{"some", `{"inFlight": 3}`, 3, ""},
		{"not a number", `{"inFlight": "3"}`, 0, "want a number"},
		{"negative", `{"inFlight": -1}`, 0, "want a number ≥ 0"},
		{"missing", `{}`, 0, `no key "inFlight"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := serve(t, 200, tc.body)
			n, err := HTTP{URL: url, Pointer: "/inFlight"}.Inflight(t.Context())
			switch {
			case tc.err == "" && (err != nil || n != tc.want):
				t.Fatalf("Inflight = %d, %v; want %d", n, err, tc.want)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("Inflight = %d, %v; want an error with %q", n, err, tc.err)
			}
		})
	}
}

// TestHTTPHangTimesOut: a gateway that never answers, or stops in the middle of its reply,
// fails the check when the caller's context ends.
func TestHTTPHangTimesOut(t *testing.T) {
	for _, name := range []string{"no reply", "half a reply"} {
		t.Run(name, func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if name == "half a reply" {
					w.WriteHeader(200)
					fmt.Fprint(w, `{"ready": `)
					w.(http.Flusher).Flush()
				}
				<-release
			}))
			t.Cleanup(srv.Close)
			t.Cleanup(func() { close(release) }) // runs first: Close waits for the handler

			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			err := HTTP{URL: srv.URL, Pointer: "/ready"}.Check(ctx)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Check: %v, want the context's deadline", err)
			}
		})
	}
}

func TestTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := check(t, TCP{Address: ln.Addr().String()}); err != nil {
		t.Fatalf("Check on a listening port: %v", err)
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	if err := check(t, TCP{Address: addr}); err == nil || !strings.Contains(err.Error(), "connect "+addr) {
		t.Fatalf("Check on a closed port: %v, want a connect error", err)
	}
}

// helperExec is an exec probe that runs the test binary as helper with args.
func helperExec(args ...string) Exec {
	exe, _ := os.Executable()
	// The race runtime sleeps a second at exit by default; the helper must not.
	env := platform.ChildEnv(os.Environ(), map[string]string{helperEnv: "1", "GORACE": "atexit_sleep_ms=0"})
	return Exec{Argv: append([]string{exe}, args...), Env: env}
}

func TestExecCheck(t *testing.T) {
	if err := check(t, helperExec("0")); err != nil {
		t.Fatalf("exit 0: %v", err)
	}
	err := check(t, helperExec("3", "", "not ready yet"))
	if err == nil || !strings.Contains(err.Error(), "not ready yet") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("exit 3: %v, want a failure with the code and stderr", err)
	}
	if err := check(t, Exec{Argv: []string{"schedd-no-such-command"}}); err == nil {
		t.Fatal("a command that cannot start passed")
	}
}

func TestExecInflight(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"0"}, 0},
		{[]string{"1"}, 1},
		{[]string{"1", "7\n"}, 7},
		{[]string{"1", "lots"}, 1},
	} {
		n, err := helperExec(tc.args...).Inflight(t.Context())
		if err != nil || n != tc.want {
			t.Errorf("helper %q: Inflight = %d, %v; want %d", tc.args, n, err, tc.want)
		}
	}
}

func TestExecHangTimesOut(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := helperExec("hang").Check(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Check: %v, want the context's deadline", err)
	}
	if _, err := helperExec("hang").Inflight(ctx); err == nil {
		t.Fatal("Inflight of a hanging command did not fail")
	}
}
