package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// settings gives o what the config file gives the store: synchronous FULL and the tests'
// bounds, where o leaves them unset.
func settings(o Options) Options {
	if o.Synchronous == "" {
		o.Synchronous = SyncFull
	}
	if o.MaxPayload == 0 {
		o.MaxPayload = storetest.MaxPayload
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = storetest.MaxEntries
	}
	return o
}

func openTest(t *testing.T, path string, o Options) *SQLite {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "q.db")
	}
	s, err := Open(context.Background(), path, settings(o))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func mustEnqueue(t *testing.T, s store.Store, key string) store.Entry {
	t.Helper()
	e, _, err := s.Enqueue(context.Background(), store.NewEntry{Sink: "hook", Key: key, Payload: []byte("p-" + key)})
	if err != nil {
		t.Fatalf("enqueue %s: %v", key, err)
	}
	return e
}

func TestOpenSettings(t *testing.T) {
	s := openTest(t, "", Options{})
	info := s.Info()
	if info.Driver != "sqlite" || info.Synchronous != SyncFull || info.Schema != SchemaVersion {
		t.Fatalf("info = %+v", info)
	}
	var mode string
	if err := s.rdb.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v", mode, err)
	}
	// The writer's statement journals are kept in memory (2): with a temporary file, each
	// statement that fires the counts' triggers, and each in a savepoint, wrote its pages
	// out one write(2) at a time (15 % of the daemon's CPU in a profile of batch enqueues).
	var temp int
	if err := s.wconn.QueryRowContext(context.Background(), "PRAGMA temp_store").Scan(&temp); err != nil || temp != 2 {
		t.Fatalf("the writer's temp_store = %d, %v; want 2 (memory)", temp, err)
	}
	n := openTest(t, "", Options{Synchronous: SyncNormal})
	if got := n.Info().Synchronous; got != SyncNormal {
		t.Fatalf("synchronous = %q, want normal", got)
	}
	if _, err := Open(context.Background(), filepath.Join(t.TempDir(), "x.db"), settings(Options{Synchronous: "off"})); err == nil {
		t.Fatal("synchronous=off accepted")
	}
	fi, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o077 != 0 && os.PathSeparator == '/' {
		t.Fatalf("database mode = %v, want private", fi.Mode().Perm())
	}
}

// Acknowledged entries survive closing and reopening, with their states (P1 at package level).
func TestReopenKeepsEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	s, err := Open(context.Background(), path, settings(Options{}))
	if err != nil {
		t.Fatal(err)
	}
	a := mustEnqueue(t, s, "a")
	b := mustEnqueue(t, s, "b")
	ep, _ := s.NewEpoch(context.Background())
	if _, err := s.MarkSending(context.Background(), b.ID, ep, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Enqueue(context.Background(), store.NewEntry{Sink: "x", Key: "y"}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("enqueue after close: %v", err)
	}
	r := openTest(t, path, Options{})
	ep2, _ := r.NewEpoch(context.Background())
	if ep2 <= ep {
		t.Fatalf("epoch after reopen = %d, want > %d", ep2, ep)
	}
	if g, err := r.Get(context.Background(), a.ID); err != nil || g.State != store.StatePending || string(g.Payload) != "p-a" {
		t.Fatalf("a after reopen = %+v, %v", g, err)
	}
	if g, err := r.Get(context.Background(), b.ID); err != nil || !g.Interrupted(ep2) {
		t.Fatalf("b after reopen = %+v, %v, want interrupted", g, err)
	}
	if r.live != 2 {
		t.Fatalf("live count after reopen = %d, want 2", r.live)
	}
}

// Concurrent enqueues share transactions, and each caller is answered only after the commit
// that carries its entry.
func TestGroupCommit(t *testing.T) {
	const n = 32
	var returned atomic.Int32
	var once sync.Once
	release := make(chan struct{})
	held := make(chan int, 1)
	var sizes []int
	var mu sync.Mutex
	committed := 0
	s := openTest(t, "", Options{beforeCommit: func(size int) {
		mu.Lock()
		sizes = append(sizes, size)
		if r := int(returned.Load()); r > committed {
			t.Errorf("%d callers returned before commit %d, only %d entries were committed", r, len(sizes), committed)
		}
		committed += size // committed right after this hook returns
		mu.Unlock()
		// Hold the first commit until every other caller waits in the queue.
		once.Do(func() {
			held <- size
			<-release
		})
	}})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			e, _, err := s.Enqueue(context.Background(), store.NewEntry{Sink: "hook", Key: fmt.Sprint("k", i), Payload: []byte("x")})
			returned.Add(1)
			if err != nil {
				errs <- err
				return
			}
			// Acked means committed: a fresh read connection sees it.
			if _, err := s.Get(context.Background(), e.ID); err != nil {
				errs <- fmt.Errorf("acked entry %d not readable: %w", e.ID, err)
			}
		})
	}
	first := <-held
	for waiting(s) < n-first {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Usually [1, n-1]; all n in one when the callers all queued before the writer woke.
	st := s.Stats()
	if st.Ops != n || st.Commits > 2 {
		t.Fatalf("stats = %+v, want %d ops in at most 2 commits", st, n)
	}
	mu.Lock()
	defer mu.Unlock()
	if sum := sizes[0] + sizes[len(sizes)-1]; len(sizes) > 2 || (len(sizes) == 2 && sum != n) || (len(sizes) == 1 && sizes[0] != n) {
		t.Fatalf("batch sizes = %v, want at most two adding up to %d", sizes, n)
	}
}

// A failed commit fails every caller of its batch, none is acknowledged, nothing is stored,
// and the store works again afterwards (P9 at package level).
func TestFailedCommitFailsWholeBatch(t *testing.T) {
	const n = 8
	var fail atomic.Bool
	gate, entered := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s := openTest(t, "", Options{
		FaultHook: func(op string) error {
			if op == "commit" && fail.Load() {
				return fmt.Errorf("fsync: %w", syscall.EIO)
			}
			return nil
		},
		beforeCommit: func(int) { once.Do(func() { close(entered); <-gate }) },
	})
	// The first (single) batch carries the blocker; the next one carries the n enqueues.
	blocker := make(chan error, 1)
	go func() {
		_, _, err := s.Enqueue(context.Background(), store.NewEntry{Sink: "hook", Key: "first", Payload: []byte("x")})
		blocker <- err
	}()
	<-entered
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, _, errs[i] = s.Enqueue(context.Background(), store.NewEntry{Sink: "hook", Key: fmt.Sprint("k", i), Payload: []byte("x")})
		})
	}
	for waiting(s) < n {
		time.Sleep(time.Millisecond)
	}
	fail.Store(true)
	close(gate)
	wg.Wait()
	if err := <-blocker; !errors.Is(err, store.ErrStorage) {
		t.Fatalf("blocker: %v", err)
	}
	for i, err := range errs {
		if !errors.Is(err, store.ErrStorage) || !errors.Is(err, syscall.EIO) {
			t.Errorf("caller %d: err = %v, want ErrStorage wrapping EIO", i, err)
		}
	}
	c, err := s.Counts(context.Background())
	if err != nil || c.Pending != 0 {
		t.Fatalf("after failed commit: %+v, %v", c, err)
	}
	if st := s.Stats(); st.Failed < 1 {
		t.Fatalf("stats = %+v", st)
	}
	fail.Store(false)
	e := mustEnqueue(t, s, "k0")
	if e.ID == 0 || s.live != 1 {
		t.Fatalf("after recovery: %+v live=%d", e, s.live)
	}
}

// R-ENV-04: with the database unable to grow (a real SQLITE_FULL from max_page_count), enqueue
// fails with ErrDiskFull and stores nothing; stored entries can still be read and delivered;
// once space returns, enqueue works again.
func TestDiskFull(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{})
	stored := mustEnqueue(t, s, "stored")
	var pages int
	if err := s.wconn.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.wconn.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 64<<10)
	_, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "big", Payload: big})
	if !errors.Is(err, store.ErrDiskFull) {
		t.Fatalf("enqueue on a full disk: err = %v, want ErrDiskFull", err)
	}
	if !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("error text %q does not say disk full", err)
	}
	if _, err := s.Get(ctx, stored.ID); err != nil {
		t.Fatalf("read while full: %v", err)
	}
	ep, err := s.NewEpoch(ctx)
	if err != nil {
		t.Fatalf("epoch while full: %v", err)
	}
	if _, err := s.MarkSending(ctx, stored.ID, ep, time.Minute); err != nil {
		t.Fatalf("mark sending while full: %v", err)
	}
	if err := s.Complete(ctx, stored.ID, ep); err != nil {
		t.Fatalf("complete while full: %v", err)
	}
	if c, _ := s.Counts(ctx); c.Pending != 0 || c.Delivered != 1 {
		t.Fatalf("counts = %+v", c)
	}
	if _, err := s.wconn.ExecContext(ctx, "PRAGMA max_page_count = 1073741823"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "big", Payload: big}); err != nil {
		t.Fatalf("enqueue after space returned: %v", err)
	}
}

// The injected form of the same fault: ENOSPC from the write path maps to ErrDiskFull.
func TestInjectedDiskFull(t *testing.T) {
	ctx := context.Background()
	var full atomic.Bool
	s := openTest(t, "", Options{FaultHook: func(op string) error {
		if op == "enqueue" && full.Load() {
			return syscall.ENOSPC
		}
		return nil
	}})
	a := mustEnqueue(t, s, "a")
	full.Store(true)
	_, _, err := s.Enqueue(ctx, store.NewEntry{Sink: "hook", Key: "b", Payload: []byte("x")})
	if !errors.Is(err, store.ErrDiskFull) {
		t.Fatalf("err = %v, want ErrDiskFull", err)
	}
	if l, _ := s.List(ctx, store.Filter{}); len(l) != 1 || l[0].ID != a.ID {
		t.Fatalf("entries = %+v", l)
	}
	full.Store(false)
	mustEnqueue(t, s, "b")
}

func TestCorruptFileAtOpen(t *testing.T) {
	dir := t.TempDir()
	t.Run("not a database", func(t *testing.T) {
		path := filepath.Join(dir, "garbage.db")
		if err := os.WriteFile(path, []byte(strings.Repeat("this is not sqlite ", 512)), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(context.Background(), path, settings(Options{}))
		if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), path) {
			t.Fatalf("err = %v, want ErrCorrupt naming %s", err, path)
		}
	})
	t.Run("damaged pages", func(t *testing.T) {
		path := filepath.Join(dir, "damaged.db")
		s, err := Open(context.Background(), path, settings(Options{}))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			if _, _, err := s.Enqueue(context.Background(), store.NewEntry{Sink: "hook", Key: fmt.Sprint("k", i),
				Payload: []byte(strings.Repeat("x", 300))}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.wconn.ExecContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// Overwrite the middle pages (b-tree pages of the table and its indexes) with noise.
		for i := 4096 * 3; i < len(data)-4096; i++ {
			data[i] = byte(i*7 + 3)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err = Open(context.Background(), path, settings(Options{}))
		if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), path) {
			t.Fatalf("err = %v, want ErrCorrupt naming %s", err, path)
		}
	})
	t.Run("newer schema", func(t *testing.T) {
		path := filepath.Join(dir, "newer.db")
		s, err := Open(context.Background(), path, settings(Options{}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.wconn.ExecContext(context.Background(), fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion+1)); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if _, err := Open(context.Background(), path, settings(Options{})); err == nil || !strings.Contains(err.Error(), "newer") {
			t.Fatalf("err = %v, want a newer-schema error", err)
		}
	})
}

// R-ENV-06: a damaged row is quarantined with a reason: no scan fails on it, it is never
// sent, and the rest of the queue goes on.
func TestDamagedRowQuarantined(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	s := openTest(t, path, Options{})
	good := mustEnqueue(t, s, "good")
	badHeaders := mustEnqueue(t, s, "bad-headers")
	badState := mustEnqueue(t, s, "bad-state")
	badTime := mustEnqueue(t, s, "bad-time")
	// The damage happens while schedd is down (a torn or hand-edited row).
	for _, q := range []string{
		fmt.Sprintf("UPDATE deliveries SET headers = '{not json' WHERE id = %d", badHeaders.ID),
		fmt.Sprintf("UPDATE deliveries SET state = 'sideways' WHERE id = %d", badState.ID),
		fmt.Sprintf("UPDATE deliveries SET next_attempt_at = 'soon' WHERE id = %d", badTime.ID),
	} {
		if _, err := s.wconn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s = openTest(t, path, Options{})
	listed, err := s.List(ctx, store.Filter{State: store.StatePending})
	if err != nil {
		t.Fatalf("list with damaged rows: %v", err)
	}
	if len(listed) != 1 || listed[0].ID != good.ID {
		t.Fatalf("pending = %+v, want only the good entry", listed)
	}
	g, err := s.Get(ctx, badState.ID)
	if err != nil {
		t.Fatalf("get damaged: %v", err)
	}
	if g.State != store.StateDead || !g.Quarantined || !strings.HasPrefix(g.DeadReason, store.ReasonQuarantined) {
		t.Fatalf("damaged entry = %+v", g)
	}
	live, err := s.Live(ctx, 0, 10)
	if err != nil || len(live) != 1 || live[0].ID != good.ID {
		t.Fatalf("live = %+v, %v", live, err)
	}
	c, _ := s.Counts(ctx)
	if c.Quarantined != 3 || c.Dead != 3 || c.Pending != 1 {
		t.Fatalf("counts = %+v", c)
	}
	ep, _ := s.NewEpoch(ctx)
	if _, err := s.MarkSending(ctx, badHeaders.ID, ep, time.Minute); !errors.Is(err, store.ErrNotClaimable) {
		t.Fatalf("claim quarantined: %v", err)
	}
	// Retrying a still-damaged row sends it straight back to quarantine.
	if _, err := s.Retry(ctx, badHeaders.ID); !errors.Is(err, store.ErrWrongState) {
		t.Fatalf("retry damaged: %v", err)
	}
	if s.live != 1 {
		t.Fatalf("live count = %d, want 1", s.live)
	}
}

// The bound on pending entries holds across a batch: in one transaction the limit is
// checked against the entries of the earlier operations too.
func TestQueueFullWithinBatch(t *testing.T) {
	gate, entered := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s := openTest(t, "", Options{MaxEntries: 5, beforeCommit: func(int) { once.Do(func() { close(entered); <-gate }) }})
	first := make(chan error, 1)
	go func() {
		_, _, err := s.Enqueue(context.Background(), store.NewEntry{Sink: "hook", Key: "first", Payload: []byte("x")})
		first <- err
	}()
	<-entered
	var wg sync.WaitGroup
	var full, ok atomic.Int32
	for i := range 8 {
		wg.Go(func() {
			_, _, err := s.Enqueue(context.Background(), store.NewEntry{Sink: "hook", Key: fmt.Sprint("k", i), Payload: []byte("x")})
			switch {
			case errors.Is(err, store.ErrQueueFull):
				full.Add(1)
			case err == nil:
				ok.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	for waiting(s) < 8 {
		time.Sleep(time.Millisecond)
	}
	close(gate)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if ok.Load() != 4 || full.Load() != 4 {
		t.Fatalf("ok=%d full=%d, want 4 and 4", ok.Load(), full.Load())
	}
}

// waiting is how many operations wait for the next batch.
func waiting(s *SQLite) int { return s.writer.Waiting() }

// TestOpenNeedsTheConfigSettings: the settings the config file gives (synchronous, the
// bounds) are required; a zero is refused, naming the option, not replaced by a default
// of the driver's own.
func TestOpenNeedsTheConfigSettings(t *testing.T) {
	full := settings(Options{})
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"Synchronous", Options{MaxPayload: full.MaxPayload, MaxEntries: full.MaxEntries}},
		{"MaxPayload", Options{Synchronous: SyncFull, MaxEntries: full.MaxEntries}},
		{"MaxEntries", Options{Synchronous: SyncFull, MaxPayload: full.MaxPayload}},
	} {
		path := filepath.Join(t.TempDir(), "q.db")
		if _, err := Open(context.Background(), path, tc.o); err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("Open without %s: %v, want an error naming it", tc.name, err)
		}
		if _, err := OpenLazy(context.Background(), path, tc.o); err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("OpenLazy without %s: %v, want an error naming it", tc.name, err)
		}
	}
}
