package sqlite

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/schedd/schedd/internal/store"
)

// BenchmarkEnqueue measures durable enqueues (WAL, synchronous=FULL) from one caller and
// from 16 concurrent callers sharing group commits. The figures depend on the disk's fsync
// cost; compare them only with each other and with a raw fsync baseline on the same disk.
func BenchmarkEnqueue(b *testing.B) { benchEnqueue(b, Options{}) }

// BenchmarkEnqueueNormal is BenchmarkEnqueue with synchronous=NORMAL (no fsync per commit):
// the store's own CPU per enqueue, which the disk's fsync hides in BenchmarkEnqueue.
func BenchmarkEnqueueNormal(b *testing.B) { benchEnqueue(b, Options{Synchronous: SyncNormal}) }

func benchEnqueue(b *testing.B, opts Options) {
	for _, callers := range []int{1, 16} {
		b.Run(fmt.Sprint("callers=", callers), func(b *testing.B) {
			s, err := Open(context.Background(), b.TempDir()+"/q.db", settings(opts))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			payload := make([]byte, 256)
			var n atomic.Int64
			enqueue := func() bool {
				k := n.Add(1)
				if _, _, err := s.Enqueue(context.Background(), store.NewEntry{Sink: "hook", Key: fmt.Sprint("k", k), Payload: payload}); err != nil {
					b.Error(err)
					return false
				}
				return true
			}
			b.ResetTimer()
			if callers == 1 { // RunParallel would run GOMAXPROCS callers
				for i := 0; i < b.N && enqueue(); i++ {
				}
			} else {
				b.SetParallelism(callers / runtime.GOMAXPROCS(0))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() && enqueue() {
					}
				})
			}
			b.StopTimer()
			st := s.Stats()
			b.ReportMetric(float64(st.Ops)/float64(max(st.Commits, 1)), "ops/commit")
		})
	}
}
