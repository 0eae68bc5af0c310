package main

import (
	"fmt"
	"go/scanner"
	"go/token"
	"hash/fnv"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dupeWindow is how many consecutive code lines make a block: no block of more than 15
// lines may stand twice.
const dupeWindow = 16

// dupeMinDoing is how many lines of a window must do something (hold a keyword, an
// operator or a call) for it to count: closing braces, struct fields and rows of values
// have the same shape everywhere, and 16 of them in a row prove nothing.
const dupeMinDoing = 8

// TestNoDuplicateBlocks: no block of more than 15 code lines stands twice inside
// internal/, as the same lines or as the same shape with other names (every name is one
// token, every literal one token of its kind; comments, blank lines, package clauses and
// imports are left out).
//
// It reads the tests too: the rule is about internal/, a test helper written twice drifts
// as production code does, and with the two rules below the tests' 36,000 lines held only
// two such blocks (both in the end-to-end tests, now one helper each). What tests are full of, rows of tables
// and lists of values, is data, not code to move into a function:
//   - a window counts only if at least dupeMinDoing of its 16 lines hold a keyword, an
//     operator or a call; without this rule ten more blocks are reported today, all rows
//     of tables or lists (heartbeat's active-hours cases, config's parse cases);
//   - a window that matches itself a few lines on (rows of one shape, even rows that call
//     something) is set aside: without either rule, 64 blocks are reported.
func TestNoDuplicateBlocks(t *testing.T) {
	files := map[string][]codeLine{}
	err := filepath.WalkDir("../../internal", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "testdata":
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go"):
			return nil
		}
		lines, err := codeShape(path)
		if err != nil {
			return err
		}
		files[strings.TrimPrefix(filepath.ToSlash(path), "../../")] = lines
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 200 {
		t.Fatalf("read only %d files", len(files))
	}
	for _, p := range findDuplicates(files) {
		t.Errorf("%s and %s: the same block stands twice: move it to one function and call it from both", p.a, p.b)
	}
}

// codeLine is one line of a source file that holds code, in the shape the check compares.
type codeLine struct {
	line  int    // in the file, from 1
	shape uint64 // hash of the line's normalized tokens
	doing bool   // holds a keyword, an operator or a call
}

// codeShape reads a Go file and returns its code lines, normalized: every identifier is
// one token, every literal one token of its kind, keywords and operators stay as they are;
// comments, blank lines, the package clause, the imports and the semicolons the scanner
// inserts at line ends are dropped.
func codeShape(path string) ([]codeLine, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	file := token.NewFileSet().AddFile(path, -1, len(src))
	var s scanner.Scanner
	var scanErr error
	s.Init(file, src, func(pos token.Position, msg string) { scanErr = fmt.Errorf("%s: %s", pos, msg) }, 0)
	var lines []codeLine
	var words []string
	cur, doing := 0, false
	flush := func() {
		if len(words) > 0 {
			h := fnv.New64a()
			h.Write([]byte(strings.Join(words, " ")))
			lines = append(lines, codeLine{line: cur, shape: h.Sum64(), doing: doing})
		}
		words, doing = words[:0], false
	}
	inHeader := false // within the package clause or an import declaration
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.SEMICOLON && lit == "\n" {
			continue
		}
		// Every file has a package clause and imports, and two files that import the
		// same packages share nothing to move.
		switch tok {
		case token.PACKAGE, token.IMPORT:
			inHeader = true
			continue
		case token.IDENT, token.STRING, token.LPAREN, token.RPAREN, token.PERIOD, token.SEMICOLON:
			if inHeader {
				continue
			}
		}
		inHeader = false
		if line := file.Line(pos); line != cur {
			flush()
			cur = line
		}
		switch {
		case tok == token.IDENT:
			words = append(words, "name")
		case tok.IsLiteral():
			words = append(words, tok.String()) // INT, FLOAT, IMAG, CHAR or STRING
		default:
			words = append(words, tok.String())
		}
		switch tok {
		case token.IDENT, token.LBRACE, token.RBRACE, token.LBRACK, token.RBRACK, token.COMMA,
			token.COLON, token.PERIOD, token.RPAREN, token.SEMICOLON, token.MUL:
		default:
			doing = doing || !tok.IsLiteral()
		}
	}
	flush()
	return lines, scanErr
}

// dupeSpan is one copy of a block: a file and its first and last line.
type dupeSpan struct {
	file        string
	first, last int
}

func (s dupeSpan) String() string { return fmt.Sprintf("%s:%d-%d", s.file, s.first, s.last) }

// dupePair is a block that stands twice: its two copies, a.file <= b.file.
type dupePair struct{ a, b dupeSpan }

// findDuplicates returns every block of dupeWindow or more code lines that stands twice
// among files, as maximal pairs: matching windows one line apart at the same offset are
// one longer block. Windows are found by a rolling hash of their line shapes, then
// confirmed line by line. Copies that overlap each other are not counted.
func findDuplicates(files map[string][]codeLine) []dupePair {
	type at struct {
		file  string
		index int // of the window's first code line
	}
	windows := map[uint64][]at{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		lines := files[name]
		const base = 1099511628211
		var pow uint64 = 1 // base^(dupeWindow-1): the weight of the line leaving the window
		for range dupeWindow - 1 {
			pow *= base
		}
		var h uint64
		doing := 0
		for i, l := range lines {
			if i >= dupeWindow {
				h -= lines[i-dupeWindow].shape * pow
				if lines[i-dupeWindow].doing {
					doing--
				}
			}
			h = h*base + l.shape
			if l.doing {
				doing++
			}
			if i >= dupeWindow-1 && doing >= dupeMinDoing {
				windows[h] = append(windows[h], at{name, i - dupeWindow + 1})
			}
		}
	}
	same := func(x, y at) bool {
		lx, ly := files[x.file], files[y.file]
		for k := range dupeWindow {
			if lx[x.index+k].shape != ly[y.index+k].shape {
				return false
			}
		}
		return true
	}
	near := func(x, y at) bool { return x.file == y.file && y.index-x.index < dupeWindow }
	// A window that matches itself a few lines on is rows of one shape, a table.
	table := map[at]bool{}
	for _, group := range windows {
		for i, x := range group {
			for _, y := range group[i+1:] {
				if near(x, y) && same(x, y) {
					table[x], table[y] = true, true
				}
			}
		}
	}
	// Matching windows by their two files and offset, so that consecutive ones join.
	type diagonal struct {
		fileA, fileB string
		offset       int
	}
	runs := map[diagonal][]int{}
	for _, group := range windows {
		for i, x := range group {
			for _, y := range group[i+1:] {
				if !table[x] && !table[y] && !near(x, y) && same(x, y) {
					d := diagonal{x.file, y.file, y.index - x.index}
					runs[d] = append(runs[d], x.index)
				}
			}
		}
	}
	var pairs []dupePair
	for d, starts := range runs {
		slices.Sort(starts)
		la, lb := files[d.fileA], files[d.fileB]
		for i := 0; i < len(starts); {
			j := i
			for j+1 < len(starts) && starts[j+1] == starts[j]+1 {
				j++
			}
			first, last := starts[i], starts[j]+dupeWindow-1
			pairs = append(pairs, dupePair{
				a: dupeSpan{d.fileA, la[first].line, la[last].line},
				b: dupeSpan{d.fileB, lb[first+d.offset].line, lb[last+d.offset].line},
			})
			i = j + 1
		}
	}
	slices.SortFunc(pairs, func(x, y dupePair) int {
		return strings.Compare(x.a.String()+" "+x.b.String(), y.a.String()+" "+y.b.String())
	})
	return pairs
}
