package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/server"
	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/sqlite"
)

// hookServer is an HTTP sink destination that records what it receives and answers with
// the status its path asks for (/ok, /reject: 400, /down: 503).
type hookServer struct {
	*httptest.Server
	mu   sync.Mutex
	got  []*http.Request
	body []string
}

func newHookServer(t *testing.T) *hookServer {
	h := &hookServer{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 1<<16)
		n, _ := r.Body.Read(b)
		h.mu.Lock()
		h.got = append(h.got, r)
		h.body = append(h.body, string(b[:n]))
		h.mu.Unlock()
		switch r.URL.Path {
		case "/reject":
			http.Error(w, "no such chat", http.StatusBadRequest)
		case "/down":
			http.Error(w, "later", http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookServer) requests() ([]*http.Request, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*http.Request(nil), h.got...), append([]string(nil), h.body...)
}

// deliveryDaemon runs the delivery component of a daemon with cfg and serves its endpoints.
type deliveryDaemon struct {
	d    *Daemon
	comp *component
	cl   *client.Client
}

func (dd *deliveryDaemon) Status(ctx context.Context) api.Status {
	var st api.Status
	dd.comp.status(ctx, &st)
	return st
}

func startDeliveries(t *testing.T, cfg *config.Config) *deliveryDaemon {
	t.Helper()
	dir, err := os.MkdirTemp("", "dl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &Daemon{opts: Options{StateDir: dir, Config: cfg}, log: zap.NewNop(), cfg: cfg}
	comp, err := d.setupDeliveries()
	if err != nil {
		t.Fatal(err)
	}
	dd := &deliveryDaemon{d: d, comp: comp}
	sock := filepath.Join(dir, "s.sock")
	ln, err := server.Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Options{Backend: dd, MaxBody: int64(cfg.Control.MaxBody)})
	comp.routes(srv)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(ctx, ln) })
	wg.Go(func() { _ = comp.run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait(); ln.Close() })
	dd.cl = client.New(sock)
	return dd
}

// startHook runs the delivery component of deliveryConfig with a new hookServer, and
// checks when the test ends that it left no goroutine behind.
func startHook(t *testing.T) (*deliveryDaemon, *hookServer) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
	hook := newHookServer(t)
	return startDeliveries(t, deliveryConfig(t, hook.URL)), hook
}

func deliveryConfig(t *testing.T, hook string) *config.Config {
	t.Helper()
	src := fmt.Sprintf(`gateway: {command: [gw]}
deliveries:
  schedule: [1h]
  max_payload: 1KiB
  max_entries: 4
  replay_spacing: 0s
  sinks:
    hook: {http: {url: "%[1]s/ok", headers: {X-Static: "static-secret"}}}
    reject: {http: {url: "%[1]s/reject"}}
    down: {http: {url: "%[1]s/down"}}
`, hook)
	c, err := config.Parse("schedd.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func apiError(t *testing.T, err error) *api.Error {
	t.Helper()
	ae, ok := errors.AsType[*api.Error](err)
	if !ok {
		t.Fatalf("error %v, want an API error", err)
	}
	return ae
}

// waitState polls GET /v1/deliveries/{id} until the entry is in state (5 s at most).
func (dd *deliveryDaemon) waitState(t *testing.T, id int64, state api.DeliveryState) api.Delivery {
	t.Helper()
	return dd.waitFor(t, id, string(state), func(v api.Delivery) bool { return v.State == state })
}

// waitFor polls GET /v1/deliveries/{id} until cond holds (5 s at most).
func (dd *deliveryDaemon) waitFor(t *testing.T, id int64, what string, cond func(api.Delivery) bool) api.Delivery {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var v api.Delivery
		err := dd.cl.Do(t.Context(), http.MethodGet, fmt.Sprintf("/v1/deliveries/%d", id), nil, &v)
		if err == nil && cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery %d: %+v, %v; want %s", id, v, err, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }

// postError is a body that POST /v1/deliveries refuses, with the status, code and a part
// of the message of its reply.
type postError struct {
	name   string
	body   any
	status int
	code   string
	msg    string
}

// postErrors posts each body and checks the error reply.
func postErrors(t *testing.T, cl *client.Client, cases []postError) {
	t.Helper()
	for _, tc := range cases {
		err := cl.Do(t.Context(), http.MethodPost, "/v1/deliveries", tc.body, nil)
		if ae := apiError(t, err); ae.Status != tc.status || ae.Code != tc.code || !strings.Contains(ae.Message, tc.msg) {
			t.Errorf("%s: %d %s %q, want %d %s with %q", tc.name, ae.Status, ae.Code, ae.Message, tc.status, tc.code, tc.msg)
		}
	}
}

// The delivery endpoints end to end on a real store: enqueue (201, then 200 for the same
// key: P11), delivery with the idempotency key, the errors with their statuses and field
// names, list, show, drop, retry, purge, recover --dry-run and the status block. Header
// values given with an entry never appear in a reply.
func TestDeliveriesAPI(t *testing.T) {
	dd, hook := startHook(t)
	ctx, cl := t.Context(), dd.cl

	var rep api.EnqueueReply
	req := api.DeliveryRequest{Sink: "hook", Key: "order-1", Data: ptr(`{"n":1}`), Headers: map[string]string{"Authorization": "Bearer entry-secret"}}
	if err := cl.Do(ctx, http.MethodPost, "/v1/deliveries", req, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Created || rep.ID == 0 || rep.Key != "order-1" || rep.PayloadSize != 7 || len(rep.HeaderNames) != 1 {
		t.Fatalf("enqueue reply %+v", rep)
	}
	got := dd.waitState(t, rep.ID, api.DeliveryDelivered)
	if got.Attempts != 1 || got.Data != nil || got.FinishedAt == nil {
		t.Fatalf("delivered entry %+v", got)
	}
	reqs, bodies := hook.requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Idempotency-Key") != "order-1" || reqs[0].Header.Get("Authorization") != "Bearer entry-secret" ||
		reqs[0].Header.Get("X-Static") != "static-secret" || bodies[0] != `{"n":1}` {
		t.Fatalf("the sink got %+v %q", reqs, bodies)
	}
	// P11: the same key again is the same entry, not a second send.
	var again api.EnqueueReply
	if err := cl.Do(ctx, http.MethodPost, "/v1/deliveries", req, &again); err != nil || again.Created || again.ID != rep.ID {
		t.Fatalf("same key again: %+v, %v", again, err)
	}
	raw, err := json.Marshal(again)
	if err != nil || strings.Contains(string(raw), "secret") {
		t.Fatalf("a reply shows a header value: %s", raw)
	}

	postErrors(t, cl, []postError{
		{"no sink", api.DeliveryRequest{Data: ptr("x")}, 400, "bad_request", "sink: is required (a name from deliveries.sinks: down, hook, reject)"},
		{"unknown sink", api.DeliveryRequest{Sink: "hoook"}, 400, "bad_request", `sink: no sink "hoook" is configured`},
		{"both payloads", api.DeliveryRequest{Sink: "hook", Data: ptr("a"), DataBase64: ptr("YQ==")}, 400, "bad_request", "data, data_base64: give one"},
		{"bad base64", api.DeliveryRequest{Sink: "hook", DataBase64: ptr("%%")}, 400, "bad_request", "data_base64: not standard base64"},
		{"bad ttl", api.DeliveryRequest{Sink: "hook", TTL: "soon"}, 400, "bad_request", `ttl: want a positive Go duration`},
		{"unknown field", map[string]any{"sink": "hook", "payload": "x"}, 400, "bad_request", `unknown field "payload"`},
		{"bad header", api.DeliveryRequest{Sink: "hook", Headers: map[string]string{"Bad Name": "v"}}, 400, "bad_request", `header name "Bad Name"`},
		{"key header", api.DeliveryRequest{Sink: "hook", Headers: map[string]string{"idempotency-key": "v"}}, 400, "bad_request", "Idempotency-Key header is set from the key"},
		{"key taken", api.DeliveryRequest{Sink: "hook", Key: "order-1", Data: ptr("other")}, 409, "conflict", `idempotency_key: "order-1" belongs to delivery 1`},
		{"too large", api.DeliveryRequest{Sink: "hook", Data: ptr(strings.Repeat("x", 1025))}, 413, api.CodePayloadTooLarge,
			"data: the payload of 1025 bytes is over deliveries.max_payload (1024 bytes); nothing was stored"},
	})

	// A permanent error dead-letters with its reason; retry brings it back to pending.
	var dead api.EnqueueReply
	if err := cl.Do(ctx, http.MethodPost, "/v1/deliveries", api.DeliveryRequest{Sink: "reject", DataBase64: ptr("AP8=")}, &dead); err != nil {
		t.Fatal(err)
	}
	dl := dd.waitState(t, dead.ID, api.DeliveryDead)
	if dl.DeadReason == "" || !strings.Contains(dl.LastError, "400") || dl.DataBase64 == nil || *dl.DataBase64 != "AP8=" {
		t.Fatalf("dead letter %+v", dl)
	}
	var retried api.Delivery
	if err := cl.Do(ctx, http.MethodPost, fmt.Sprintf("/v1/deliveries/%d/retry", dead.ID), nil, &retried); err != nil ||
		retried.State != api.DeliveryPending || retried.Failures != 0 {
		t.Fatalf("retry: %+v, %v", retried, err)
	}
	dd.waitState(t, dead.ID, api.DeliveryDead)
	if ae := apiError(t, cl.Do(ctx, http.MethodPost, fmt.Sprintf("/v1/deliveries/%d/retry", rep.ID), nil, nil)); ae.Status != 409 {
		t.Errorf("retry of a delivered entry: %d %q", ae.Status, ae.Message)
	}

	// Entries of a sink that is down stay pending (first failure, next try in an hour);
	// with max_entries 4 the queue fills.
	var ids []int64
	for i := range 4 {
		var e api.EnqueueReply
		err := cl.Do(ctx, http.MethodPost, "/v1/deliveries", api.DeliveryRequest{Sink: "down", Data: ptr(fmt.Sprint(i))}, &e)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	err = cl.Do(ctx, http.MethodPost, "/v1/deliveries", api.DeliveryRequest{Sink: "down", Data: ptr("5")}, nil)
	if ae := apiError(t, err); ae.Status != 503 || ae.Code != api.CodeQueueFull || !strings.Contains(ae.Message, "limit of 4") {
		t.Errorf("queue full: %d %s %q", ae.Status, ae.Code, ae.Message)
	}
	for _, id := range ids {
		dd.waitFor(t, id, "pending after one failure", func(v api.Delivery) bool { return v.State == api.DeliveryPending && v.Failures == 1 })
	}

	// List: filters and the cursor.
	var page api.DeliveryList
	if err := cl.Do(ctx, http.MethodGet, "/v1/deliveries?sink=down&limit=3", nil, &page); err != nil ||
		len(page.Deliveries) != 3 || page.NextCursor != ids[2] {
		t.Fatalf("page 1: %+v, %v", page, err)
	}
	cursor := page.NextCursor
	page = api.DeliveryList{}
	if err := cl.Do(ctx, http.MethodGet, fmt.Sprintf("/v1/deliveries?sink=down&limit=3&cursor=%d", cursor), nil, &page); err != nil ||
		len(page.Deliveries) != 1 || page.NextCursor != 0 || page.Deliveries[0].ID != ids[3] {
		t.Fatalf("page 2: %+v, %v", page, err)
	}
	page = api.DeliveryList{}
	if err := cl.Do(ctx, http.MethodGet, "/v1/deliveries?state=delivered", nil, &page); err != nil || len(page.Deliveries) != 1 {
		t.Fatalf("delivered: %+v, %v", page, err)
	}
	for q, msg := range map[string]string{"state=done": "state: want pending", "limit=0": "limit: want a number", "cursor=x": "cursor:"} {
		if ae := apiError(t, cl.Do(ctx, http.MethodGet, "/v1/deliveries?"+q, nil, nil)); ae.Status != 400 || !strings.Contains(ae.Message, msg) {
			t.Errorf("list ?%s: %d %q", q, ae.Status, ae.Message)
		}
	}

	// Drop a pending entry; then it is gone.
	if err := cl.Do(ctx, http.MethodDelete, fmt.Sprintf("/v1/deliveries/%d", ids[0]), nil, nil); err != nil {
		t.Fatal(err)
	}
	if ae := apiError(t, cl.Do(ctx, http.MethodGet, fmt.Sprintf("/v1/deliveries/%d", ids[0]), nil, nil)); ae.Status != 404 {
		t.Errorf("get a dropped entry: %d %q", ae.Status, ae.Message)
	}
	if ae := apiError(t, cl.Do(ctx, http.MethodDelete, fmt.Sprintf("/v1/deliveries/%d", rep.ID), nil, nil)); ae.Status != 409 {
		t.Errorf("drop a delivered entry: %d %q", ae.Status, ae.Message)
	}
	if ae := apiError(t, cl.Do(ctx, http.MethodGet, "/v1/deliveries/abc", nil, nil)); ae.Status != 400 || !strings.HasPrefix(ae.Message, "id:") {
		t.Errorf("get abc: %d %q", ae.Status, ae.Message)
	}

	// recover --dry-run: the three pending entries are backing off; nothing changes.
	var dry api.RecoveryReport
	if err := cl.Do(ctx, http.MethodPost, "/v1/recover", api.RecoverRequest{DryRun: true}, &dry); err != nil ||
		!dry.DryRun || dry.Scanned != 3 || dry.DeferredBackoff != 3 || len(dry.Actions) != 3 {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	// The same with progress: count lines, then the report on the last one.
	var seen []int
	withProgress, err := cl.RecoverWithProgress(ctx, api.RecoverRequest{DryRun: true}, func(n int) { seen = append(seen, n) })
	if err != nil || withProgress.Scanned != 3 || withProgress.DeferredBackoff != 3 || len(withProgress.Actions) != 3 ||
		fmt.Sprint(seen) != "[3]" {
		t.Fatalf("dry run with progress: %+v (progress %v), %v", withProgress, seen, err)
	}
	if _, err := cl.RecoverWithProgress(ctx, api.RecoverRequest{}, nil); err == nil || !strings.Contains(err.Error(), "dry_run") {
		t.Errorf("recover with progress without dry_run: %v", err)
	}
	if ae := apiError(t, cl.Do(ctx, http.MethodPost, "/v1/recover", api.RecoverRequest{}, nil)); ae.Status != 400 || !strings.Contains(ae.Message, "dry_run") {
		t.Errorf("recover without dry_run: %d %q", ae.Status, ae.Message)
	}

	// Purge the dead letter.
	var pr api.PurgeReply
	if err := cl.Do(ctx, http.MethodPost, "/v1/deliveries/purge", api.PurgeRequest{OlderThan: "72h"}, &pr); err != nil || pr.Purged != 0 {
		t.Fatalf("purge older than 72h: %+v, %v", pr, err)
	}
	if err := cl.Do(ctx, http.MethodPost, "/v1/deliveries/purge", api.PurgeRequest{State: api.DeliveryDead}, &pr); err != nil || pr.Purged != 1 {
		t.Fatalf("purge dead: %+v, %v", pr, err)
	}
	for _, limit := range []int{-1, api.MaxPurgeLimit + 1} {
		if ae := apiError(t, cl.Do(ctx, http.MethodPost, "/v1/deliveries/purge", api.PurgeRequest{Limit: limit}, nil)); ae.Status != 400 || !strings.HasPrefix(ae.Message, "limit: ") {
			t.Errorf("purge with limit %d: %d %q", limit, ae.Status, ae.Message)
		}
	}
	if ae := apiError(t, cl.Do(ctx, http.MethodPost, "/v1/deliveries/purge", api.PurgeRequest{State: "pending"}, nil)); ae.Status != 400 {
		t.Errorf("purge pending: %d %q", ae.Status, ae.Message)
	}

	// The status block.
	st, err := cl.Status(ctx)
	if err != nil || st.Deliveries == nil {
		t.Fatalf("status: %+v, %v", st, err)
	}
	ds := st.Deliveries
	if ds.Pending != 3 || ds.Delivered != 1 || ds.Failed != 0 || ds.Synchronous != sqlite.SyncFull || ds.OldestPendingAt == nil ||
		ds.LastRecovery == nil || ds.DiskFull || ds.EnqueueError != nil || len(ds.Sinks) != 3 {
		t.Fatalf("deliveries status %+v", ds)
	}
}

// A reload applies the retry policy and the sinks at once; a changed store setting waits
// for the next start (and says so).
func TestDeliveriesReload(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	hook := newHookServer(t)
	cfg := deliveryConfig(t, hook.URL)
	dd := startDeliveries(t, cfg)
	ctx := t.Context()
	if err := dd.cl.Do(ctx, http.MethodPost, "/v1/deliveries", api.DeliveryRequest{Sink: "late"}, nil); apiError(t, err).Status != 400 {
		t.Fatalf("enqueue to a sink not configured yet: %v", err)
	}
	next := deliveryConfig(t, hook.URL)
	next.Deliveries.Sinks["late"] = config.Sink{HTTP: &config.HTTPSink{URL: hook.URL + "/ok", Method: "POST", Timeout: config.Duration(time.Second)}}
	next.Deliveries.MaxEntries = 10
	if err := reloadComponent(dd.comp, next); err != nil {
		t.Fatal(err)
	}
	var e api.EnqueueReply
	if err := dd.cl.Do(ctx, http.MethodPost, "/v1/deliveries", api.DeliveryRequest{Sink: "late", Data: ptr("x")}, &e); err != nil {
		t.Fatal(err)
	}
	dd.waitState(t, e.ID, api.DeliveryDelivered)
	if got := storeChanges(cfg.Deliveries, next.Deliveries); len(got) != 1 || got[0] != "deliveries.max_entries" {
		t.Fatalf("store changes %v", got)
	}
	bad := deliveryConfig(t, hook.URL)
	bad.Deliveries.Sinks["x"] = config.Sink{HTTP: &config.HTTPSink{URL: "ftp://nope"}}
	if err := reloadComponent(dd.comp, bad); err == nil || !strings.Contains(err.Error(), "deliveries.sinks.x") {
		t.Fatalf("a bad sink: %v", err)
	}
}

// The config's values pass as they are: its "none" and "forever" zeros and max_retries 0
// (one attempt) mean the same to the service.
func TestDeliveryConfig(t *testing.T) {
	c := config.Default().Deliveries
	rc := DeliveryConfig(c)
	if rc.MaxRetries != 5 || rc.Jitter != 0.2 || len(rc.Schedule) != 4 || rc.Schedule[3] != 10*time.Minute ||
		rc.ReplaySpacing != 250*time.Millisecond || rc.RecoveryBudget != time.Minute || rc.Workers != 16 ||
		rc.RetryAfterMax != time.Hour || rc.DeliveredRetention != config.DefaultDeliveredRetention || rc.DeadRetention != 0 || rc.TTL != 0 {
		t.Fatalf("defaults: %+v", rc)
	}
	c.ReplaySpacing, c.DeliveredRetention, c.MaxRetries = 0, 0, 0
	rc = DeliveryConfig(c)
	if rc.ReplaySpacing != 0 || rc.DeliveredRetention != 0 || rc.MaxRetries != 0 {
		t.Fatalf("zeros: %+v", rc)
	}
}

// A corrupt store file fails the start with its path and what to do; so does a postgres
// DSN that cannot be parsed, without its password.
func TestDeliveryStoreOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "schedd.db"), []byte(strings.Repeat("not a database ", 500)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	d := &Daemon{opts: Options{StateDir: dir, Config: cfg}, log: zap.NewNop(), cfg: cfg}
	_, err := d.setupDeliveries()
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), filepath.Join(dir, "schedd.db")) ||
		!strings.Contains(err.Error(), "move it aside") {
		t.Fatalf("corrupt store: %v", err)
	}
	cfg = config.Default()
	cfg.Deliveries.Store = config.Store{Postgres: &config.PostgresStore{DSN: "postgres://u:sekrit@[::1/y"}}
	d = &Daemon{opts: Options{StateDir: dir, Config: cfg}, log: zap.NewNop(), cfg: cfg}
	if _, err := d.setupDeliveries(); err == nil || !strings.Contains(err.Error(), "deliveries.store.postgres") ||
		strings.Contains(err.Error(), "sekrit") {
		t.Fatalf("postgres store: %v", err)
	}
}

// A daemon never asked to deliver anything does not open the store: no file, status shows
// it not opened, reads answer empty or not found. The first enqueue creates it, and the
// delivery service (recovery pass, runtime) starts then and delivers the entry.
func TestDeliveryStoreOpensOnFirstEnqueue(t *testing.T) {
	dd, _ := startHook(t)
	ctx, cl := t.Context(), dd.cl
	path := filepath.Join(dd.d.opts.StateDir, "schedd.db")

	var st api.Status
	if err := cl.Do(ctx, http.MethodGet, "/v1/status", nil, &st); err != nil {
		t.Fatal(err)
	}
	if st.Deliveries == nil || st.Deliveries.StoreState != api.StoreNotOpened || st.Deliveries.Pending != 0 ||
		st.Deliveries.Path != path {
		t.Fatalf("status before the first enqueue: %+v", st.Deliveries)
	}
	var list api.DeliveryList
	if err := cl.Do(ctx, http.MethodGet, "/v1/deliveries?state=dead", nil, &list); err != nil || len(list.Deliveries) != 0 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/v1/deliveries/1"}, {http.MethodDelete, "/v1/deliveries/1"}, {http.MethodPost, "/v1/deliveries/1/retry"},
	} {
		if ae := apiError(t, cl.Do(ctx, r.method, r.path, nil, nil)); ae.Status != http.StatusNotFound {
			t.Fatalf("%s %s: %+v", r.method, r.path, ae)
		}
	}
	var rec api.RecoveryReport
	if err := cl.Do(ctx, http.MethodPost, "/v1/recover", api.RecoverRequest{DryRun: true}, &rec); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the store exists before the first enqueue: %v", err)
	}

	var rep api.EnqueueReply
	if err := cl.Do(ctx, http.MethodPost, "/v1/deliveries", api.DeliveryRequest{Sink: "hook", Key: "first", Data: ptr("hi")}, &rep); err != nil || !rep.Created {
		t.Fatalf("enqueue: %+v, %v", rep, err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no store after the first enqueue: %v", err)
	}
	dd.waitState(t, rep.ID, api.DeliveryDelivered)
	// The runtime may deliver the entry before the recovery pass of the newly opened store
	// has recorded its summary: wait for that too.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := cl.Do(ctx, http.MethodGet, "/v1/status", nil, &st); err != nil {
			t.Fatal(err)
		}
		if st.Deliveries.StoreState == api.StoreOpen && st.Deliveries.Delivered == 1 && st.Deliveries.LastRecovery != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("status after the first enqueue: %+v", st.Deliveries)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
