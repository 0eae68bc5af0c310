package schedule

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// cronDoc holds the daylight-saving tables this test computes again.
var cronDoc = filepath.Join("..", "..", "..", "docs", "cron.md")

// dstTableRE marks a table: its runs are every run in [from, to) of its schedules.
var dstTableRE = regexp.MustCompile(`^<!-- dst-table: (\S+) (\S+) -->$`)

// docRun is one row of a table: a run of a schedule, in local time and in UTC.
type docRun struct {
	line       int
	local, utc string
}

// TestCronDocDSTTables recomputes every row of the daylight-saving tables of docs/cron.md
// with this package: for each schedule named in a table, its rows must be exactly its runs
// in the table's window, in America/New_York and in UTC, in order.
func TestCronDocDSTTables(t *testing.T) {
	data, err := os.ReadFile(cronDoc)
	if err != nil {
		t.Fatal(err)
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	tables := 0
	for i := 0; i < len(lines); i++ {
		m := dstTableRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		tables++
		from, err1 := time.Parse(time.RFC3339, m[1])
		to, err2 := time.Parse(time.RFC3339, m[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("%s:%d: bad window %q %q", cronDoc, i+1, m[1], m[2])
		}
		runs := map[string][]docRun{}
		var order []string
		j := i + 1
		for ; j < len(lines) && (lines[j] == "" || strings.HasPrefix(lines[j], "|")); j++ {
			if !strings.HasPrefix(lines[j], "| `") {
				continue
			}
			cells := strings.Split(strings.Trim(lines[j], "|"), "|")
			if len(cells) != 3 {
				t.Errorf("%s:%d: a row needs 3 cells (schedule | local | UTC)", cronDoc, j+1)
				continue
			}
			expr := strings.Trim(strings.TrimSpace(cells[0]), "`")
			if _, seen := runs[expr]; !seen {
				order = append(order, expr)
			}
			runs[expr] = append(runs[expr], docRun{j + 1, strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])})
		}
		if len(order) == 0 {
			t.Errorf("%s:%d: the table has no rows", cronDoc, i+1)
		}
		for _, expr := range order {
			var s Schedule
			if d, ok := strings.CutPrefix(expr, "every: "); ok {
				dur, err := time.ParseDuration(d)
				if err != nil {
					t.Errorf("%s: %v", expr, err)
					continue
				}
				s = Every(dur, time.Unix(0, 0))
			} else if s, err = Parse(expr, ny); err != nil {
				t.Errorf("%s: %v", expr, err)
				continue
			}
			var want []docRun
			for at := from.Add(-time.Nanosecond); ; {
				next, ok := s.Next(at)
				if !ok || !next.Before(to) {
					break
				}
				want = append(want, docRun{local: next.In(ny).Format(time.RFC3339), utc: next.UTC().Format(time.RFC3339)})
				at = next
			}
			got := runs[expr]
			for k := range max(len(got), len(want)) {
				switch {
				case k >= len(got):
					t.Errorf("%s:%d: %s: missing run %s (%s)", cronDoc, i+1, expr, want[k].local, want[k].utc)
				case k >= len(want):
					t.Errorf("%s:%d: %s: no such run: %s (%s)", cronDoc, got[k].line, expr, got[k].local, got[k].utc)
				case got[k].local != want[k].local || got[k].utc != want[k].utc:
					t.Errorf("%s:%d: %s: %s | %s, want %s | %s", cronDoc, got[k].line, expr, got[k].local, got[k].utc, want[k].local, want[k].utc)
				}
			}
		}
	}
	if tables != 2 {
		t.Errorf("%s has %d daylight-saving tables, want 2 (a gap day and an overlap day)", cronDoc, tables)
	}
}
