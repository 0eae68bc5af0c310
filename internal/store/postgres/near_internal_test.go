package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedd/schedd/internal/store/postgres/pgtest"
	"github.com/schedd/schedd/internal/store/storetest"
)

// The runtime's rescan (Near) reads from indexes and the status counts from the kept counts:
// with 50,000 entries pending, due over a day, and a few being sent, none of their queries
// scans the table, and Near's do not scan the index of every live entry.
func TestNearUsesIndexes(t *testing.T) {
	ctx := context.Background()
	s := openReady(t, pgtest.DSN(t), "near")
	_, err := s.pool.Exec(ctx, `INSERT INTO schedd_deliveries
		(sink, idem_key, payload, payload_size, payload_hash, state, next_attempt_at, created_at, updated_at, owner_epoch, lease_until)
		SELECT 'hook', 'near-' || g, '\x00', 1, '\x00', CASE WHEN g % 10000 = 0 THEN 'sending' ELSE 'pending' END,
			1000000 + g * 1728, 0, 0, 1, 0 FROM generate_series(1, 50000) g`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE schedd_deliveries"); err != nil {
		t.Fatal(err)
	}
	if p := explain(t, s.pool, countsSQL); strings.Contains(p, "Seq Scan on schedd_deliveries") ||
		!strings.Contains(p, "schedd_delivery_counts") {
		t.Errorf("plan of the counts:\n%s\nwant the kept counts and no scan of the deliveries", p)
	}
	for _, q := range []struct {
		sql, index string
		args       []any
	}{
		{nearPendingSQL, "schedd_deliveries_next", []any{int64(1000000 + 100*1728), int64(-1 << 63), int64(0), 10000}},
		{nearSendingSQL, "schedd_deliveries_sending", []any{int64(0), 10000}},
		{firstDueSQL, "schedd_deliveries_next", []any{int64(1000000 + 100*1728)}},
	} {
		p := explain(t, s.pool, q.sql, q.args...)
		if !strings.Contains(p, q.index) || strings.Contains(p, "Seq Scan") || strings.Contains(p, "schedd_deliveries_live") {
			t.Errorf("plan of\n%s\nis\n%s\nwant a scan of %s", q.sql, p, q.index)
		}
	}
}

// explain is the plan the server makes for sql with args, one line per node.
func explain(t *testing.T, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, sql string, args ...any) string {
	t.Helper()
	rows, err := q.Query(context.Background(), "EXPLAIN "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// WithTestSettings gives o what the config file gives the store where o leaves it unset.
func WithTestSettings(o Options) Options {
	if o.HostLease == 0 {
		o.HostLease = 30 * time.Second
	}
	if o.MaxConns == 0 {
		o.MaxConns = 8
	}
	if o.MaxPayload == 0 {
		o.MaxPayload = storetest.MaxPayload
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = storetest.MaxEntries
	}
	return o
}
