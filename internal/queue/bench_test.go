package queue

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkEnqueue measures durable enqueues (WAL, synchronous=FULL) from one caller and
// from 16 concurrent callers sharing group commits. The figures depend on the disk's fsync
// cost; compare them only with each other and with a raw fsync baseline on the same disk.
func BenchmarkEnqueue(b *testing.B) {
	for _, callers := range []int{1, 16} {
		b.Run(fmt.Sprint("callers=", callers), func(b *testing.B) {
			s, err := Open(context.Background(), b.TempDir()+"/q.db", Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			payload := make([]byte, 256)
			var n atomic.Int64
			b.SetParallelism(callers)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					k := n.Add(1)
					if _, _, err := s.Enqueue(context.Background(), NewEntry{Sink: "hook", Key: fmt.Sprint("k", k), Payload: payload}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			st := s.Stats()
			b.ReportMetric(float64(st.Ops)/float64(max(st.Commits, 1)), "ops/commit")
		})
	}
}
