package daemon

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/control"
	"github.com/schedd/schedd/internal/deliveries"
	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/sqlite"
)

// serveEnqueue serves the delivery endpoints of a service on store, whose only sink
// "hook" is never ready (nothing is sent: the store sees the enqueues alone), on a control
// socket in a temp dir; with run, the service runs too. It returns the socket.
func serveEnqueue(tb testing.TB, ds store.Store, maxBody int64, run bool) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "dlb")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	svc, err := deliveries.New(DeliveryConfig(config.Default().Deliveries), ds, map[string]deliveries.Sink{"hook": waitingSink{}}, deliveries.Deps{Log: zap.NewNop()})
	if err != nil {
		tb.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	ln, err := control.Listen(sock, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	srv := control.NewServer(control.ServerOptions{Backend: statusNone{}, MaxBody: maxBody})
	(&deliveriesAPI{svc: svc, path: "q.db", maxBody: int(maxBody), limits: deliveryLimits{entries: 3}}).routes(srv)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(ctx, ln) })
	if run {
		wg.Go(func() { _ = svc.Run(ctx) })
	}
	tb.Cleanup(func() { cancel(); wg.Wait() })
	return sock
}

// POST /v1/deliveries with an array: each entry is checked and stored as a request of its
// own would be, its error (code, and a message naming its index and field) keeps out that
// entry only, the reply lists every entry's result in order, and the stored ones are
// armed and delivered.
func TestEnqueueBatchAPI(t *testing.T) {
	dd, hook := startHook(t)
	ctx, cl := t.Context(), dd.cl

	var rep api.BatchReply
	err := cl.Do(ctx, http.MethodPost, "/v1/deliveries", []api.DeliveryRequest{
		{Sink: "hook", Key: "b-1", Data: ptr("one")},
		{Data: ptr("x")},
		{Sink: "hoook"},
		{Sink: "hook", Data: ptr(strings.Repeat("x", 1025))},
		{Sink: "hook", Key: "b-1", Data: ptr("one")},
		{Sink: "hook", Key: "b-1", Data: ptr("two")},
		{Sink: "hook", Headers: map[string]string{"Bad Name": "v"}},
		{Sink: "hook", Key: "b-2", DataBase64: ptr("AP8=")},
	}, &rep)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Created != 2 || rep.Existing != 1 || rep.Failed != 5 || len(rep.Results) != 8 {
		t.Fatalf("reply %+v", rep)
	}
	first, second := rep.Results[0], rep.Results[7]
	if !first.Created || first.ID == 0 || first.Error != nil || !second.Created || second.ID <= first.ID {
		t.Fatalf("stored results %+v, %+v", first, second)
	}
	if r := rep.Results[4]; r.Created || r.ID != first.ID || r.Error != nil {
		t.Fatalf("the same key again: %+v, want delivery %d, not created", r, first.ID)
	}
	for i, want := range map[int]api.Error{
		1: {Code: api.CodeBadRequest, Message: "[1].sink: is required (a name from deliveries.sinks: down, hook, reject)"},
		2: {Code: api.CodeBadRequest, Message: `[2].sink: no sink "hoook" is configured (deliveries.sinks: down, hook, reject)`},
		3: {Code: api.CodePayloadTooLarge, Message: "[3].data: the payload of 1025 bytes is over deliveries.max_payload (1024 bytes); nothing was stored"},
		5: {Code: api.CodeConflict, Message: fmt.Sprintf(`[5].idempotency_key: "b-1" belongs to delivery %d, which has another sink or payload; nothing was stored`, first.ID)},
		6: {Code: api.CodeBadRequest, Message: `[6]: invalid delivery: header name "Bad Name"`},
	} {
		if got := rep.Results[i]; got.Error == nil || got.Error.Code != want.Code || got.Error.Message != want.Message || got.ID != 0 {
			t.Errorf("[%d] = %+v, want error %+v", i, got.Error, want)
		}
	}
	dd.waitState(t, first.ID, api.DeliveryDelivered)
	if v := dd.waitState(t, second.ID, api.DeliveryDelivered); v.Key != "b-2" || v.PayloadSize != 2 {
		t.Fatalf("second entry %+v", v)
	}
	if _, bodies := hook.requests(); len(bodies) != 2 {
		t.Fatalf("the sink got %q, want the two stored entries", bodies)
	}

	// The bounds of a batch, and a body that is not an array of requests.
	postErrors(t, cl, []postError{
		{"empty", []api.DeliveryRequest{}, 400, api.CodeBadRequest, "the array of deliveries is empty"},
		{"over the cap", make([]api.DeliveryRequest, api.MaxBatch+1), 413, api.CodeTooLarge,
			"1001 deliveries in one request: a batch holds at most 1000 (and its body at most 2097152 bytes, control.max_body); nothing was stored"},
		{"unknown field", []map[string]any{{"sink": "hook", "payload": "x"}}, 400, api.CodeBadRequest, `unknown field "payload"`},
		{"not requests", []int{1}, 400, api.CodeBadRequest, "invalid JSON body"},
	})
}

// A batch is stored in one commit of the store; the queue's bound holds within it (the
// entries past it get queue_full, each by its index); a failure of the whole commit is
// the reply of a single request, with nothing stored.
func TestEnqueueBatchOneCommit(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var full bool
	var mu sync.Mutex
	ds, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "q.db"), sqlite.Options{
		MaxEntries: api.MaxBatch + 3,
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
	cl := control.NewClient(serveEnqueue(t, ds, control.DefaultMaxBody, false))
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
