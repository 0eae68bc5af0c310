//go:build unix

package respawn

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest/observer"

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
