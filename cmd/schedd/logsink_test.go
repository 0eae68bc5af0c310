package main

import (
	"bytes"
	"encoding/json"
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

// TestLoggerBuffers: the daemon's logger holds info lines back and writes them together
// within the flush interval; a warning goes out at once with what waits before it; stop
// writes the rest and ends the flush goroutine (the bubble fails if it is left running).
func TestLoggerBuffers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w countingBuffer
		cmd := newRunCmd(&globals{})
		cmd.SetErr(&w)
		if err := cmd.Flags().Set("log-format", "json"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		log, _, stop, err := newLogger(cmd, config.Log{})
		if err != nil {
			t.Fatal(err)
		}
		// expect: the messages written so far, in order, and in how many writes.
		expect := func(want string, writes int) {
			t.Helper()
			synctest.Wait()
			got, n := w.read()
			var msgs []string
			for line := range strings.Lines(got) {
				var e struct{ Msg string }
				if err := json.Unmarshal([]byte(line), &e); err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				msgs = append(msgs, e.Msg)
			}
			if strings.Join(msgs, " ") != want || n != writes {
				t.Fatalf("after %v: %q in %d writes, want %q in %d", time.Since(start), msgs, n, want, writes)
			}
		}

		log.Info("a")
		log.Info("b")
		time.Sleep(logFlushInterval - time.Millisecond)
		expect("", 0) // held back
		time.Sleep(time.Millisecond)
		expect("a b", 1) // together, within the interval

		log.Info("c")
		log.Warn("d", zap.Int("n", 2))
		expect("a b c d", 2) // at once, in order

		log.Info("e")
		stop()
		expect("a b c d e", 3)
	})
}
