package respawn

import (
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/platform"
)

// outputLogger logs a gateway's output line by line with its pid. It is called from the
// platform's drainer goroutines, which must never block on us: lines beyond the rate cap
// are dropped and counted, and the count is logged once per second. Every line, dropped
// or not, is also kept in the ring (if any) for `schedd logs`.
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
	tail    *OutputRing // the last tailLines lines, each cut at tailLineMax
}

// tailLines is how many of its last output lines a failed gateway shows in the status,
// each cut at tailLineMax bytes.
const (
	tailLines   = 20
	tailLineMax = 1024
)

func newOutputLogger(log *zap.Logger, perSec int, ring *OutputRing) *outputLogger {
	return &outputLogger{log: log, ring: ring, perSec: perSec, pidc: make(chan struct{}), tail: NewOutputRing(tailLines)}
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
		if o.dropped > 0 {
			o.log.Warn("gateway output dropped over the rate cap", zap.Int("pid", o.pid),
				zap.Int("lines", o.dropped), zap.Int("max_lines_per_second", o.perSec))
		}
		o.window, o.n, o.dropped = now, 0, 0
	}
	o.n++
	keep := o.n <= o.perSec
	if !keep {
		o.dropped++
	}
	o.mu.Unlock()
	text := string(b)
	t := text
	if len(t) > tailLineMax {
		// A clone, so the cut line does not pin the whole original in memory.
		t = strings.Clone(cutUTF8(t, tailLineMax))
	}
	o.tail.Add(api.LogLine{Text: t})
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

// lastLines returns a copy of the last lines of output.
func (o *outputLogger) lastLines() []string {
	lines, _ := o.tail.Last(tailLines)
	texts := make([]string, len(lines))
	for i, l := range lines {
		texts[i] = l.Text
	}
	return texts
}
