package deliveries

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/platform"
)

// The HTTP sink maps every status class (R-DLV-04), sends the idempotency key, and keeps
// Retry-After in both forms.
func TestHTTPSinkStatusClasses(t *testing.T) {
	future := time.Now().Add(2 * time.Minute).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		status     int
		retryAfter string
		body       string
		wantNil    bool
		class      Class
		minRA      time.Duration
	}{
		{status: 200, wantNil: true},
		{status: 201, wantNil: true},
		{status: 204, wantNil: true},
		{status: 301, class: Permanent},
		{status: 400, class: Permanent, body: "bad payload"},
		{status: 401, class: Permanent},
		{status: 403, class: Permanent},
		{status: 404, class: Permanent},
		{status: 409, class: Permanent},
		{status: 413, class: Permanent},
		{status: 422, class: Permanent},
		{status: 408, class: Transient},
		{status: 425, class: Transient},
		{status: 429, class: Transient, retryAfter: "30", minRA: 30 * time.Second},
		{status: 500, class: Transient},
		{status: 502, class: Transient},
		{status: 503, class: Transient, retryAfter: future, minRA: 110 * time.Second},
		{status: 504, class: Transient},
		{status: 500, class: Permanent, body: "upstream said: chat not found"}, // pattern on the body (P7)
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			var got *http.Request
			var gotBody []byte
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r
				gotBody, _ = io.ReadAll(r.Body)
				if tc.status == 301 {
					w.Header().Set("Location", "/elsewhere")
				}
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			sink, err := NewHTTPSink(HTTPConfig{URL: srv.URL + "/hook", Headers: map[string]string{"X-Static": "s", "X-Over": "config"}})
			if err != nil {
				t.Fatal(err)
			}
			err = sink.Send(t.Context(), Delivery{ID: 1, Key: "key-1", Payload: []byte(`{"a":1}`),
				Headers: map[string]string{"X-Over": "entry", "Content-Type": "application/json"}})
			if got == nil {
				t.Fatal("no request")
			}
			if got.Method != http.MethodPost || got.URL.Path != "/hook" || string(gotBody) != `{"a":1}` ||
				got.Header.Get(IdempotencyHeader) != "key-1" || got.Header.Get("X-Static") != "s" ||
				got.Header.Get("X-Over") != "entry" || got.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("request = %s %s %q %v", got.Method, got.URL, gotBody, got.Header)
			}
			if tc.wantNil {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			c, _ := NewClassifier(nil)
			v := c.Classify(err)
			if v.Class != tc.class {
				t.Fatalf("err %v: class %v, want %v", err, v.Class, tc.class)
			}
			if v.RetryAfter < tc.minRA || (tc.minRA == 0 && v.RetryAfter != 0) {
				t.Fatalf("retry-after = %v, want >= %v", v.RetryAfter, tc.minRA)
			}
			if !strings.Contains(err.Error(), "HTTP ") || (tc.body != "" && !strings.Contains(err.Error(), tc.body)) {
				t.Fatalf("error text %q", err)
			}
		})
	}
}

func TestHTTPSinkNetworkErrorsTransient(t *testing.T) {
	c, _ := NewClassifier(nil)
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		sink, _ := NewHTTPSink(HTTPConfig{URL: url})
		err := sink.Send(t.Context(), Delivery{Key: "k"})
		if err == nil || c.Classify(err).Class != Transient {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}))
		defer srv.Close()
		sink, _ := NewHTTPSink(HTTPConfig{URL: srv.URL, Timeout: 50 * time.Millisecond})
		err := sink.Send(t.Context(), Delivery{Key: "k"})
		if err == nil || c.Classify(err).Class != Transient || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("bad config", func(t *testing.T) {
		for _, u := range []string{"", "ftp://x", "/relative", "http://"} {
			if _, err := NewHTTPSink(HTTPConfig{URL: u}); err == nil {
				t.Errorf("url %q accepted", u)
			}
		}
	})
}

func TestGatewaySinkReadiness(t *testing.T) {
	var hits int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
	}))
	defer srv.Close()
	ready := false
	g, err := NewGatewaySink(HTTPConfig{URL: srv.URL}, func() bool { return ready })
	if err != nil {
		t.Fatal(err)
	}
	var _ Readier = g
	err = g.Send(t.Context(), Delivery{Key: "k"})
	c, _ := NewClassifier(nil)
	if c.Classify(err).Class != NotReady || !errors.Is(err, ErrNotReady) || g.Ready() {
		t.Fatalf("not ready: err = %v", err)
	}
	ready = true
	if err := g.Send(t.Context(), Delivery{Key: "k"}); err != nil || !g.Ready() {
		t.Fatalf("ready: err = %v", err)
	}
	if hits != 1 {
		t.Fatalf("%d requests, want 1", hits)
	}
	if _, err := NewGatewaySink(HTTPConfig{URL: srv.URL}, nil); err == nil {
		t.Fatal("nil readiness accepted")
	}
}

func TestExecSinkExitCodes(t *testing.T) {
	c, _ := NewClassifier(nil)
	for _, tc := range []struct {
		name    string
		res     platform.RunResult
		err     error
		wantNil bool
		class   Class
	}{
		{name: "exit 0", res: exited(0, ""), wantNil: true},
		{name: "exit 75", res: exited(75, ""), class: Transient},
		{name: "exit 1", res: exited(1, "bad input\n"), class: Permanent},
		{name: "exit 2", res: exited(2, ""), class: Permanent},
		{name: "configured transient 3", res: exited(3, ""), class: Transient},
		{name: "signal", res: platform.RunResult{Status: platform.ExitStatus{Signaled: true, Signal: 9, SignalName: "SIGKILL", Code: -1}}, class: Transient},
		{name: "not started", err: errors.New("executable file not found"), class: Transient},
		{name: "exit 1 with permanent text", res: exited(1, "user not found"), class: Permanent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got platform.RunSpec
			sink, err := NewExecSink(ExecConfig{
				Command: []string{"/usr/bin/deliver", "--fast"}, Env: []string{"A=1"}, TransientCodes: []int{3},
				Run: func(ctx context.Context, req platform.RunSpec) (platform.RunResult, error) {
					got = req
					if _, ok := ctx.Deadline(); !ok {
						t.Error("no deadline on the run")
					}
					return tc.res, tc.err
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			err = sink.Send(t.Context(), Delivery{ID: 7, Sink: "script", Key: "k7", Attempt: 2, Payload: []byte("stdin data")})
			if string(got.Stdin) != "stdin data" || !slices.Equal(got.Argv, []string{"/usr/bin/deliver", "--fast"}) ||
				!slices.Contains(got.Env, "A=1") || !slices.Contains(got.Env, "SCHEDD_DELIVERY_ID=7") ||
				!slices.Contains(got.Env, "SCHEDD_IDEMPOTENCY_KEY=k7") || !slices.Contains(got.Env, "SCHEDD_ATTEMPT=2") ||
				!slices.Contains(got.Env, "SCHEDD_SINK=script") {
				t.Fatalf("request = %+v", got)
			}
			if tc.wantNil {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if v := c.Classify(err); v.Class != tc.class {
				t.Fatalf("err %v: class %v, want %v", err, v.Class, tc.class)
			}
		})
	}
	if _, err := NewExecSink(ExecConfig{Run: func(context.Context, platform.RunSpec) (platform.RunResult, error) { return platform.RunResult{}, nil }}); err == nil {
		t.Fatal("empty command accepted")
	}
	if _, err := NewExecSink(ExecConfig{Command: []string{"x"}}); err == nil {
		t.Fatal("nil RunFunc accepted")
	}
}

// exited is how a command that exited with code, printing stderr, ended.
func exited(code int, stderr string) platform.RunResult {
	return platform.RunResult{Status: platform.ExitStatus{Exited: true, Code: code}, Stderr: []byte(stderr)}
}
