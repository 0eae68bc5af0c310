package main

import (
	"io"
	"sync"
	"time"

	"go.uber.org/zap/zapcore"
)

// Log buffering: a daemon that logs a line per heartbeat pulse would otherwise make a write
// system call per line (at 10,000 agents every 30 s, 333 a second).
const (
	// logFlushDelay is how long a log line may wait in the buffer, and how often the log is
	// written while lines keep coming: at most this much of the log is lost when the daemon
	// is killed with SIGKILL or dies of a runtime fatal error.
	logFlushDelay = 100 * time.Millisecond
	// logBufferSize is how much may wait before it is written at once.
	logBufferSize = 64 << 10
)

// logSink writes log lines to w at most once per delay: a line that comes after a quiet
// delay is written at once, and the lines that follow within delay of a write wait for the
// next one (delay after the first of them), unless size bytes wait or Sync is called.
// While nothing waits it keeps no goroutine and no armed timer, so an idle daemon is never
// woken by its logger.
type logSink struct {
	w     io.Writer
	delay time.Duration
	size  int

	writeMu sync.Mutex // serializes writes to w, so lines keep their order; taken before mu

	mu    sync.Mutex
	buf   []byte
	spare []byte // the buffer last written out, reused
	armed bool   // the timer will flush buf
	timer *time.Timer
	last  time.Time // the last write to w
}

var _ zapcore.WriteSyncer = (*logSink)(nil)

func newLogSink(w io.Writer, delay time.Duration, size int) *logSink {
	s := &logSink{w: w, delay: delay, size: size}
	s.timer = time.AfterFunc(time.Hour, func() { _ = s.flush() }) // a failed write has no one to tell
	s.timer.Stop()
	return s
}

// Write queues p, a whole line from zap's core, and writes what waits when the log was
// quiet for delay or size bytes wait.
func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.buf = append(s.buf, p...)
	t := time.Now()
	now := len(s.buf) >= s.size || (!s.armed && t.Sub(s.last) >= s.delay)
	if !now && !s.armed {
		s.armed = true
		s.timer.Reset(s.delay)
	}
	s.mu.Unlock()
	if now {
		if err := s.flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Sync writes out what waits, then syncs w if it can.
func (s *logSink) Sync() error {
	if err := s.flush(); err != nil {
		return err
	}
	if ws, ok := s.w.(interface{ Sync() error }); ok {
		return ws.Sync()
	}
	return nil
}

// flush writes out what waits.
func (s *logSink) flush() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	data := s.buf
	s.buf, s.spare = s.spare[:0], nil
	if s.armed {
		s.armed = false
		s.timer.Stop()
	}
	s.mu.Unlock()
	if len(data) == 0 {
		return nil
	}
	_, err := s.w.Write(data)
	s.mu.Lock()
	s.last = time.Now()
	if cap(data) <= 2*s.size { // a buffer grown by one huge line is not kept
		s.spare = data[:0]
	}
	s.mu.Unlock()
	return err
}
