package daemon

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/client"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/store/postgres/pgtest"
)

// With deliveries.store.postgres the daemon runs its deliveries on PostgreSQL: an entry is
// delivered, status shows the store kind, the host id and the connection's health, and
// never the DSN. A database that is down at start does not stop the daemon, and while the
// database cannot be reached an enqueue is a 503 that stores nothing and the status says
// so, with the counts read last; enqueues and
// deliveries work again once it is back, by themselves. A commit whose reply is lost is a
// 503 that says the entry may be stored.
func TestDeliveriesOnPostgres(t *testing.T) {
	const secret = "pg-secret-pw"
	proxy, dsn := pgtest.NewProxy(t, pgtest.DSN(t), secret)
	hook := newHookServer(t)
	cfg := deliveryConfig(t, hook.URL)
	cfg.Deliveries.Store = config.Store{Postgres: &config.PostgresStore{DSN: dsn, HostID: "web-1",
		Lease: config.Duration(config.DefaultPostgresLease), MaxConns: 4}}
	proxy.Down()
	dd := startDeliveries(t, cfg)
	ctx, cl := t.Context(), dd.cl
	var st api.Status
	if err := cl.Do(ctx, http.MethodGet, "/v1/status", nil, &st); err != nil {
		t.Fatal(err)
	}
	if ds := st.Deliveries; ds == nil || ds.Store != "postgres" || ds.StoreState != api.StoreNotOpened || ds.Connected == nil || *ds.Connected {
		t.Fatalf("status with the database down at start = %+v", ds)
	}
	enqueueDown(t, cl, "down-at-start")
	proxy.Up()
	var rep api.EnqueueReply
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := cl.Do(ctx, http.MethodPost, "/v1/deliveries", api.DeliveryRequest{Sink: "hook", Key: "a", Data: ptr("1")}, &rep)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("enqueue 10 s after the database came up: %v", err)
		}
	}
	dd.waitState(t, rep.ID, api.DeliveryDelivered)

	if err := cl.Do(ctx, http.MethodGet, "/v1/status", nil, &st); err != nil {
		t.Fatal(err)
	}
	ds := st.Deliveries
	if ds == nil || ds.Store != "postgres" || ds.HostID != "web-1" || ds.Connected == nil || !*ds.Connected || ds.Path != "" {
		t.Fatalf("status deliveries = %+v", ds)
	}
	if b, _ := json.Marshal(st); strings.Contains(string(b), secret) || strings.Contains(string(b), "dbname=") {
		t.Fatalf("status shows the DSN: %s", b)
	}

	proxy.Down()
	enqueueDown(t, cl, "while-down")
	if err := cl.Do(ctx, http.MethodGet, "/v1/status", nil, &st); err != nil {
		t.Fatal(err)
	}
	if ds := st.Deliveries; ds == nil || ds.Store != "postgres" || ds.Connected == nil || *ds.Connected ||
		ds.ReadError == nil || ds.Delivered != 1 || strings.Contains(ds.ReadError.Message, secret) {
		t.Fatalf("status while down = %+v; want the store not connected, its read error and the counts read last", ds)
	}
	proxy.Up()
	if err := cl.Do(ctx, http.MethodPost, "/v1/deliveries", api.DeliveryRequest{Sink: "hook", Key: "after", Data: ptr("3")}, &rep); err != nil {
		t.Fatalf("enqueue once the database is back: %v", err)
	}
	dd.waitState(t, rep.ID, api.DeliveryDelivered)
	var list api.DeliveryList
	if err := cl.Do(ctx, http.MethodGet, "/v1/deliveries", nil, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Deliveries) != 2 || list.Deliveries[0].Key != "a" || list.Deliveries[1].Key != "after" {
		t.Fatalf("stored = %+v (nothing of the refused enqueues may be there)", list.Deliveries)
	}

	// The database commits an enqueue and the connection breaks before its reply: a 503
	// that says the entry may be stored; enqueued again with its key, it is stored once.
	proxy.LoseReplyTo("INSERT INTO schedd_deliveries")
	req := api.DeliveryRequest{Sink: "hook", Key: "lost-reply", Data: ptr("4")}
	err := cl.Do(ctx, http.MethodPost, "/v1/deliveries", req, nil)
	if ae := apiError(t, err); ae.Status != http.StatusServiceUnavailable || ae.Code != api.CodeUnavailable ||
		!strings.Contains(ae.Message, "may have been stored or not") || !strings.Contains(ae.Message, "idempotency_key") {
		t.Fatalf("enqueue whose commit reply was lost = %+v", ae)
	}
	if err := cl.Do(ctx, http.MethodPost, "/v1/deliveries", req, &rep); err != nil || rep.Created {
		t.Fatalf("enqueue again = %+v, %v; want the entry the lost commit stored", rep, err)
	}
	dd.waitState(t, rep.ID, api.DeliveryDelivered)
}

// enqueueDown checks that an enqueue is refused with 503 while the database is down.
//
// A statement written on a pooled connection that the cut closed unannounced fails after it
// was sent, and its 503 says the entry may be stored (the client cannot tell a lost reply
// from that); once the pool's connections are gone the database is seen unreachable and
// nothing stored. Either way it is a 503 `unavailable`.
func enqueueDown(t *testing.T, cl *client.Client, key string) {
	t.Helper()
	for range 10 {
		err := cl.Do(t.Context(), http.MethodPost, "/v1/deliveries", api.DeliveryRequest{Sink: "hook", Key: key, Data: ptr("x")}, nil)
		ae := apiError(t, err)
		switch {
		case ae.Status != http.StatusServiceUnavailable || ae.Code != api.CodeUnavailable:
		case strings.Contains(ae.Message, "cannot be reached: nothing was stored"):
			return
		case strings.Contains(ae.Message, "may have been stored or not"):
			continue
		}
		t.Fatalf("enqueue %s while the database is down = %+v", key, ae)
	}
	t.Fatalf("enqueue %s while the database is down: never refused as unreachable", key)
}
