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
	// logFlushEvery is how often the log is written while lines keep coming: a line is
	// written with those waiting once the oldest of them is this old.
	logFlushEvery = 100 * time.Millisecond
	// logFlushMax is how long a line may wait when no other follows it: at most this much
	// of the log is lost when the daemon is killed with SIGKILL or dies of a runtime fatal
	// error.
	logFlushMax = 250 * time.Millisecond
	// logBufferSize is how much may wait before it is written at once.
	logBufferSize = 64 << 10
)

// logSink writes log lines to w in batches. A line that comes after a quiet spell (no
// write for every) is written at once. Lines that follow are written together with a later
// line that finds the oldest of them every old, so a busy log is written from the goroutines
// that log, at most once per every; a timer writes what waits when nothing follows within
// maxWait; size bytes waiting or Sync write at once. While nothing waits it keeps no
// goroutine and no armed timer, and while lines keep coming its timer never fires, so the
// logger wakes the daemon for nothing.
type logSink struct {
	w       io.Writer
	every   time.Duration
	maxWait time.Duration
	size    int

	writeMu sync.Mutex // serializes writes to w, so lines keep their order; taken before mu

	mu    sync.Mutex
	buf   []byte
	spare []byte    // the buffer last written out, reused
	first time.Time // when the oldest waiting line came
	armed bool      // the timer will flush buf
	timer *time.Timer
	last  time.Time // the last write to w
}

var _ zapcore.WriteSyncer = (*logSink)(nil)

func newLogSink(w io.Writer, every, maxWait time.Duration, size int) *logSink {
	s := &logSink{w: w, every: every, maxWait: maxWait, size: size}
	s.timer = time.AfterFunc(time.Hour, func() { _ = s.flush() }) // a failed write has no one to tell
	s.timer.Stop()
	return s
}

// Write queues p, a whole line from zap's core, and writes what waits when the log was
// quiet, when the oldest waiting line is every old, or when size bytes wait.
func (s *logSink) Write(p []byte) (int, error) {
	t := time.Now()
	s.mu.Lock()
	if len(s.buf) == 0 {
		s.first = t
	}
	s.buf = append(s.buf, p...)
	now := len(s.buf) >= s.size || t.Sub(s.first) >= s.every || (len(s.buf) == len(p) && t.Sub(s.last) >= s.every)
	if !now && !s.armed {
		s.armed = true
		s.timer.Reset(s.maxWait)
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
