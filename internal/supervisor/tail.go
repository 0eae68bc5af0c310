package supervisor

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"github.com/schedd/schedd/internal/platform"
)

// tailLines is how many of its last output lines an exited gateway shows in the log and
// a failed one in the status, each cut at tailLineMax bytes.
const (
	tailLines   = 20
	tailLineMax = 1024
)

// lastOutput keeps the gateway's last tailLines lines of each stream, numbered in the
// order they were read. stdout and stderr are two pipes read apart: a line written to
// stderr last can be read before what stdout still holds, hundreds of lines in a flood.
// So the last lines are chosen per stream, and a crash's reason on stderr is not pushed
// out by stdout's backlog.
type lastOutput struct {
	mu    sync.Mutex
	seq   uint64
	lines [2][]seqLine // stdout, stderr: oldest first, at most tailLines each
}

type seqLine struct {
	seq  uint64
	text string
}

// add keeps text, cut at tailLineMax bytes, as the latest line of s.
func (t *lastOutput) add(s platform.Stream, text string) {
	if len(text) > tailLineMax {
		// A clone, so the cut line does not pin the whole original in memory.
		text = strings.Clone(cutUTF8(text, tailLineMax))
	}
	i := 0
	if s == platform.Stderr {
		i = 1
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	l := t.lines[i]
	if len(l) == tailLines {
		l = append(l[:0], l[1:]...)
	}
	t.lines[i] = append(l, seqLine{t.seq, text})
}

// last returns at most tailLines of the last lines, in the order they were read: each
// stream's latest, up to half of them, or more when the other stream has fewer.
func (t *lastOutput) last() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out, errs := t.lines[0], t.lines[1]
	nerr := min(len(errs), max(tailLines/2, tailLines-len(out)))
	nout := min(len(out), tailLines-nerr)
	lines := append(slices.Clone(out[len(out)-nout:]), errs[len(errs)-nerr:]...)
	slices.SortFunc(lines, func(a, b seqLine) int { return cmp.Compare(a.seq, b.seq) })
	texts := make([]string, len(lines))
	for i, l := range lines {
		texts[i] = l.text
	}
	return texts
}
