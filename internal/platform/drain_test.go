package platform

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// drainAll feeds chunks through a pipe to drain (each chunk one write) and returns what
// Output got, each line as "LEN:FIRST:LAST:CUT".
func drainAll(t *testing.T, chunks ...[]byte) []string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Close()
		for _, c := range chunks {
			if _, err := w.Write(c); err != nil {
				return
			}
		}
	}()
	var got []string
	drain(r, Stdout, func(_ Stream, line []byte, cut int64) {
		first, last := "", ""
		if len(line) > 0 {
			first, last = string(line[0]), string(line[len(line)-1])
		}
		got = append(got, fmt.Sprintf("%d:%q:%q:%d", len(line), first, last, cut))
	})
	return got
}

// R-INPUT-09: where a too long line is cut, and what is counted as cut: the newline and a
// "\r" before it never are, wherever the read buffer ends.
func TestDrainCutsLongLines(t *testing.T) {
	ys := func(n int) []byte { return bytes.Repeat([]byte("y"), n) }
	line := func(n int, first, last string, cut int) string {
		return fmt.Sprintf("%d:%q:%q:%d", n, first, last, cut)
	}
	for _, tc := range []struct {
		name   string
		chunks [][]byte
		want   []string
	}{
		{"exactly MaxLine", [][]byte{ys(MaxLine), []byte("\nnext\n")},
			[]string{line(MaxLine, "y", "y", 0), line(4, "n", "t", 0)}},
		{"MaxLine then CRLF", [][]byte{ys(MaxLine), []byte("\r\nnext\n")},
			[]string{line(MaxLine, "y", "y", 0), line(4, "n", "t", 0)}},
		{"CR ends the buffer", [][]byte{ys(MaxLine - 1), []byte("\r\nnext\n")},
			[]string{line(MaxLine-1, "y", "y", 0), line(4, "n", "t", 0)}},
		{"one byte over", [][]byte{ys(MaxLine + 1), []byte("\n")},
			[]string{line(MaxLine, "y", "y", 1)}},
		{"over, CRLF split across writes", [][]byte{ys(MaxLine + 3), []byte("\r"), []byte("\nz\n")},
			[]string{line(MaxLine, "y", "y", 3), line(1, "z", "z", 0)}},
		{"over at EOF", [][]byte{ys(3*MaxLine + 7)},
			[]string{line(MaxLine, "y", "y", 2*MaxLine+7)}},
		{"short lines around", [][]byte{[]byte("a\n"), ys(2 * MaxLine), []byte("\nb")},
			[]string{line(1, "a", "a", 0), line(MaxLine, "y", "y", MaxLine), line(1, "b", "b", 0)}},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			if got := drainAll(t, tc.chunks...); !slices.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// R-INPUT-09: a 20 MB line is read and dropped, not kept: the drainer allocates far less
// than the line (the head's copy once, a little per line).
func TestDrainLongLineMemory(t *testing.T) {
	chunk := bytes.Repeat([]byte("y"), 1<<20)
	chunks := make([][]byte, 20, 21)
	for i := range chunks {
		chunks[i] = chunk
	}
	chunks = append(chunks, []byte("\n"))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := drainAll(t, chunks...)
	runtime.ReadMemStats(&after)
	if want := fmt.Sprintf("%d:%q:%q:%d", MaxLine, "y", "y", 20<<20-MaxLine); !slices.Equal(got, []string{want}) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 2<<20 {
		t.Errorf("draining a 20 MB line allocated %d bytes", n)
	}
}
