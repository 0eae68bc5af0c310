package main

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/config"
)

// countingBuffer is a writer tests can read while the sink writes.
type countingBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (w *countingBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.b.Write(p)
}

func (w *countingBuffer) read() (string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String(), w.writes
}

// TestLogSinkBatches: a line after a quiet spell is written at once; lines that follow
// wait until a later one finds the oldest of them 100 ms old, or at most 250 ms when none
// comes; with nothing waiting no timer is armed, so the bubble is idle.
func TestLogSinkBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w countingBuffer
		s := newLogSink(&w, 100*time.Millisecond, 250*time.Millisecond, 1<<10)
		start := time.Now()
		at := func(d time.Duration, line string) {
			t.Helper()
			time.Sleep(d - time.Since(start))
			if line != "" {
				_, _ = s.Write([]byte(line))
			}
			synctest.Wait()
		}
		expect := func(want string, writes int) {
			t.Helper()
			if got, n := w.read(); got != want || n != writes {
				t.Fatalf("at %v: %q in %d writes, want %q in %d", time.Since(start), got, n, want, writes)
			}
		}
		at(0, "a\n")
		expect("a\n", 1) // after a quiet spell: at once
		at(10*time.Millisecond, "b\n")
		at(60*time.Millisecond, "c\n")
		at(109*time.Millisecond, "d\n")
		expect("a\n", 1)
		at(110*time.Millisecond, "e\n") // b is 100 ms old: all that waits goes out
		expect("a\nb\nc\nd\ne\n", 2)
		at(150*time.Millisecond, "f\n")
		at(399*time.Millisecond, "")
		expect("a\nb\nc\nd\ne\n", 2)
		at(400*time.Millisecond, "") // nothing followed f: the timer writes it 250 ms on
		expect("a\nb\nc\nd\ne\nf\n", 3)
		at(450*time.Millisecond, "g\n") // 50 ms after a write: waits
		expect("a\nb\nc\nd\ne\nf\n", 3)
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		expect("a\nb\nc\nd\ne\nf\ng\n", 4)
		at(time.Hour, "") // no flush is pending: nothing more is written
		expect("a\nb\nc\nd\ne\nf\ng\n", 4)
		at(time.Hour+time.Millisecond, "h\n")
		expect("a\nb\nc\nd\ne\nf\ng\nh\n", 5)
	})
}

// TestLogSinkFull: a full buffer is written at once; lines keep their order under
// concurrent writers.
func TestLogSinkFull(t *testing.T) {
	var w countingBuffer
	s := newLogSink(&w, time.Hour, time.Hour, 256)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 100 {
				_, _ = fmt.Fprintf(s, "g%d %03d\n", g, i)
			}
		})
	}
	wg.Wait()
	if _, n := w.read(); n == 0 {
		t.Fatal("a full buffer was not written")
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	got, _ := w.read()
	last := map[string]string{}
	for line := range strings.Lines(got) {
		g, i, _ := strings.Cut(strings.TrimSpace(line), " ")
		if i <= last[g] {
			t.Fatalf("line %q after %q", line, last[g])
		}
		last[g] = i
	}
	if len(strings.Split(strings.TrimSpace(got), "\n")) != 400 {
		t.Fatalf("%d lines", len(strings.Split(got, "\n")))
	}
}

// TestLoggerWritesWarningsAtOnce: the daemon's logger holds info lines back for the
// flush delay but writes a warning (and what waits before it) at once.
func TestLoggerWritesWarningsAtOnce(t *testing.T) {
	var w countingBuffer
	cmd := newRunCmd(&globals{})
	cmd.SetErr(&w)
	if err := cmd.Flags().Set("log-format", "json"); err != nil {
		t.Fatal(err)
	}
	log, _, err := newLogger(cmd, config.Log{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Sync()
	log.Info("first")
	log.Warn("second", zap.Int("n", 2))
	got, _ := w.read()
	if !strings.Contains(got, `"msg":"first"`) || !strings.Contains(got, `"msg":"second"`) ||
		strings.Index(got, "first") > strings.Index(got, "second") {
		t.Fatalf("after a warning: %q", got)
	}
	log.Info("third")
	if got, _ := w.read(); strings.Contains(got, "third") {
		t.Fatalf("an info line was not held back: %q", got)
	}
	if err := log.Sync(); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.read(); !strings.Contains(got, "third") {
		t.Fatalf("after Sync: %q", got)
	}
}
