package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/control"
	"github.com/schedd/schedd/internal/queue"
	"github.com/schedd/schedd/internal/recovery"
)

// waitingSink is never ready: entries wait, so the benchmark measures the enqueue path.
type waitingSink struct{}

func (waitingSink) Send(context.Context, recovery.Delivery) error { return nil }
func (waitingSink) Ready() bool                                   { return false }

// BenchmarkEnqueueAPI measures durable enqueues through the control API over its unix
// socket (connections kept, as a producer would), from one client and from 16: the whole
// path of POST /v1/deliveries, with the store on t.TempDir's disk (WAL, synchronous=FULL).
func BenchmarkEnqueueAPI(b *testing.B) {
	for _, clients := range []int{1, 16} {
		b.Run(fmt.Sprint("clients=", clients), func(b *testing.B) {
			dir, err := os.MkdirTemp("", "dlb")
			if err != nil {
				b.Fatal(err)
			}
			defer os.RemoveAll(dir)
			store, err := queue.Open(context.Background(), filepath.Join(dir, "q.db"), queue.Options{})
			if err != nil {
				b.Fatal(err)
			}
			svc, err := recovery.New(recovery.DefaultConfig(), store, map[string]recovery.Sink{"hook": waitingSink{}}, recovery.Deps{Log: zap.NewNop()})
			if err != nil {
				b.Fatal(err)
			}
			sock := filepath.Join(dir, "s.sock")
			ln, err := control.Listen(sock, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			srv := control.NewServer(control.ServerOptions{Backend: statusNone{}})
			(&deliveriesAPI{svc: svc}).routes(srv)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { _ = srv.Serve(ctx, ln) })
			wg.Go(func() { _ = svc.Run(ctx) })
			defer func() { cancel(); wg.Wait(); store.Close() }()
			hc := &http.Client{Transport: &http.Transport{
				DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					var d net.Dialer
					return d.DialContext(ctx, "unix", sock)
				},
				MaxIdleConnsPerHost: clients,
			}}
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
