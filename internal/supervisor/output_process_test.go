//go:build unix

package supervisor

import (
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest/observer"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/platform"
)

// gatewayLines returns the gateway output lines that were logged (not schedd's own
// messages about them).
func gatewayLines(logs *observer.ObservedLogs) []observer.LoggedEntry {
	return logs.Filter(func(e observer.LoggedEntry) bool {
		_, ok := e.ContextMap()["stream"]
		return e.LoggerName == "gateway" && ok
	}).All()
}

// TestRealLastWords is R-INPUT-08 with a real gateway: it floods 3,000 lines past a cap
// of 100 a second, writes its real reason on stderr and exits at once. Every line is
// either logged or counted as dropped, the count comes before the exit line, and the exit
// line carries the last lines, the reason among them (stdout and stderr are two pipes:
// which of their lines was written last is not known).
func TestRealLastWords(t *testing.T) {
	const reason = "FATAL: the real reason"
	cfg := realConfig(t, "flood=330000", "last-words="+reason, "exit=3")
	cfg.MaxLinesPerSecond = 100
	cfg.NoRestartExitCodes = []int{3}
	h := runReal(t, cfg, false)
	h.waitFor("failed", func(st api.Gateway) bool { return st.State == api.GatewayFailed })

	all := h.logs.All()
	exitAt := slices.IndexFunc(all, func(e observer.LoggedEntry) bool { return e.Message == "gateway exited" })
	if exitAt < 0 {
		t.Fatal("no exit line")
	}
	last, _ := all[exitAt].ContextMap()["last_lines"].([]any)
	if len(last) != tailLines || !slices.Contains(last, any(reason)) || !slices.Contains(last, any("flood done")) {
		t.Errorf("exit line's last_lines = %q", last)
	}
	var dropped int64
	for i, e := range all {
		if e.Message == "gateway output dropped over the rate cap" {
			if i > exitAt {
				t.Errorf("a dropped count after the exit line: %v", e.ContextMap())
			}
			dropped += e.ContextMap()["lines"].(int64)
		}
	}
	// "fake gateway started", 3,000 flood lines, "flood done", the reason.
	if logged := int64(len(gatewayLines(h.logs))); logged+dropped != 3003 {
		t.Errorf("%d lines logged and %d counted as dropped; the gateway wrote 3003", logged, dropped)
	}
}

// TestRealLongLine is R-INPUT-09 with a real gateway: a 20 MB line is one log entry, its
// first platform.MaxLine bytes with the number of bytes cut, and the line after it is
// logged whole.
func TestRealLongLine(t *testing.T) {
	const size = 20 << 20
	h := runReal(t, realConfig(t, "long-line=20971520"), false)
	deadline := time.Now().Add(10 * time.Second)
	for h.logs.FilterMessage("long line done").Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the line after the long one was not logged")
		}
		time.Sleep(5 * time.Millisecond)
	}
	var long []observer.LoggedEntry
	for _, e := range gatewayLines(h.logs) {
		if strings.HasPrefix(e.Message, "zzz") {
			long = append(long, e)
		}
	}
	if len(long) != 1 {
		t.Fatalf("the 20 MB line became %d log entries, want 1", len(long))
	}
	if n, cut := len(long[0].Message), long[0].ContextMap()["cut_bytes"]; n != platform.MaxLine || cut != int64(size-platform.MaxLine) {
		t.Errorf("logged %d bytes with cut_bytes %v; want %d and %d", n, cut, platform.MaxLine, size-platform.MaxLine)
	}
}
