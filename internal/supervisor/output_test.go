package supervisor

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/platform"
)

// droppedCounts returns the "lines" of every dropped-lines warning logged so far.
func droppedCounts(logs *observer.ObservedLogs) []int64 {
	var n []int64
	for _, e := range logs.FilterMessage("gateway output dropped over the rate cap").All() {
		n = append(n, e.ContextMap()["lines"].(int64))
	}
	return n
}

// TestOutputLoggerFlushesDropped is R-INPUT-08: the count of lines dropped over the rate
// cap is logged when their second is over even if no line follows, and at once when the
// output ends; nothing is counted twice.
func TestOutputLoggerFlushesDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zapcore.InfoLevel)
		o := newOutputLogger(zap.New(core), 2, nil)
		o.started(42)
		for i := range 5 {
			o.line(platform.Stdout, []byte(fmt.Sprint("burst ", i)), 0)
		}
		time.Sleep(time.Second - time.Nanosecond)
		synctest.Wait()
		if n := droppedCounts(logs); n != nil {
			t.Fatalf("dropped count logged before the second was over: %v", n)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if n := droppedCounts(logs); !slices.Equal(n, []int64{3}) {
			t.Fatalf("a second after a burst and silence, dropped counts %v, want [3]", n)
		}

		// A second burst, and the output ends before its second is over.
		for i := range 4 {
			o.line(platform.Stderr, []byte(fmt.Sprint("again ", i)), 0)
		}
		time.Sleep(100 * time.Millisecond)
		o.close()
		if n := droppedCounts(logs); !slices.Equal(n, []int64{3, 2}) {
			t.Fatalf("when the output ended, dropped counts %v, want [3 2]", n)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := droppedCounts(logs); !slices.Equal(n, []int64{3, 2}) {
			t.Fatalf("after the end, dropped counts %v, want [3 2]", n)
		}
	})
}

// TestExitLogsLastLines is R-INPUT-08 with the supervisor: a gateway that floods, writes
// its real reason and exits leaves in the log the count of what the cap dropped and then
// the exit line, which carries its last lines, the reason among them even when stdout's
// backlog is read after it.
func TestExitLogsLastLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zapcore.InfoLevel)
		fs := newFakeStarter()
		cfg := testConfig()
		cfg.MaxLinesPerSecond = 10
		start(t, cfg, fs, WithLogger(zap.New(core)))
		p := fs.next(t)
		cmd := <-fs.cmds
		for i := range 3000 {
			cmd.Output(platform.Stdout, []byte(fmt.Sprint("noise ", i)), 0)
		}
		cmd.Output(platform.Stderr, []byte("FATAL: the real reason"), 0)
		for i := range 500 { // what the stdout pipe still held
			cmd.Output(platform.Stdout, []byte(fmt.Sprint("backlog ", i)), 0)
		}
		p.exitCode(1)
		synctest.Wait()

		all := logs.All()
		exitAt := slices.IndexFunc(all, func(e observer.LoggedEntry) bool { return e.Message == "gateway exited" })
		dropAt := slices.IndexFunc(all, func(e observer.LoggedEntry) bool {
			return e.Message == "gateway output dropped over the rate cap"
		})
		if exitAt < 0 || dropAt < 0 || dropAt > exitAt {
			t.Fatalf("want the dropped count (at %d) before the exit line (at %d)", dropAt, exitAt)
		}
		if n := droppedCounts(logs); !slices.Equal(n, []int64{3491}) {
			t.Errorf("dropped counts %v, want [3491]", n)
		}
		last, ok := all[exitAt].ContextMap()["last_lines"].([]any)
		if !ok || len(last) != tailLines || last[0] != "FATAL: the real reason" || last[1] != "backlog 481" || last[tailLines-1] != "backlog 499" {
			t.Fatalf("exit line's last_lines = %v", all[exitAt].ContextMap()["last_lines"])
		}
	})
}

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
	o.close()

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
