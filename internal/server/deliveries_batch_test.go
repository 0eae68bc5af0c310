package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
	"github.com/schedd/schedd/internal/deliveries"
	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/sqlite"
	"github.com/schedd/schedd/internal/store/storetest"
)

// testPolicy is a valid delivery policy for the endpoints' tests, whose replies do not
// depend on it.
func testPolicy() deliveries.Config {
	return deliveries.Config{MaxRetries: 5, Schedule: []time.Duration{5 * time.Second, 25 * time.Second}, Jitter: 0.2,
		RetryAfterMax: time.Hour, RecoveryBudget: time.Minute, ReplaySpacing: 250 * time.Millisecond, Workers: 16}
}

// serveEnqueue serves the delivery endpoints of a service on store, whose only sink
// "hook" is never ready (nothing is sent: the store sees the enqueues alone), on a control
// socket in a temp dir; with run, the service runs too. It returns the socket.
func serveEnqueue(tb testing.TB, store store.Store, maxBody int64, run bool) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "dlb")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	svc, err := deliveries.New(testPolicy(), store, map[string]deliveries.Sink{"hook": waitingSink{}}, deliveries.Deps{Log: zap.NewNop()})
	if err != nil {
		tb.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	ln, err := Listen(sock, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	srv := New(Options{Backend: statusNone{}, MaxBody: maxBody})
	srv.AddDeliveries(svc, DeliveryLimits{Path: "q.db", MaxBody: int(maxBody), Entries: 3})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(ctx, ln) })
	if run {
		wg.Go(func() { _ = svc.Run(ctx) })
	}
	tb.Cleanup(func() { cancel(); wg.Wait() })
	return sock
}

// A batch is stored in one commit of the store; the queue's bound holds within it (the
// entries past it get queue_full, each by its index); a failure of the whole commit is
// the reply of a single request, with nothing stored.
func TestEnqueueBatchOneCommit(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var full bool
	var mu sync.Mutex
	ds, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "q.db"), sqlite.Options{
		Synchronous: sqlite.SyncFull, MaxPayload: storetest.MaxPayload, MaxEntries: api.MaxBatch + 3,
		FaultHook: func(op string) error {
			mu.Lock()
			defer mu.Unlock()
			if full && op == "enqueue_batch" {
				return syscall.ENOSPC
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	cl := client.New(serveEnqueue(t, ds, DefaultMaxBody, false))
	defer cl.Close()
	batch := func(n int, prefix string) []api.DeliveryRequest {
		rs := make([]api.DeliveryRequest, n)
		for i := range rs {
			rs[i] = api.DeliveryRequest{Sink: "hook", Key: fmt.Sprint(prefix, i), Data: ptr("payload")}
		}
		return rs
	}

	before := ds.Stats()
	var rep api.BatchReply
	if err := cl.Do(t.Context(), http.MethodPost, "/v1/deliveries", batch(api.MaxBatch, "a"), &rep); err != nil {
		t.Fatal(err)
	}
	after := ds.Stats()
	if rep.Created != api.MaxBatch || after.Commits-before.Commits != 1 {
		t.Fatalf("%d created in %d commits, want %d in one", rep.Created, after.Commits-before.Commits, api.MaxBatch)
	}

	rep = api.BatchReply{}
	if err := cl.Do(t.Context(), http.MethodPost, "/v1/deliveries", batch(5, "b"), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Created != 3 || rep.Failed != 2 || rep.Results[3].Error == nil || rep.Results[3].Error.Code != api.CodeQueueFull ||
		!strings.HasPrefix(rep.Results[3].Error.Message, "[3]: the delivery queue holds its limit") {
		t.Fatalf("a batch past max_entries: %+v, %+v", rep, rep.Results[3].Error)
	}

	mu.Lock()
	full = true
	mu.Unlock()
	err = cl.Do(t.Context(), http.MethodPost, "/v1/deliveries", batch(2, "c"), nil)
	if ae := apiError(t, err); ae.Status != 507 || ae.Code != api.CodeDiskFull || !strings.Contains(ae.Message, "nothing was stored") {
		t.Fatalf("a batch on a full disk: %d %s %q", ae.Status, ae.Code, ae.Message)
	}
	if c, _ := ds.Counts(t.Context()); c.Pending != api.MaxBatch+3 {
		t.Fatalf("%d pending, want %d", c.Pending, api.MaxBatch+3)
	}
}

func ptr[T any](v T) *T { return &v }

func apiError(t *testing.T, err error) *api.Error {
	t.Helper()
	ae, ok := errors.AsType[*api.Error](err)
	if !ok {
		t.Fatalf("error %v, want an API error", err)
	}
	return ae
}
