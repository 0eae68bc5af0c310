package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docs/scenarios.md defines the fault scenarios (R-FAMILY-NN) and the queue properties
// (Pn) that comments and tests cite. TestScenarioTable keeps it complete and honest.
//
// A citation is, anywhere in a .go file of the module (this file excepted, so that the
// examples below do not count):
//   - "R-", an upper-case family, "-" and digits, on word boundaries;
//   - in a test or fuzz function's name, "_R", the family and two digits run together:
//     TestX_RFAMILY07;
//   - an upper-case P with one or two digits, not preceded by an upper-case letter or a
//     digit and not followed by a letter or a digit: "(P3)", "P13/P15", TestCapP13,
//     TestModel_P4_P6. That leaves out P2P, HTTP2, P50us, base64 such as "AP8=" and P999.
//     P50, P90, P95 and P99 are latency percentiles, never properties.
var (
	scenarioDashed = regexp.MustCompile(`\bR-[A-Z]+-[0-9]+\b`)
	scenarioInName = regexp.MustCompile(`\b(?:Test|Fuzz)\w*_R([A-Z]+)([0-9]{2})\b`)
	scenarioP      = regexp.MustCompile(`P[0-9]+`)
	percentiles    = map[string]bool{"P50": true, "P90": true, "P95": true, "P99": true}
)

// scenarioHit is one citation: the ID and its byte offset in the text.
type scenarioHit struct {
	id  string
	off int
}

func scenarioIDs(text string) []scenarioHit {
	var hits []scenarioHit
	for _, m := range scenarioDashed.FindAllStringIndex(text, -1) {
		hits = append(hits, scenarioHit{text[m[0]:m[1]], m[0]})
	}
	for _, m := range scenarioInName.FindAllStringSubmatchIndex(text, -1) {
		hits = append(hits, scenarioHit{"R-" + text[m[2]:m[3]] + "-" + text[m[4]:m[5]], m[0]})
	}
	for _, m := range scenarioP.FindAllStringIndex(text, -1) {
		id := text[m[0]:m[1]]
		before, after := byte(' '), byte(' ')
		if m[0] > 0 {
			before = text[m[0]-1]
		}
		if m[1] < len(text) {
			after = text[m[1]]
		}
		if len(id) > 3 || percentiles[id] || isUpperOrDigit(before) || isLetterOrDigit(after) {
			continue
		}
		hits = append(hits, scenarioHit{id, m[0]})
	}
	return hits
}

func isUpperOrDigit(b byte) bool  { return 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' }
func isLetterOrDigit(b byte) bool { return isUpperOrDigit(b) || 'a' <= b && b <= 'z' }

func TestScenarioIDExtraction(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"// R-CHILD-03: reset (R-SUP-05).", "R-CHILD-03 R-SUP-05"},
		{"func TestCrash_RDLV01(t", "R-DLV-01"},
		{"x_READY1 SIG_RTMIN12 TestX_RDLV1", ""},
		{"(P3), P13/P15, P1, P2 and TestCapP13 TestModel_P4_P6", "P3 P13 P15 P1 P2 P13 P4 P6"},
		{`P2P HTTP2 P50us P99us "AP8=" P999 P99 P50 XR-SIG-01 R-sig-01`, ""},
	} {
		var got []string
		for _, h := range scenarioIDs(tc.text) {
			got = append(got, h.id)
		}
		slices.Sort(got)
		want := strings.Fields(tc.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%q: got %v, want %v", tc.text, got, want)
		}
	}
}

// testRef names a top-level function by its package directory, relative to the module root.
type testRef struct{ pkg, name string }

func (r testRef) String() string { return "`" + r.pkg + "` " + r.name }

type scenarioScan struct {
	cited  map[string][]string         // ID -> file:line of every citation
	citers map[string]map[testRef]bool // ID -> tests citing it in their name, doc or body
	tests  map[testRef]bool            // every test and fuzz function of the module
}

// scanScenarios reads every .go file under root the way the go tool would: no vendor,
// testdata, or directories starting with "." or "_".
func scanScenarios(t *testing.T, root string) scenarioScan {
	s := scenarioScan{cited: map[string][]string{}, citers: map[string]map[testRef]bool{}, tests: map[testRef]bool{}}
	self, err := filepath.Abs("scenarios_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "vendor" || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		if abs, _ := filepath.Abs(path); abs == self {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		s.addFile(fset.File(f.Pos()), f, pkg, filepath.ToSlash(rel), string(src))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (s scenarioScan) addFile(tf *token.File, f *ast.File, pkg, rel, src string) {
	type span struct {
		from, to int
		ref      testRef
	}
	var tests []span
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Recv != nil {
			continue
		}
		ref := testRef{pkg, fd.Name.Name}
		if strings.HasSuffix(rel, "_test.go") && (strings.HasPrefix(ref.name, "Test") || strings.HasPrefix(ref.name, "Fuzz")) {
			s.tests[ref] = true
			from := fd.Pos()
			if fd.Doc != nil {
				from = fd.Doc.Pos()
			}
			tests = append(tests, span{tf.Offset(from), tf.Offset(fd.End()), ref})
		}
	}
	for _, h := range scenarioIDs(src) {
		s.cited[h.id] = append(s.cited[h.id], fmt.Sprintf("%s:%d", rel, tf.Line(tf.Pos(h.off))))
		for _, sp := range tests {
			if sp.from <= h.off && h.off < sp.to {
				if s.citers[h.id] == nil {
					s.citers[h.id] = map[testRef]bool{}
				}
				s.citers[h.id][sp.ref] = true
			}
		}
	}
}

// scenarioRow is one row of the table: its line in the file and the tests it names
// (none when the row says "not covered yet").
type scenarioRow struct {
	line  int
	tests []testRef
}

var (
	scenarioRowID = regexp.MustCompile(`^(R-[A-Z]+-[0-9]+|P[0-9]+)$`)
	scenarioGroup = regexp.MustCompile("^`([^`]+)` +(.+)$")
	scenarioTest  = regexp.MustCompile(`^(Test|Fuzz)\w*$`)
)

// scenarioDoc is the table, relative to the module root.
const scenarioDoc = "docs/scenarios.md"

// readScenarioTable parses the rows "| ID | what | tests |" of the table. The tests column
// is "not covered yet" (a reason may follow) or groups "`pkg/dir` TestA, TestB" separated
// by ";".
func readScenarioTable(t *testing.T, root string) map[string]scenarioRow {
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(scenarioDoc)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]scenarioRow{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if cells[0] == "ID" || strings.Trim(cells[0], "-: ") == "" {
			continue
		}
		if len(cells) != 3 || !scenarioRowID.MatchString(cells[0]) {
			t.Errorf("%s:%d: want | ID | what | tests |, got %q", scenarioDoc, n, line)
			continue
		}
		id := cells[0]
		if prev, dup := rows[id]; dup {
			t.Errorf("%s:%d: %s has a row already, at line %d", scenarioDoc, n, id, prev.line)
			continue
		}
		row := scenarioRow{line: n}
		if !strings.HasPrefix(cells[2], "not covered yet") {
			for group := range strings.SplitSeq(cells[2], ";") {
				m := scenarioGroup.FindStringSubmatch(strings.TrimSpace(group))
				if m == nil {
					t.Errorf("%s:%d: %s: tests %q: want \"`pkg/dir` TestA, TestB\" or \"not covered yet\"", scenarioDoc, n, id, group)
					continue
				}
				for name := range strings.SplitSeq(m[2], ",") {
					name = strings.TrimSpace(name)
					if !scenarioTest.MatchString(name) {
						t.Errorf("%s:%d: %s: %q is not a test name", scenarioDoc, n, id, name)
					}
					row.tests = append(row.tests, testRef{m[1], name})
				}
			}
		}
		rows[id] = row
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestScenarioTable fails for an ID cited in code without a row, a row naming a test that
// does not exist, and a test citing an ID whose row does not name it. A row for an ID
// that no code cites is allowed: the table lists the known gaps too.
func TestScenarioTable(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if first, _, _ := strings.Cut(string(mod), "\n"); err != nil || strings.TrimSpace(first) != "module github.com/schedd/schedd" {
		t.Fatalf("%s is not the module root: %v", root, err)
	}
	rows := readScenarioTable(t, root)
	scan := scanScenarios(t, root)

	for _, id := range slices.Sorted(maps.Keys(scan.cited)) {
		if _, ok := rows[id]; !ok {
			t.Errorf("%s is cited at %s but has no row in %s", id, strings.Join(scan.cited[id], ", "), scenarioDoc)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(rows)) {
		row := rows[id]
		for _, ref := range row.tests {
			if !scan.tests[ref] {
				t.Errorf("%s:%d: %s names %s, which does not exist", scenarioDoc, row.line, id, ref)
			}
		}
		for _, ref := range slices.SortedFunc(maps.Keys(scan.citers[id]), compareTestRefs) {
			if !slices.Contains(row.tests, ref) {
				t.Errorf("%s:%d: %s is cited by %s, which its row does not name", scenarioDoc, row.line, id, ref)
			}
		}
	}
}

func compareTestRefs(a, b testRef) int {
	if c := strings.Compare(a.pkg, b.pkg); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}
