package queue_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/schedd/schedd/internal/queue"
	"github.com/schedd/schedd/internal/queue/queuetest"
)

func TestSQLiteConformance(t *testing.T) {
	queuetest.Run(t, func(t *testing.T, b queuetest.Bounds) queue.Store {
		s, err := queue.Open(context.Background(), filepath.Join(t.TempDir(), "q.db"),
			queue.Options{MaxEntries: b.MaxEntries, MaxPayload: b.MaxPayload})
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
