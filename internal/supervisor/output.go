package supervisor

import (
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/platform"
)

// outputLogger logs a gateway's output line by line with its pid. It is called from the
// platform's drainer goroutines, which must never block on us: lines beyond the rate cap
// are dropped and counted, and the count is logged when their second is over, whether or
// not another line comes, and at the latest when the output ends (close). Every line,
// dropped or not, is also kept in the ring (if any) for `schedd logs`, and the last ones
// for the exit.
type outputLogger struct {
	log     *zap.Logger
	ring    *OutputRing
	perSec  int
	pidc    chan struct{} // closed once pid is known
	pid     int
	mu      sync.Mutex
	window  time.Time
	n       int
	dropped int
	flush   *time.Timer // logs the count of dropped lines when their window ends
	flushes int         // timers armed so far: a timer stopped too late knows it is stale
	tail    lastOutput  // the last lines, for the exit
}

func newOutputLogger(log *zap.Logger, perSec int, ring *OutputRing) *outputLogger {
	return &outputLogger{log: log, ring: ring, perSec: perSec, pidc: make(chan struct{})}
}

// started records the pid; lines that arrived before it wait for it.
func (o *outputLogger) started(pid int) {
	o.pid = pid
	close(o.pidc)
}

// line takes one line of output; cut > 0 says how many bytes of it the platform dropped
// after b (platform.MaxLine).
func (o *outputLogger) line(s platform.Stream, b []byte, cut int64) {
	<-o.pidc
	now := time.Now()
	o.mu.Lock()
	if now.Sub(o.window) >= time.Second {
		o.flushDropped()
		o.window, o.n = now, 0
	}
	o.n++
	keep := o.n <= o.perSec
	if !keep {
		o.dropped++
		if o.flush == nil {
			o.flushes++
			n := o.flushes
			o.flush = time.AfterFunc(o.window.Add(time.Second).Sub(now), func() { o.flushDue(n) })
		}
	}
	o.mu.Unlock()
	text := string(b)
	o.tail.add(s, text)
	if o.ring != nil {
		o.ring.Add(api.LogLine{Time: now, PID: o.pid, Stream: s.String(), Text: text, NotLogged: !keep, Truncated: cut > 0})
	}
	if !keep {
		return
	}
	if cut > 0 {
		o.log.Info(text, zap.Int("pid", o.pid), zap.Stringer("stream", s), zap.Int64("cut_bytes", cut))
		return
	}
	o.log.Info(text, zap.Int("pid", o.pid), zap.Stringer("stream", s))
}

// flushDue is flush timer n: the window of the dropped lines is over.
func (o *outputLogger) flushDue(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.flush == nil || n != o.flushes {
		return // stopped, or replaced, while it waited for the lock
	}
	o.flushDropped()
}

// flushDropped logs how many lines were dropped since the last count, if any. o.mu is held.
func (o *outputLogger) flushDropped() {
	if o.flush != nil {
		o.flush.Stop()
		o.flush = nil
	}
	if o.dropped > 0 {
		o.log.Warn("gateway output dropped over the rate cap", zap.Int("pid", o.pid),
			zap.Int("lines", o.dropped), zap.Int("max_lines_per_second", o.perSec))
		o.dropped = 0
	}
}

// close is called once the output has ended (the drainers are done): the count of lines
// dropped is logged now, not when the window ends.
func (o *outputLogger) close() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flushDropped()
}

// lastLines returns a copy of the last lines of output (lastOutput.last).
func (o *outputLogger) lastLines() []string { return o.tail.last() }
