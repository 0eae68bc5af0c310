package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/store"
)

// BenchmarkWritePaths measures the store's own CPU (synchronous=NORMAL: no fsync per
// commit) on the two write paths whose whole-process figures are the batch enqueue and the
// drain: batches of 100 entries, and 16 workers claiming and completing entries one by one;
// as the store is, with the counts' triggers of schema step 4 put back (what keeping the
// counts once per group commit replaced, step 6), and without the due index (step 5), to
// see what each costs.
func BenchmarkWritePaths(b *testing.B) {
	step4 := deliveriesSchema.steps[3]
	variants := map[string][]string{
		"as-is":         nil,
		"with-triggers": {step4[strings.Index(step4, "CREATE TRIGGER"):]},
		"no-due-index":  {"DROP INDEX deliveries_next"},
	}
	for _, v := range []string{"as-is", "with-triggers", "no-due-index"} {
		open := func(b *testing.B) *SQLite {
			path := b.TempDir() + "/q.db"
			s, err := Open(context.Background(), path, settings(Options{Synchronous: SyncNormal}))
			if err != nil {
				b.Fatal(err)
			}
			db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
			if err != nil {
				b.Fatal(err)
			}
			for _, q := range variants[v] {
				if _, err := db.Exec(q); err != nil {
					b.Fatal(err)
				}
			}
			db.Close()
			return s
		}
		payload := make([]byte, 256)
		batch := func(k int) []store.NewEntry {
			ns := make([]store.NewEntry, 100)
			for i := range ns {
				ns[i] = store.NewEntry{Sink: "hook", Key: fmt.Sprint("k", k, "-", i), Payload: payload}
			}
			return ns
		}
		b.Run(v+"/batch100", func(b *testing.B) {
			s := open(b)
			defer s.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.EnqueueBatch(context.Background(), batch(i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*100), "us/entry")
		})
		b.Run(v+"/drain16", func(b *testing.B) {
			s := open(b)
			defer s.Close()
			n := b.N
			var ids []int64
			for k := 0; k*100 < n; k++ {
				res, err := s.EnqueueBatch(context.Background(), batch(k))
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range res {
					ids = append(ids, r.Entry.ID)
				}
			}
			ep, _ := s.NewEpoch(context.Background())
			ch := make(chan int64, len(ids))
			for _, id := range ids[:n] {
				ch <- id
			}
			close(ch)
			b.ResetTimer()
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					for id := range ch {
						if _, err := s.ClaimIfDue(context.Background(), id, ep, time.Minute, 5); err != nil {
							b.Error(err)
							return
						}
						if err := s.Complete(context.Background(), id, ep); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}
