package deliveries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/sqlite"
	"github.com/schedd/schedd/internal/store/storetest"
)

// P11: the same idempotency key twice gives one entry and one send.
func TestEnqueueIdempotent_P11(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		sink := &fakeSink{}
		s := runHook(t, ds, sink)
		synctest.Wait()
		for _, tc := range []struct {
			name    string
			payload string
			created bool
			err     error
		}{
			{"first", "x", true, nil},
			{"again, pending or delivered", "x", false, nil},
			{"same key, other payload", "y", false, store.ErrKeyMismatch},
		} {
			e, created, err := s.Enqueue(context.Background(), Request{Sink: "hook", Key: "order-42", Payload: []byte(tc.payload)})
			if !errors.Is(err, tc.err) || created != tc.created || (err == nil && e.Key != "order-42") {
				t.Fatalf("%s: created=%v err=%v", tc.name, created, err)
			}
			synctest.Wait()
		}
		if n := len(sink.Sends()); n != 1 {
			t.Fatalf("%d sends, want 1", n)
		}
		if l, _ := ds.List(context.Background(), store.Filter{}); len(l) != 1 {
			t.Fatalf("%d entries, want 1", len(l))
		}
	})
}

func TestEnqueueValidation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		ds.MaxPayload = 8
		s := newService(t, parityConfig(), ds, map[string]Sink{"hook": &fakeSink{}})
		ctx := context.Background()
		for _, tc := range []struct {
			name string
			r    Request
			err  error
		}{
			{"unknown sink", Request{Sink: "nope"}, ErrUnknownSink},
			{"reserved header", Request{Sink: "hook", Headers: map[string]string{"idempotency-key": "x"}}, store.ErrInvalid},
			{"bad header", Request{Sink: "hook", Headers: map[string]string{"X": "a\nb"}}, store.ErrInvalid},
			{"payload bound", Request{Sink: "hook", Payload: []byte("123456789")}, store.ErrPayloadTooLarge},
		} {
			if _, _, err := s.Enqueue(ctx, tc.r); !errors.Is(err, tc.err) {
				t.Errorf("%s: err = %v, want %v", tc.name, err, tc.err)
			}
		}
		e, created, err := s.Enqueue(ctx, Request{Sink: "hook", Payload: []byte("ok")})
		if err != nil || !created || !strings.HasPrefix(e.Key, "schedd-") || len(e.Key) != len("schedd-")+32 {
			t.Fatalf("generated key: %+v, %v", e, err)
		}
		badPattern := productionConfig()
		badPattern.PermanentPatterns = []string{"("}
		if _, err := New(badPattern, ds, nil, Deps{}); err == nil {
			t.Fatal("bad pattern accepted")
		}
		badJitter := productionConfig()
		badJitter.Jitter = 2
		if _, err := New(badJitter, ds, nil, Deps{}); err == nil {
			t.Fatal("jitter 2 accepted")
		}
	})
}

// R-ENV-04 at service level: a full disk fails enqueue with a clear error while stored
// entries keep being delivered; enqueue works again once space returns.
func TestEnqueueDiskFullDeliveryGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		stored, _, _ := ds.Enqueue(context.Background(), store.NewEntry{Sink: "hook", Key: "stored", Payload: []byte("x"),
			NotBefore: time.Now().Add(time.Minute)})
		full := true
		ds.SetWriteFault(func(op string) error {
			if op == "enqueue" && full {
				return store.ErrDiskFull
			}
			return nil
		})
		sink := &fakeSink{}
		s := runHook(t, ds, sink)
		synctest.Wait()
		_, _, err := s.Enqueue(context.Background(), Request{Sink: "hook", Key: "new", Payload: []byte("y")})
		if !errors.Is(err, store.ErrDiskFull) {
			t.Fatalf("enqueue on a full disk: %v", err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if g := mustGet(t, ds, stored.ID); g.State != store.StateDelivered {
			t.Fatalf("stored entry not delivered while the disk is full: %+v", g)
		}
		full = false
		if _, _, err := s.Enqueue(context.Background(), Request{Sink: "hook", Key: "new", Payload: []byte("y")}); err != nil {
			t.Fatalf("enqueue after space returned: %v", err)
		}
	})
}

// R-DLV-04: each class of error has its handling (table over every class, including a sink
// that is not configured and a gateway that is not ready).
func TestErrorClassesHandling_RDLV04(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		sink     string
		state    store.State
		failures int
		reason   string
	}{
		{"success", nil, "hook", store.StateDelivered, 0, ""},
		{"http 404", &SendError{Class: Permanent, Err: errors.New("HTTP 404 Not Found"), Status: 404}, "hook", store.StateDead, 0, "permanent error (status 404)"},
		{"http 503", &SendError{Class: Transient, Err: errors.New("HTTP 503"), Status: 503}, "hook", store.StatePending, 1, ""},
		{"http 429", &SendError{Class: Transient, Err: errors.New("HTTP 429"), Status: 429, RetryAfter: time.Minute}, "hook", store.StatePending, 1, ""},
		{"network", TransientError(errors.New("dial tcp: connection refused")), "hook", store.StatePending, 1, ""},
		{"untyped", errors.New("read: connection reset by peer"), "hook", store.StatePending, 1, ""},
		{"upstream pattern", errors.New("400 Bad Request: chat_id is empty"), "hook", store.StateDead, 0, "permanent error (matches"},
		{"exec exit 75", &SendError{Class: Transient, Err: errors.New("exit status 75"), Status: 75}, "hook", store.StatePending, 1, ""},
		{"exec exit 1", &SendError{Class: Permanent, Err: errors.New("exit status 1"), Status: 1}, "hook", store.StateDead, 0, "permanent error"},
		{"adapter not ready", NotReadyError(nil), "hook", store.StatePending, 0, ""},
		{"sink not configured", nil, "removed", store.StateDead, 0, ReasonUnknownSink},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ds := storetest.NewMemory()
				e := putEntry(ds, store.Entry{Sink: tc.sink, State: store.StatePending})
				sink := &fakeSink{script: func(Delivery) error { return tc.err }}
				s := newService(t, parityConfig(), ds, map[string]Sink{"hook": sink})
				stop := start(t, s)
				synctest.Wait()
				stop()
				g := mustGet(t, ds, e.ID)
				if g.State != tc.state || g.Failures != tc.failures || !strings.HasPrefix(g.DeadReason, tc.reason) {
					t.Fatalf("entry = state %s failures %d reason %q", g.State, g.Failures, g.DeadReason)
				}
				if tc.err != nil && g.State != store.StateDelivered && g.LastError == "" && tc.state == store.StateDead {
					t.Fatalf("dead letter lost its last error: %+v", g)
				}
			})
		})
	}
}

// R-DLV-01 / P3: a crash between the send and its ack leaves the entry sending under the
// dead epoch; the next start resends it with the same idempotency key (the only duplicate),
// counts it as interrupted, and does not resend what was delivered.
func TestCrashBetweenSendAndAck_RDLV01(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		sink := &fakeSink{}
		s1 := newService(t, parityConfig(), ds, map[string]Sink{"hook": sink})
		stop := start(t, s1)
		synctest.Wait()
		done := enqueueReq(t, s1, Request{Sink: "hook", Key: "done"})
		synctest.Wait()
		// The ack of the next send never lands: the process dies between send and ack.
		ds.SetWriteFault(func(op string) error {
			if op == "complete" || op == "release" {
				return fmt.Errorf("%w: process killed", store.ErrStorage)
			}
			return nil
		})
		cut := enqueueReq(t, s1, Request{Sink: "hook", Key: "cut"})
		synctest.Wait()
		stop()
		if g := mustGet(t, ds, cut.ID); g.State != store.StateSending {
			t.Fatalf("after the crash: %+v", g)
		}
		ds.SetWriteFault(nil)

		s2 := newService(t, parityConfig(), ds, map[string]Sink{"hook": sink})
		stop = start(t, s2)
		defer stop()
		synctest.Wait()
		sum, _ := s2.LastRecovery()
		if sum.Interrupted != 1 || sum.Scanned != 1 || sum.Total() != 1 {
			t.Fatalf("summary = %+v", sum)
		}
		if g := mustGet(t, ds, cut.ID); g.State != store.StateDelivered || g.Attempts != 2 {
			t.Fatalf("interrupted entry = %+v", g)
		}
		var keys []string
		for _, sd := range sink.Sends() {
			keys = append(keys, sd.key)
		}
		if fmt.Sprint(keys) != "[done cut cut]" {
			t.Fatalf("sends = %v (only the interrupted entry may be duplicated)", keys)
		}
		_ = done
	})
}

// R-DLV-01 with the real store: reopening the SQLite file under a new epoch finds the entry
// that was sending, and resends it with its key.
func TestCrashRecoverySQLite_RDLV01(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "deliveries.db")
	st1, err := sqlite.Open(ctx, path, sqliteSettings)
	if err != nil {
		t.Fatal(err)
	}
	ep, _ := st1.NewEpoch(ctx)
	var ids []int64
	for _, k := range []string{"sent-not-acked", "delivered", "pending"} {
		e, _, err := st1.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: k, Payload: []byte(k)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	for _, id := range ids[:2] {
		if _, err := st1.MarkSending(ctx, id, ep, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := st1.Complete(ctx, ids[1], ep); err != nil {
		t.Fatal(err)
	}
	if err := st1.Close(); err != nil { // the process dies here: ids[0] was sent, never acked
		t.Fatal(err)
	}

	st2, err := sqlite.Open(ctx, path, sqliteSettings)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	sink := &fakeSink{}
	cfg := parityConfig()
	cfg.ReplaySpacing = 100 * time.Millisecond // replays run on several workers: space them well apart to pin their order
	s := newService(t, cfg, st2, map[string]Sink{"hook": sink})
	stop := start(t, s)
	defer stop()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := s.LastRecovery(); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no recovery summary")
		}
		time.Sleep(5 * time.Millisecond)
	}
	sum, _ := s.LastRecovery()
	if sum.Scanned != 2 || sum.Interrupted != 1 || sum.Recovered != 1 || sum.Total() != 2 {
		t.Fatalf("summary = %+v", sum)
	}
	var keys []string
	for _, sd := range sink.Sends() {
		keys = append(keys, fmt.Sprint(sd.key, "#", sd.attempt))
	}
	if fmt.Sprint(keys) != "[sent-not-acked#2 pending#1]" {
		t.Fatalf("sends = %v", keys)
	}
	for _, id := range ids {
		if g, _ := st2.Get(ctx, id); g.State != store.StateDelivered {
			t.Fatalf("entry %d = %+v", id, g)
		}
	}
	st, err := s.Status(ctx)
	if err != nil || st.Synchronous != sqlite.SyncFull || st.Store != "sqlite" || st.Delivered != 3 {
		t.Fatalf("status = %+v, %v", st, err)
	}
}

// The status block has the field names docs/status.md documents.
func TestStatusJSON(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		putEntry(ds, store.Entry{Sink: "gateway", State: store.StatePending})
		putEntry(ds, store.Entry{Sink: "hook", State: store.StateDead, FinishedAt: time.Now()})
		s := newService(t, parityConfig(), ds, map[string]Sink{"gateway": &readySink{fakeSink: &fakeSink{}}})
		st, err := s.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.LastRecovery != nil {
			t.Fatal("summary before any pass")
		}
		stop := start(t, s)
		defer stop()
		synctest.Wait()
		st, err = s.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(st)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"pending", "failed", "delivered", "oldest_pending_at", "last_recovery", "synchronous"} {
			if _, ok := m[k]; !ok {
				t.Errorf("status lacks %q: %s", k, b)
			}
		}
		lr, _ := m["last_recovery"].(map[string]any)
		for _, k := range []string{"recovered", "failed", "skipped_max_retries", "deferred_backoff", "at",
			"deferred_budget", "already_gone", "interrupted"} {
			if _, ok := lr[k]; !ok {
				t.Errorf("last_recovery lacks %q: %s", k, b)
			}
		}
		if m["pending"] != 1.0 || m["failed"] != 1.0 || lr["deferred_not_ready"] != 1.0 {
			t.Errorf("status = %s", b)
		}
	})
}

// Operator surface: retry a dead letter (sent again), drop, purge.
func TestOperatorRetryDropPurge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ds := storetest.NewMemory()
		fail := true
		sink := &fakeSink{script: func(Delivery) error {
			if fail {
				return PermanentError(errors.New("HTTP 400"))
			}
			return nil
		}}
		s := runHook(t, ds, sink)
		synctest.Wait()
		ctx := context.Background()
		e := enqueueReq(t, s, Request{Sink: "hook", Key: "k"})
		synctest.Wait()
		if g := mustGet(t, ds, e.ID); g.State != store.StateDead {
			t.Fatalf("not dead: %+v", g)
		}
		fail = false
		if _, err := s.Retry(ctx, e.ID); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if g := mustGet(t, ds, e.ID); g.State != store.StateDelivered || g.Attempts != 2 {
			t.Fatalf("after retry: %+v", g)
		}
		fail = true
		d := enqueueReq(t, s, Request{Sink: "hook", Key: "d"})
		synctest.Wait()
		time.Sleep(2 * time.Hour)
		if n, err := s.Purge(ctx, store.StateDead, time.Hour, 0); err != nil || n != 1 {
			t.Fatalf("purge = %d, %v", n, err)
		}
		if _, err := s.Get(ctx, d.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("purged entry: %v", err)
		}
		p := putEntry(ds, store.Entry{Sink: "hook", State: store.StatePending, NextAttemptAt: time.Now().Add(time.Hour)})
		if err := s.Drop(ctx, p.ID); err != nil {
			t.Fatal(err)
		}
		if l, _ := s.List(ctx, store.Filter{State: store.StatePending}); len(l) != 0 {
			t.Fatalf("pending after drop: %+v", l)
		}
	})
}

// One structured line per transition, with id, attempt and idempotency key; never a payload
// or a header value.
func TestTransitionLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zap.DebugLevel)
		ds := storetest.NewMemory()
		n := 0
		sink := &fakeSink{script: func(Delivery) error {
			n++
			if n == 1 {
				return TransientError(errors.New("HTTP 503"))
			}
			return nil
		}}
		s, err := New(parityConfig(), ds, map[string]Sink{"hook": sink}, Deps{Log: zap.New(core)})
		if err != nil {
			t.Fatal(err)
		}
		stop := start(t, s)
		synctest.Wait()
		enqueueReq(t, s, Request{Sink: "hook", Key: "key-7", Headers: map[string]string{"Authorization": "secret-header"},
			Payload: []byte("secret-payload")})
		time.Sleep(time.Minute)
		synctest.Wait()
		stop()
		for _, msg := range []string{"delivery enqueued", "delivery sending", "delivery failed, retry scheduled", "delivery delivered"} {
			entries := logs.FilterMessage(msg).All()
			if len(entries) == 0 {
				t.Fatalf("no %q line", msg)
			}
			f := entries[0].ContextMap()
			if f["id"] == nil || f["idempotency_key"] != "key-7" || f["sink"] != "hook" {
				t.Errorf("%q fields = %v", msg, f)
			}
			if msg != "delivery enqueued" && f["attempt"] == nil {
				t.Errorf("%q has no attempt: %v", msg, f)
			}
		}
		for _, e := range logs.All() {
			line := fmt.Sprint(e.Message, e.ContextMap())
			if strings.Contains(line, "secret-header") || strings.Contains(line, "secret-payload") {
				t.Fatalf("log leaks a payload or header value: %s", line)
			}
		}
	})
}

// sqliteSettings are what the config file gives the SQLite store, with the tests' bounds.
var sqliteSettings = sqlite.Options{Synchronous: sqlite.SyncFull, MaxPayload: storetest.MaxPayload, MaxEntries: storetest.MaxEntries}
