package main

import (
	"io"
	"time"

	"go.uber.org/zap/zapcore"
)

// The daemon's log is buffered, so that a line per heartbeat pulse is not a write system
// call per line.
const (
	// logFlushInterval is how long a line may wait before it is written; at most this much
	// of the log is lost when schedd is killed with SIGKILL. Short, because people and tests
	// watch the log.
	logFlushInterval = 100 * time.Millisecond
	// logBufferSize is how much may wait before it is written at once.
	logBufferSize = 64 << 10
)

// newLogSink buffers writes to w with zap's own buffered writer. Its Sync writes out what
// waits but does not fsync w: the flush loop calls Sync every interval, and stderr is
// mostly a pipe or a terminal, where fsync fails. Stop it to flush and end its goroutine.
func newLogSink(w io.Writer) *zapcore.BufferedWriteSyncer {
	return &zapcore.BufferedWriteSyncer{
		WS:            zapcore.AddSync(struct{ io.Writer }{w}), // hides w's own Sync
		Size:          logBufferSize,
		FlushInterval: logFlushInterval,
	}
}

// syncOnWarn makes core write a warning or an error at once, with what waits before it:
// those should not wait for the flush interval. (zap syncs by itself only above Error.)
func syncOnWarn(core zapcore.Core, sink zapcore.WriteSyncer) zapcore.Core {
	return zapcore.RegisterHooks(core, func(e zapcore.Entry) error {
		if e.Level >= zapcore.WarnLevel {
			return sink.Sync()
		}
		return nil
	})
}
