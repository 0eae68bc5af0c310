package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
	"github.com/schedd/schedd/internal/deliveries"
	"github.com/schedd/schedd/internal/store/sqlite"
	"github.com/schedd/schedd/internal/store/storetest"
)

// waitingSink is never ready: entries wait, so the benchmark measures the enqueue path.
type waitingSink struct{}

func (waitingSink) Send(context.Context, deliveries.Delivery) error { return nil }
func (waitingSink) Ready() bool                                     { return false }

// BenchmarkEnqueueAPI measures durable enqueues through the control API over its unix
// socket (connections kept, as a producer would), from one client and from 16: the whole
// path of POST /v1/deliveries, with the store on t.TempDir's disk (WAL, synchronous=FULL).
func BenchmarkEnqueueAPI(b *testing.B) {
	for _, clients := range []int{1, 16} {
		b.Run(fmt.Sprint("clients=", clients), func(b *testing.B) {
			ds, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "q.db"),
				sqlite.Options{Synchronous: sqlite.SyncFull, MaxPayload: storetest.MaxPayload, MaxEntries: storetest.MaxEntries})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { ds.Close() })
			hc := client.New(serveEnqueue(b, ds, DefaultMaxBody, true)).HTTP
			payload := string(bytes.Repeat([]byte{'x'}, 256))
			var n atomic.Int64
			b.SetParallelism(clients)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					body, _ := json.Marshal(api.DeliveryRequest{Sink: "hook", Key: fmt.Sprint("k", n.Add(1)), Data: &payload})
					resp, err := hc.Post("http://schedd/v1/deliveries", "application/json", bytes.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusCreated {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
		})
	}
}

type statusNone struct{}

func (statusNone) Status(context.Context) api.Status { return api.Status{} }
