package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/postgres"
	"github.com/schedd/schedd/internal/store/postgres/pgtest"
)

// A claim stays its host's while the host renews it, and passes to another host once the
// owner stopped renewing, after the host lease and not before; the old owner is fenced.
func TestLeaseRescueAcrossHosts(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	// Long enough that a heartbeat (every lease/3) is not late on a loaded machine.
	const lease = 1200 * time.Millisecond
	a, err := postgres.Open(ctx, dsn, postgres.WithTestSettings(postgres.Options{HostID: "host-a", HostLease: lease}))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := open(t, dsn, postgres.Options{HostID: "host-b", HostLease: lease})
	e, _, err := a.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "k", Payload: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	epA, _ := a.NewEpoch(ctx)
	epB, _ := b.NewEpoch(ctx)
	if _, err := a.MarkSending(ctx, e.ID, epA, time.Hour); err != nil {
		t.Fatal(err)
	}
	// Two host leases while host-a renews: its claim holds.
	for end := time.Now().Add(2 * lease); time.Now().Before(end); time.Sleep(lease / 4) {
		if _, err := b.MarkSending(ctx, e.ID, epB, time.Minute); !errors.Is(err, store.ErrNotClaimable) {
			t.Fatalf("host-b claimed a live host's entry: %v", err)
		}
	}
	// host-a stops renewing (as a dead host does): host-b rescues the entry after the lease.
	stopped := time.Now()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	var took time.Duration
	for {
		_, err := b.MarkSending(ctx, e.ID, epB, time.Minute)
		if err == nil {
			took = time.Since(stopped)
			break
		}
		if !errors.Is(err, store.ErrNotClaimable) {
			t.Fatal(err)
		}
		if time.Since(stopped) > 10*lease {
			t.Fatalf("not rescued %v after host-a stopped renewing", time.Since(stopped))
		}
		time.Sleep(lease / 10)
	}
	if took < lease/2 {
		t.Fatalf("rescued %v after the owner stopped: before its lease of %v ran out", took, lease)
	}
	g, err := b.Get(ctx, e.ID)
	if err != nil || g.Epoch != epB || g.Attempts != 2 {
		t.Fatalf("rescued entry = %+v, %v", g, err)
	}
	// The old owner, were it only partitioned away, can no longer record an outcome.
	c := open(t, dsn, postgres.Options{HostID: "host-a", HostLease: lease})
	if err := c.Complete(ctx, e.ID, epA); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("complete by the old owner = %v, want ErrNotOwner", err)
	}
	if err := b.Complete(ctx, e.ID, epB); err != nil {
		t.Fatal(err)
	}
}

// Hosts starting at once on an empty database all migrate it, one after the other.
func TestConcurrentMigration(t *testing.T) {
	dsn := pgtest.DSN(t)
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	stores := make([]*postgres.Store, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = postgres.Open(context.Background(), dsn, postgres.WithTestSettings(postgres.Options{HostID: fmt.Sprint("host-", i)}))
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("host %d: %v", i, err)
		}
		defer stores[i].Close()
		if v := stores[i].Info().Schema; v != postgres.SchemaVersion {
			t.Fatalf("host %d: schema %d, want %d", i, v, postgres.SchemaVersion)
		}
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows, v int
	if err := conn.QueryRow(context.Background(), "SELECT count(*), max(version) FROM schedd_schema_version").Scan(&rows, &v); err != nil {
		t.Fatal(err)
	}
	if rows != 1 || v != postgres.SchemaVersion {
		t.Fatalf("schema version table: %d rows, version %d", rows, v)
	}
}

// An enqueue on one host wakes the others.
func TestNotifyWakesOtherHosts(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	a := open(t, dsn, postgres.Options{HostID: "host-a"})
	b := open(t, dsn, postgres.Options{HostID: "host-b"})
	// The listener may not be listening yet: enqueue until b hears one.
	deadline := time.After(10 * time.Second)
	for i := 0; ; i++ {
		if _, _, err := a.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: fmt.Sprint("k", i)}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-b.Wake():
			return
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatal("host-b was not woken by host-a's enqueues")
		}
	}
}

// A host is not woken by its own enqueues (it armed them as it wrote them), only by other
// hosts'.
func TestNotifySkipsOwnHost(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	a := open(t, dsn, postgres.Options{HostID: "host-a"})
	b := open(t, dsn, postgres.Options{HostID: "host-b"})
	pgtest.WaitListening(t, dsn, postgres.Channel, 2)
	if _, _, err := a.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.Wake():
	case <-time.After(10 * time.Second):
		t.Fatal("host-b was not woken by host-a's enqueue")
	}
	// b heard it: a's own listener has had it too by now, and dropped it.
	select {
	case <-a.Wake():
		t.Fatal("host-a was woken by its own enqueue")
	case <-time.After(300 * time.Millisecond):
	}
}

// While the database is unreachable an enqueue fails with ErrStorage and stores nothing;
// once it is back the same store works again. The DSN's password is in no error.
func TestDatabaseDownAndSecretDSN(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	const secret = "s3cret-pw"
	p, viaProxy := pgtest.NewProxy(t, dsn, secret)
	s := open(t, viaProxy, postgres.Options{HostID: "host-a"})
	if _, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "before"}); err != nil {
		t.Fatal(err)
	}
	p.Down()
	_, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "while-down"})
	if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, store.ErrStorage) || strings.Contains(err.Error(), secret) {
		t.Fatalf("enqueue while down = %v, want ErrUnavailable and ErrStorage without the password", err)
	}
	if c := s.Info().Connected; c == nil || *c {
		t.Fatalf("info while down: connected = %v, want false", c)
	}
	if err := s.Ping(ctx); err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("ping while down = %v", err)
	}
	p.Up()
	if _, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "after"}); err != nil {
		t.Fatalf("enqueue once back: %v", err)
	}
	if info := s.Info(); info.Connected == nil || !*info.Connected || info.HostID != "host-a" || info.Driver != "postgres" || info.Path != "" {
		t.Fatalf("info once back = %+v", info)
	}
	l, err := s.List(ctx, store.Filter{})
	if err != nil || len(l) != 2 || l[0].Key != "before" || l[1].Key != "after" {
		t.Fatalf("stored = %+v, %v (nothing of the failed enqueue may be there)", l, err)
	}
	for _, bad := range []string{
		fmt.Sprintf("postgres://u:%s@127.0.0.1:1/db?connect_timeout=2", secret), // nothing listens
		fmt.Sprintf("postgres://u:%s@[::1/db", secret),                          // malformed
	} {
		_, err := postgres.Open(ctx, bad, postgres.WithTestSettings(postgres.Options{HostID: "h"}))
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Fatalf("open %q = %v, want an error without the password", bad, err)
		}
	}
}

// With Wait, a store whose database is down at Open comes up anyway: it refuses everything
// with ErrUnavailable until the database is reached, then opens by itself. Without Wait,
// Open fails.
func TestWaitForTheDatabase(t *testing.T) {
	ctx := context.Background()
	p, dsn := pgtest.NewProxy(t, pgtest.DSN(t), "")
	p.Down()
	if _, err := postgres.Open(ctx, dsn, postgres.WithTestSettings(postgres.Options{HostID: "h"})); err == nil {
		t.Fatal("Open without Wait succeeded with the database down")
	}
	s := open(t, dsn, postgres.Options{HostID: "h", Wait: true, RetryEvery: 50 * time.Millisecond})
	_, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "early"})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("enqueue before the database was reached = %v, want ErrUnavailable", err)
	}
	if _, err := s.NewEpoch(ctx); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("new epoch before the database was reached = %v", err)
	}
	if info := s.Info(); info.Opened || *info.Connected {
		t.Fatalf("info before the database was reached = %+v", info)
	}
	select {
	case <-s.Opened():
		t.Fatal("opened with the database down")
	default:
	}
	p.Up()
	select {
	case <-s.Opened():
	case <-time.After(10 * time.Second):
		t.Fatal("not opened 10 s after the database came back")
	}
	if _, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "later"}); err != nil {
		t.Fatal(err)
	}
	if info := s.Info(); !info.Opened || !*info.Connected || info.Schema != postgres.SchemaVersion {
		t.Fatalf("info once reached = %+v", info)
	}
}

// A commit whose reply is lost (the server committed, the connection broke before the
// client heard it) fails with ErrOutcomeUnknown besides ErrUnavailable: the entry may be
// stored, and here it is; enqueueing it again with the same key returns it, stored once.
// A failure before the commit is sent stays a plain ErrUnavailable: nothing was stored.
func TestLostCommitReply(t *testing.T) {
	ctx := context.Background()
	p, dsn := pgtest.NewProxy(t, pgtest.DSN(t), "")
	s := open(t, dsn, postgres.Options{HostID: "host-a"})
	n := store.NewEntry{Sink: "hook", Key: "k", Payload: []byte("x")}
	p.LoseReplyTo("INSERT INTO schedd_deliveries")
	_, _, err := s.Enqueue(ctx, n)
	if !errors.Is(err, store.ErrOutcomeUnknown) || !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, store.ErrStorage) {
		t.Fatalf("enqueue with its commit reply lost = %v, want ErrOutcomeUnknown and ErrUnavailable", err)
	}
	e, created, err := s.Enqueue(ctx, n)
	if err != nil || created || e.Key != "k" {
		t.Fatalf("enqueue again = %+v, created %v, %v; want the entry the lost commit stored", e, created, err)
	}
	if l, err := s.List(ctx, store.Filter{}); err != nil || len(l) != 1 {
		t.Fatalf("stored = %+v, %v; want one entry", l, err)
	}

	// A claim whose reply is lost is stored too: the caller sees an error and the entry
	// is sending under its epoch (the delivery runtime releases such a claim).
	ep, err := s.NewEpoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.LoseReplyTo("UPDATE schedd_deliveries d SET state = 'sending'")
	if _, err := s.MarkSending(ctx, e.ID, ep, time.Minute); !errors.Is(err, store.ErrOutcomeUnknown) {
		t.Fatalf("claim with its commit reply lost = %v, want ErrOutcomeUnknown", err)
	}
	if g, err := s.Get(ctx, e.ID); err != nil || g.State != store.StateSending || g.Epoch != ep {
		t.Fatalf("entry after the lost claim reply = %+v, %v", g, err)
	}
	if err := s.Release(ctx, e.ID, ep, time.Now()); err != nil {
		t.Fatal(err)
	}

	// With the database cut off, a statement written on a pooled connection the cut closed
	// unannounced may say ErrOutcomeUnknown (it was sent); once the pool has no connection
	// left, the database is unreachable and nothing is sent: ErrUnavailable alone.
	p.Down()
	for i := 0; ; i++ {
		_, _, err = s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "k2"})
		if !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("enqueue with the database down = %v, want ErrUnavailable", err)
		}
		if !errors.Is(err, store.ErrOutcomeUnknown) {
			break
		}
		if i == 10 {
			t.Fatalf("enqueue with the database down = %v after %d tries, want ErrUnavailable alone", err, i)
		}
	}
}
