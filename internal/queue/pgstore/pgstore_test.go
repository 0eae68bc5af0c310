package pgstore_test

import (
	"context"
	"os"
	"testing"

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
