package restart

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/schedd/schedd/internal/api"
)

// R-INPUT-06: 3,000 requests with long reasons (multi-byte characters, control characters)
// merged into one restart keep a count and the last MaxReasons reasons, each cut at
// MaxReasonLen bytes on a character boundary: the status, every ticket and every log line
// stay small, and the result says how many reasons it left out.
func TestManyRequestsBounded_RINPUT06(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zapcore.DebugLevel)
		r := &fakeRestarter{}
		c := mustNew(t, Config{Delay: 10 * time.Second}, r, zap.New(core), Hooks{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		defer func() { cancel(); <-done }()

		const n = 3000
		var last Ticket
		for i := range n {
			reason := fmt.Sprintf("%04d \x1b[31m\n", i) + strings.Repeat("é", 500)
			last = c.Request(Request{Reason: reason, Source: api.SourceAPI})
			if b, _ := json.Marshal(last.Pending); len(b) > 2000 {
				t.Fatalf("request %d: the ticket's pending restart is %d bytes", i, len(b))
			}
		}
		st := c.Status()
		b, _ := json.Marshal(st)
		if len(b) > 3000 || st.Pending.Requests != n || len(st.Pending.Reasons) != MaxReasons || len(st.Pending.Sources) != MaxReasons {
			t.Fatalf("status of %d bytes: %s", len(b), b)
		}
		for i, reason := range st.Pending.Reasons {
			want := fmt.Sprintf("%04d  [31m é", n-MaxReasons+i)
			if len(reason) > MaxReasonLen || !utf8.ValidString(reason) || !strings.HasPrefix(reason, want) || !strings.HasSuffix(reason, "é…") {
				t.Errorf("reason %d is %d bytes: %q, want it to begin with %q", i, len(reason), reason, want)
			}
		}

		res, err := last.Wait(context.Background())
		if err != nil || res.Requests != n || len(res.Reasons) != MaxReasons || len(res.Reason) > MaxReasons*(MaxReasonLen+2)+40 ||
			!strings.HasSuffix(res.Reason, "é… (and 2995 earlier requests)") {
			t.Fatalf("result %+v, %v", res, err)
		}
		if b, _ := json.Marshal(c.Status()); len(b) > 5000 {
			t.Fatalf("status after the restart is %d bytes", len(b))
		}
		for _, e := range logs.All() {
			enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
			buf, _ := enc.EncodeEntry(e.Entry, e.Context)
			if buf.Len() > 1500 {
				t.Fatalf("a log line of %d bytes: %s", buf.Len(), buf)
			}
		}
	})
}

func TestBoundReasons(t *testing.T) {
	var many []string
	for i := range 100 {
		many = append(many, fmt.Sprint(i, strings.Repeat("x", 300)))
	}
	got := BoundReasons(many)
	if len(got) != MaxReasons || !strings.HasPrefix(got[0], "95x") || len(got[4]) != MaxReasonLen {
		t.Fatalf("BoundReasons: %d, %q", len(got), got)
	}
	if s := JoinReasons([]string{"a", "b"}, 2); s != "a; b" {
		t.Fatalf("JoinReasons = %q", s)
	}
	if s := JoinReasons([]string{"a", "b"}, 7); s != "a; b (and 5 earlier requests)" {
		t.Fatalf("JoinReasons = %q", s)
	}
}
