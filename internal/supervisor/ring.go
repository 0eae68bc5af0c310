package supervisor

import (
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/schedd/schedd/internal/api"
)

// OutputRing keeps the gateway's most recent output lines for `schedd logs`. Adding is
// a short critical section and never waits for a reader: readers copy lines out under
// the lock and write them to their clients after it, so a slow reader falls behind and
// is told how many lines it missed instead of holding the gateway's drainers up.
type OutputRing struct {
	mu        sync.Mutex
	size      int
	buf       []api.LogLine // grows to size, then circular from start
	start     int           // index of the oldest line once buf is full
	next      uint64        // the Seq of the next line
	notLogged uint64
	wake      chan struct{} // closed at the next Add or Close; nil while nobody waits
	closed    bool
}

// NewOutputRing returns a ring of size lines: gateway.output.keep_lines, taken as given
// (a ring holds at least one line).
func NewOutputRing(size int) *OutputRing {
	return &OutputRing{size: ringSize(size), next: 1}
}

func ringSize(n int) int { return max(n, 1) }

// Add keeps a line, cutting its text at api.MaxLogLine; it sets the line's Seq.
func (r *OutputRing) Add(l api.LogLine) {
	if len(l.Text) > api.MaxLogLine {
		// A clone, so the cut line does not pin the whole original in memory.
		l.Text, l.Truncated = strings.Clone(cutUTF8(l.Text, api.MaxLogLine)), true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	l.Seq = r.next
	r.next++
	if l.NotLogged {
		r.notLogged++
	}
	if len(r.buf) < r.size {
		r.buf = append(r.buf, l)
	} else {
		r.buf[r.start] = l
		r.start = (r.start + 1) % r.size
	}
	if r.wake != nil {
		close(r.wake)
		r.wake = nil
	}
}

// cutUTF8 returns s cut to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// oldest is the Seq of the oldest line kept. r.mu is held.
func (r *OutputRing) oldest() uint64 { return r.next - uint64(len(r.buf)) }

// copyFrom copies up to n lines starting at seq, which is kept. r.mu is held.
func (r *OutputRing) copyFrom(seq uint64, n int) []api.LogLine {
	n = max(min(n, int(r.next-seq)), 0)
	out := make([]api.LogLine, n)
	for i := range out {
		out[i] = r.buf[(r.start+int(seq-r.oldest())+i)%len(r.buf)]
	}
	return out
}

// Last returns the last n lines kept, oldest first, and the Seq the line after them
// will have (where a follower goes on from).
func (r *OutputRing) Last(n int) ([]api.LogLine, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n = max(min(n, len(r.buf)), 0)
	return r.copyFrom(r.next-uint64(n), n), r.next
}

// Since returns up to n lines from seq on, oldest first, and how many lines from seq on
// the ring no longer holds (missed). When there are none yet, wait is closed at the next
// Add or at Close; closed reports that the ring is closed and holds nothing more from seq.
func (r *OutputRing) Since(seq uint64, n int) (lines []api.LogLine, missed uint64, wait <-chan struct{}, closed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o := r.oldest(); seq < o {
		missed, seq = o-seq, o
	}
	seq = min(seq, r.next)
	if seq < r.next {
		return r.copyFrom(seq, n), missed, nil, false
	}
	if r.closed {
		return nil, missed, nil, true
	}
	if r.wake == nil {
		r.wake = make(chan struct{})
	}
	return nil, missed, r.wake, false
}

// Stats returns the ring's size, how many lines it was given since it was made and how
// many of them were over the logging rate cap.
func (r *OutputRing) Stats() (size int, total, notLogged uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.size, r.next - 1, r.notLogged
}

// Resize changes the ring's size, keeping the newest lines that fit (a reloaded
// gateway.output.keep_lines).
func (r *OutputRing) Resize(size int) {
	size = ringSize(size)
	r.mu.Lock()
	defer r.mu.Unlock()
	if size == r.size {
		return
	}
	keep := min(len(r.buf), size)
	r.buf, r.start, r.size = r.copyFrom(r.next-uint64(keep), keep), 0, size
}

// Close ends every follower once it has read what is kept; lines added later are still
// kept, for whoever asks for them.
func (r *OutputRing) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.wake != nil {
		close(r.wake)
		r.wake = nil
	}
}
