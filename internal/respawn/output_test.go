package respawn

import (
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/platform"
)

// TestOutputLoggerCutLine is R-INPUT-09: a line the platform cut is logged as one entry
// with the number of bytes cut, kept in the ring marked truncated, and in the last lines
// at their cut length.
func TestOutputLoggerCutLine(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	r := NewOutputRing(10)
	o := newOutputLogger(zap.New(core), 100, r)
	o.started(42)
	head := strings.Repeat("é", platform.MaxLine/2)
	o.line(platform.Stdout, []byte(head), 20<<20)
	o.line(platform.Stdout, []byte("whole"), 0)

	got := logs.FilterLoggerName("").All()
	if len(got) != 2 || got[0].Message != head || got[1].Message != "whole" {
		t.Fatalf("logged %d entries; want the cut line and the next", len(got))
	}
	if c := got[0].ContextMap(); c["cut_bytes"] != int64(20<<20) || c["pid"] != int64(42) {
		t.Errorf("cut line's fields %v, want cut_bytes %d", c, 20<<20)
	}
	if _, ok := got[1].ContextMap()["cut_bytes"]; ok {
		t.Errorf("a whole line marked cut: %v", got[1].ContextMap())
	}
	ls, _ := r.Last(10)
	if len(ls) != 2 || !ls[0].Truncated || len(ls[0].Text) > api.MaxLogLine || ls[1].Truncated {
		t.Errorf("ring holds %+v", ls)
	}
	if last := o.lastLines(); len(last) != 2 || len(last[0]) != tailLineMax || last[1] != "whole" {
		t.Errorf("last lines %q", last)
	}
}
