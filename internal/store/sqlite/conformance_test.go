package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/sqlite"
	"github.com/schedd/schedd/internal/store/storetest"
)

func TestSQLiteConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, b storetest.Bounds) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "q.db"),
			sqlite.Options{Synchronous: sqlite.SyncFull, MaxEntries: b.MaxEntries, MaxPayload: b.MaxPayload})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		})
		return s
	})
}
