package supervisor

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/platform"
)

func addN(r *OutputRing, from, to int) {
	for i := from; i <= to; i++ {
		r.Add(api.LogLine{PID: 7, Stream: "stdout", Text: "line " + strconv.Itoa(i)})
	}
}

func texts(ls []api.LogLine) string {
	var s []string
	for _, l := range ls {
		s = append(s, l.Text)
	}
	return strings.Join(s, ",")
}

// The ring keeps the newest size lines in order, numbered from 1, and Last and Since
// see exactly those.
func TestOutputRingBoundsAndOrder(t *testing.T) {
	r := NewOutputRing(3)
	if ls, next := r.Last(10); len(ls) != 0 || next != 1 {
		t.Fatalf("empty ring: %v, next %d", ls, next)
	}
	addN(r, 1, 2)
	if ls, next := r.Last(10); texts(ls) != "line 1,line 2" || next != 3 || ls[0].Seq != 1 || ls[1].Seq != 2 {
		t.Fatalf("Last(10) before full = %+v, next %d", ls, next)
	}
	addN(r, 3, 7)
	ls, next := r.Last(10)
	if texts(ls) != "line 5,line 6,line 7" || next != 8 || ls[0].Seq != 5 {
		t.Fatalf("Last(10) after wrapping = %+v, next %d", ls, next)
	}
	if ls, _ := r.Last(2); texts(ls) != "line 6,line 7" {
		t.Fatalf("Last(2) = %q", texts(ls))
	}
	if ls, _ := r.Last(0); len(ls) != 0 {
		t.Fatalf("Last(0) = %q", texts(ls))
	}
	// Lines 1 to 4 are gone: a reader at 2 missed three of them.
	ls, missed, wait, closed := r.Since(2, 2)
	if texts(ls) != "line 5,line 6" || missed != 3 || wait != nil || closed {
		t.Fatalf("Since(2, 2) = %q, missed %d, wait %v, closed %v", texts(ls), missed, wait, closed)
	}
	if ls, missed, wait, _ := r.Since(8, 5); len(ls) != 0 || missed != 0 || wait == nil {
		t.Fatalf("Since(next) = %q, missed %d, wait %v", texts(ls), missed, wait)
	}
	if size, total, notLogged := r.Stats(); size != 3 || total != 7 || notLogged != 0 {
		t.Fatalf("Stats = %d, %d, %d", size, total, notLogged)
	}
}

func TestOutputRingResize(t *testing.T) {
	r := NewOutputRing(4)
	addN(r, 1, 6) // keeps 3..6, wrapped
	r.Resize(2)
	if ls, _ := r.Last(10); texts(ls) != "line 5,line 6" {
		t.Fatalf("after shrinking: %q", texts(ls))
	}
	r.Resize(5)
	addN(r, 7, 9)
	if ls, _ := r.Last(10); texts(ls) != "line 5,line 6,line 7,line 8,line 9" {
		t.Fatalf("after growing: %q", texts(ls))
	}
	addN(r, 10, 10)
	if ls, next := r.Last(10); texts(ls) != "line 6,line 7,line 8,line 9,line 10" || next != 11 || ls[4].Seq != 10 {
		t.Fatalf("after growing and wrapping: %+v", ls)
	}
}

// A line over api.MaxLogLine is cut there without splitting a character, and marked.
func TestOutputRingCutsLongLines(t *testing.T) {
	r := NewOutputRing(2)
	long := "a" + strings.Repeat("é", api.MaxLogLine) // é is two bytes: the cut falls inside one
	r.Add(api.LogLine{Text: long})
	r.Add(api.LogLine{Text: "short"})
	ls, _ := r.Last(2)
	if got := ls[0].Text; len(got) > api.MaxLogLine || len(got) < api.MaxLogLine-1 || !utf8.ValidString(got) || !ls[0].Truncated {
		t.Fatalf("long line kept as %d bytes, valid %v, truncated %v", len(got), utf8.ValidString(got), ls[0].Truncated)
	}
	if ls[1].Text != "short" || ls[1].Truncated {
		t.Fatalf("short line %+v", ls[1])
	}
}

// follow reads r from seq on as a follower does, until the ring is closed.
func follow(r *OutputRing, seq uint64) (got []api.LogLine, missed uint64) {
	for {
		ls, m, wait, closed := r.Since(seq, 16)
		missed += m
		got = append(got, ls...)
		if closed {
			return got, missed
		}
		if len(ls) > 0 {
			seq = ls[len(ls)-1].Seq + 1
			continue
		}
		<-wait
	}
}

// Writers on two streams and followers at once (run with -race): every follower sees
// each line at most once and in order, and what it saw plus what it was told it missed
// is every line.
func TestOutputRingConcurrent(t *testing.T) {
	r := NewOutputRing(64)
	const writers, perWriter, followers = 4, 2000, 4
	var wg sync.WaitGroup
	type result struct {
		got    []api.LogLine
		missed uint64
	}
	results := make([]result, followers)
	for i := range followers {
		wg.Go(func() {
			got, missed := follow(r, 1)
			results[i] = result{got, missed}
		})
	}
	var ww sync.WaitGroup
	for w := range writers {
		ww.Go(func() {
			for i := range perWriter {
				r.Add(api.LogLine{PID: w, Text: strconv.Itoa(i)})
			}
		})
	}
	ww.Wait()
	r.Close()
	wg.Wait()
	for i, res := range results {
		for j := 1; j < len(res.got); j++ {
			if res.got[j].Seq <= res.got[j-1].Seq {
				t.Fatalf("follower %d: seq %d after %d", i, res.got[j].Seq, res.got[j-1].Seq)
			}
		}
		if n := uint64(len(res.got)) + res.missed; n != writers*perWriter {
			t.Errorf("follower %d saw %d and missed %d lines, want %d in all", i, len(res.got), res.missed, writers*perWriter)
		}
	}
	if ls, _ := r.Last(100); len(ls) != 64 || ls[63].Seq != writers*perWriter {
		t.Fatalf("kept %d lines, the last %+v", len(ls), ls[len(ls)-1])
	}
}

// A follower waits for the next line without polling, and Close ends it after what is
// left; a follower that fell a whole ring behind is told how many lines it missed.
func TestOutputRingFollow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewOutputRing(3)
		addN(r, 1, 2)
		_, next := r.Last(0)
		var got []api.LogLine
		var missed uint64
		done := make(chan struct{})
		go func() {
			got, missed = follow(r, next)
			close(done)
		}()
		synctest.Wait() // blocked on wait: nothing new yet
		if got != nil {
			t.Fatalf("follower got %q before any new line", texts(got))
		}
		addN(r, 3, 3)
		synctest.Wait()
		r.Close()
		<-done
		if texts(got) != "line 3" || missed != 0 {
			t.Fatalf("follower got %q, missed %d", texts(got), missed)
		}

		// A reader still at line 1 after ten more lines missed eight of them.
		addN(r, 4, 10)
		ls, m, _, closed := r.Since(1, 10)
		if texts(ls) != "line 8,line 9,line 10" || m != 7 || closed {
			t.Fatalf("Since(1) = %q, missed %d", texts(ls), m)
		}
		if _, _, _, closed := r.Since(11, 10); !closed {
			t.Fatal("a closed ring still makes readers wait")
		}
	})
}

// Lines over the logging rate cap are not logged but are kept (marked not_logged) and
// counted; the count is logged once the second is over.
func TestOutputLoggerKeepsCappedLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zapcore.InfoLevel)
		r := NewOutputRing(10)
		o := newOutputLogger(zap.New(core), 2, r)
		o.started(42)
		for i := range 4 {
			o.line(platform.Stdout, []byte("burst "+strconv.Itoa(i)), 0)
		}
		time.Sleep(time.Second)
		o.line(platform.Stderr, []byte("later"), 0)

		ls, _ := r.Last(10)
		if texts(ls) != "burst 0,burst 1,burst 2,burst 3,later" {
			t.Fatalf("ring holds %q", texts(ls))
		}
		for i, l := range ls {
			if want := i == 2 || i == 3; l.NotLogged != want || l.PID != 42 {
				t.Errorf("line %d %+v: want not_logged %v, pid 42", i, l, want)
			}
		}
		if ls[4].Stream != "stderr" || ls[0].Stream != "stdout" || !ls[4].Time.Equal(ls[0].Time.Add(time.Second)) {
			t.Errorf("streams or times wrong: %+v", ls)
		}
		if _, total, notLogged := r.Stats(); total != 5 || notLogged != 2 {
			t.Errorf("Stats total %d, not logged %d; want 5, 2", total, notLogged)
		}
		if n := logs.FilterMessage("burst 2").Len() + logs.FilterMessage("burst 3").Len(); n != 0 {
			t.Errorf("lines over the cap were logged")
		}
		dropped := logs.FilterMessage("gateway output dropped over the rate cap").All()
		if len(dropped) != 1 || dropped[0].ContextMap()["lines"] != int64(2) {
			t.Errorf("dropped-lines warning: %+v", dropped)
		}
	})
}

// TestOutputRingSizeTakenAsGiven: the ring keeps the lines it is told to (the config's
// gateway.output.keep_lines), with no size of its own; below one line it keeps one.
func TestOutputRingSizeTakenAsGiven(t *testing.T) {
	for _, c := range []struct{ in, want int }{{1, 1}, {7, 7}, {100_000, 100_000}, {0, 1}, {-5, 1}} {
		r := NewOutputRing(c.in)
		if size, _, _ := r.Stats(); size != c.want {
			t.Errorf("NewOutputRing(%d) keeps %d lines, want %d", c.in, size, c.want)
		}
		r = NewOutputRing(3)
		r.Resize(c.in)
		if size, _, _ := r.Stats(); size != c.want {
			t.Errorf("Resize(%d) keeps %d lines, want %d", c.in, size, c.want)
		}
	}
}
