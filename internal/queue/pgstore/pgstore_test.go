package pgstore_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/queue"
	"github.com/schedd/schedd/internal/queue/pgstore"
	"github.com/schedd/schedd/internal/queue/pgstore/pgtest"
	"github.com/schedd/schedd/internal/queue/queuetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func open(t *testing.T, dsn string, o pgstore.Options) *pgstore.Store {
	t.Helper()
	if o.HostID == "" {
		o.HostID = "host-a"
	}
	s, err := pgstore.Open(context.Background(), dsn, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func TestPostgresConformance(t *testing.T) {
	queuetest.Run(t, func(t *testing.T, b queuetest.Bounds) queue.Store {
		return open(t, pgtest.DSN(t), pgstore.Options{MaxEntries: b.MaxEntries, MaxPayload: b.MaxPayload})
	})
}

// A transaction a vanished host left open ends after one lease on the server, releasing
// its locks for the other hosts.
func TestIdleTransactionTimeout(t *testing.T) {
	s := open(t, pgtest.DSN(t), pgstore.Options{HostLease: 1500 * time.Millisecond})
	var v string
	if err := s.Pool().QueryRow(context.Background(), "SHOW idle_in_transaction_session_timeout").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != "1500ms" {
		t.Fatalf("idle_in_transaction_session_timeout = %q, want 1500ms", v)
	}
}
