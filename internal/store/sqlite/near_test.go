package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// Near and FirstDue read the pending entries from the index on their due time, as a range
// of it, never a scan of every live entry.
func TestNearUsesTheDueIndex(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "schedd.db"), Options{})
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{nearPendingSQL, []any{int64(100), int64(0), int64(0), 10}},
		{firstDueSQL, []any{int64(100)}},
	} {
		rows, err := s.rdb.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q.sql, q.args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		p := strings.Join(plan, "; ")
		if !strings.HasPrefix(p, "SEARCH deliveries USING ") || !strings.Contains(p, "INDEX deliveries_next (next_attempt_at") {
			t.Errorf("plan of %s: %s; want a search of a range of deliveries_next", q.sql, p)
		}
	}
}
