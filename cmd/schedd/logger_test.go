package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/config"
)

// countingBuffer is a writer tests can read while the logger writes.
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

// TestLoggerWritesEachLineAtOnce: the daemon's logger writes every line as it is logged, one
// write per line, so nothing waits to be lost at exit; and it leaves no goroutine or timer
// behind (the bubble fails if one is left), so it never wakes an idle daemon.
func TestLoggerWritesEachLineAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
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
		var want []string
		for _, msg := range []string{"a", "b", "c"} {
			log.Info(msg, zap.Int("n", len(want)))
			want = append(want, msg)
			got, n := w.read()
			var msgs []string
			for line := range strings.Lines(got) {
				var e struct{ Msg string }
				if err := json.Unmarshal([]byte(line), &e); err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				msgs = append(msgs, e.Msg)
			}
			if strings.Join(msgs, " ") != strings.Join(want, " ") || n != len(want) {
				t.Fatalf("%q in %d writes, want %q in %d", msgs, n, want, len(want))
			}
		}
	})
}
