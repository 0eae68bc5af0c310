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

// TestLogSinkDelay: a line after a quiet spell is written at once; lines that follow
// within the delay wait at most the delay and go out in one write; with nothing waiting no
// timer is armed, so the bubble is idle.
func TestLogSinkDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w countingBuffer
		s := newLogSink(&w, 100*time.Millisecond, 1<<10)
		expect := func(when, want string, writes int) {
			t.Helper()
			synctest.Wait()
			if got, n := w.read(); got != want || n != writes {
				t.Fatalf("%s: %q in %d writes, want %q in %d", when, got, n, want, writes)
			}
		}
		_, _ = s.Write([]byte("a\n"))
		expect("first line", "a\n", 1)
		time.Sleep(10 * time.Millisecond)
		_, _ = s.Write([]byte("b\n"))
		time.Sleep(50 * time.Millisecond)
		_, _ = s.Write([]byte("c\n"))
		time.Sleep(49 * time.Millisecond)
		expect("before the delay", "a\n", 1)
		time.Sleep(time.Millisecond)
		expect("after the delay", "a\nb\nc\n", 2)
		time.Sleep(40 * time.Millisecond)
		_, _ = s.Write([]byte("d\n")) // 40 ms after the last write: waits
		expect("soon after a write", "a\nb\nc\n", 2)
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		expect("after Sync", "a\nb\nc\nd\n", 3)
		time.Sleep(time.Hour) // no flush is pending: nothing more is written
		expect("an hour later", "a\nb\nc\nd\n", 3)
		_, _ = s.Write([]byte("e\n"))
		expect("after a quiet hour", "a\nb\nc\nd\ne\n", 4)
	})
}

// TestLogSinkFull: a full buffer is written at once; lines keep their order under
// concurrent writers.
func TestLogSinkFull(t *testing.T) {
	var w countingBuffer
	s := newLogSink(&w, time.Hour, 256)
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
