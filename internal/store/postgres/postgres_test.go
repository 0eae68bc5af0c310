package postgres_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/postgres"
	"github.com/schedd/schedd/internal/store/postgres/pgtest"
	"github.com/schedd/schedd/internal/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func open(t *testing.T, dsn string, o postgres.Options) *postgres.Store {
	t.Helper()
	if o.HostID == "" {
		o.HostID = "host-a"
	}
	s, err := postgres.Open(context.Background(), dsn, postgres.WithTestSettings(o))
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
	storetest.Run(t, func(t *testing.T, b storetest.Bounds) store.Store {
		return open(t, pgtest.DSN(t), postgres.Options{MaxEntries: b.MaxEntries, MaxPayload: b.MaxPayload})
	})
}

// A transaction a vanished host left open ends after one lease on the server, releasing
// its locks for the other hosts.
func TestIdleTransactionTimeout(t *testing.T) {
	s := open(t, pgtest.DSN(t), postgres.Options{HostLease: 1500 * time.Millisecond})
	var v string
	if err := s.Pool().QueryRow(context.Background(), "SHOW idle_in_transaction_session_timeout").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != "1500ms" {
		t.Fatalf("idle_in_transaction_session_timeout = %q, want 1500ms", v)
	}
}

// TestOpenNeedsTheConfigSettings: the settings the config file gives (the lease, the pool,
// the bounds) are required; a zero is refused before any connection, naming the option.
func TestOpenNeedsTheConfigSettings(t *testing.T) {
	full := postgres.WithTestSettings(postgres.Options{HostID: "h"})
	for name, clear := range map[string]func(*postgres.Options){
		"HostLease":  func(o *postgres.Options) { o.HostLease = 0 },
		"MaxConns":   func(o *postgres.Options) { o.MaxConns = 0 },
		"MaxPayload": func(o *postgres.Options) { o.MaxPayload = 0 },
		"MaxEntries": func(o *postgres.Options) { o.MaxEntries = 0 },
	} {
		o := full
		clear(&o)
		// An unreachable DSN: the refusal comes first.
		if _, err := postgres.Open(context.Background(), "postgres://127.0.0.1:1/none", o); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Open without %s: %v, want an error naming it", name, err)
		}
	}
}
