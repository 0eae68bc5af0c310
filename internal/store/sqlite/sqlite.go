// Package sqlite is the embedded driver of internal/store: a host's stores in files of its
// state directory. The delivery store (Open, OpenLazy) is one file, WAL, synchronous=FULL
// by default, a group commit that puts concurrent operations into one transaction and one
// fsync (led by the first caller to find no batch running, not by a goroutine), a pool of
// read connections, and a space reserve beside the file so that a full disk stops
// enqueues but not the delivery of what is stored (see Options.Reserve). Cron's task store
// (OpenTasks) is cron.db beside it. Both files migrate with one runner (schema.go) and
// refuse to open as new where a store was (storeid).
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/group"
	"github.com/schedd/schedd/internal/store/storeid"
)

// Synchronous modes of the SQLite store.
const (
	// SyncFull syncs the WAL on every commit: an acknowledged entry survives power loss.
	SyncFull = "full"
	// SyncNormal syncs only at checkpoints: acknowledged entries survive a process crash,
	// but the newest commits may roll back after a power loss (P10 in docs/scenarios.md).
	SyncNormal = "normal"
)

// Integrity checks run at open.
const (
	CheckQuick = "quick" // PRAGMA quick_check (default): O(N) but skips index content checks
	CheckFull  = "full"  // PRAGMA integrity_check
	CheckOff   = "off"
)

// Options configure the SQLite store. Synchronous, MaxPayload and MaxEntries are settings
// of the config file, which gives them their defaults: they are required here. The other
// fields are the driver's own tuning; their zero values take the defaults named.
type Options struct {
	// Synchronous is SyncFull or SyncNormal; required.
	Synchronous string
	// BusyTimeout is how long a statement waits for a lock (default 5 s).
	BusyTimeout time.Duration
	// MaxPayload bounds one payload in bytes; required, > 0.
	MaxPayload int
	// MaxEntries bounds pending+sending entries; required, > 0.
	MaxEntries int
	// MaxBatch bounds how many operations one group commit carries (default 256).
	MaxBatch int
	// ReadConns is the size of the read connection pool (default 4).
	ReadConns int
	// IntegrityCheck is CheckQuick (default), CheckFull or CheckOff.
	IntegrityCheck string
	// Reserve is the disk space, in bytes, kept in a file beside the database for the
	// entries already stored: when the disk fills, the reserve is given back so that they
	// can still be claimed, delivered and failed while enqueues are refused (ErrDiskFull);
	// enqueues resume once the reserve fits again with as much to spare. Default
	// DefaultReserve; negative disables it.
	Reserve int64
	// Now is the clock for the stamps the store writes (default time.Now).
	Now func() time.Time
	// Log receives store events (default zap.NewNop()).
	Log *zap.Logger
	// FaultHook, when set, runs before every operation of a batch (with its name, such as
	// "enqueue" or "complete") and before every commit ("commit"). An error it returns is
	// handled as a storage error at that step: the transaction is rolled back and every
	// caller in the batch gets the error. For fault injection in tests.
	FaultHook func(op string) error
	// OnCommit, when set, is told of each group commit once it is over: how long it took
	// (its fsync included) and the storage error that failed it (nil: committed). It runs on
	// the writer and must be quick.
	OnCommit func(took time.Duration, err error)

	// beforeCommit, in tests, sees each batch size just before its commit.
	beforeCommit func(n int)
	// probeEvery, in tests, replaces how often a full store probes for space.
	probeEvery time.Duration
}

// SQLite is the embedded Store: one database file in WAL mode.
type SQLite struct {
	path  string
	opts  Options
	log   *zap.Logger
	now   func() time.Time
	wdb   *sql.DB
	wconn *sql.Conn
	rdb   *sql.DB
	info  store.Info
	res   reserve

	// Group commit: one batch of operations at a time in one transaction (see submit).
	writer   group.Group[*writeOp, error]
	mu       sync.Mutex // guards closed
	closed   bool
	inflight sync.WaitGroup // the operations submitted and not answered yet

	// owned by the batch running
	live  int                  // pending + sending entries after the last commit
	stmts map[string]*sql.Stmt // prepared on wconn
	spare []*sql.Stmt          // prepared past maxStmts, closed after their batch

	getStmt *sql.Stmt // on the read pool

	statsMu sync.Mutex
	stats   Stats
}

var _ store.Store = (*SQLite)(nil)

// Stats count the writer's work; Commits < Ops shows group commit at work.
type Stats struct {
	Ops     int64 // operations executed
	Commits int64 // transactions committed
	Failed  int64 // transactions rolled back by a storage error
}

// Open opens (creating if needed) the store at path, runs the integrity check and the
// schema migrations, and starts the writer. A file that is not a database or fails its
// integrity check gives an error wrapping ErrCorrupt that names the file; so does a
// database that is not the store that was there (see package storeid): missing or empty
// while its identity record or WAL is left, or holding another store's identity.
func Open(ctx context.Context, path string, opts Options) (*SQLite, error) {
	if path == "" || strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("open store: invalid path %q", path)
	}
	if err := checkOptions(opts); err != nil {
		return nil, err
	}
	opts = withDefaults(opts)
	s := &SQLite{path: path, opts: opts, log: opts.Log, now: opts.Now}
	s.writer.MaxRunning, s.writer.MaxItems = 1, opts.MaxBatch
	s.writer.Run = func(_ context.Context, ops []*writeOp) ([]error, error) { return s.runBatch(ops), nil }
	// Before anything is created: a database that is missing or empty where a store was is
	// not opened as a new one.
	rec, err := storeid.Inspect(path)
	if err != nil {
		return nil, s.openError(err)
	}
	if err := createPrivate(path); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := s.open(ctx, rec); err != nil {
		s.closeDBs()
		return nil, err
	}
	s.res = reserve{path: path + "-reserve", size: opts.Reserve, log: s.log, every: opts.probeEvery}
	if err := s.res.ensure(); err != nil {
		if isNoSpace(err) {
			s.res.full.Store(true)
			s.log.Warn("delivery store starts with a full disk: enqueues are refused until space returns",
				zap.String("path", path), zap.Error(err))
		} else {
			s.log.Warn("delivery store has no space reserve", zap.String("path", path), zap.Error(err))
		}
	}
	s.log.Info("delivery store open", zap.String("path", path), zap.String("synchronous", s.info.Synchronous),
		zap.Int("schema_version", s.info.Schema), zap.Int("live", s.live))
	return s, nil
}

// checkOptions refuses what the caller must give: the settings the config file holds.
func checkOptions(o Options) error {
	switch {
	case o.Synchronous == "":
		return errors.New("sqlite store: Options.Synchronous is required (full or normal)")
	case o.MaxPayload <= 0:
		return fmt.Errorf("sqlite store: Options.MaxPayload %d must be positive", o.MaxPayload)
	case o.MaxEntries <= 0:
		return fmt.Errorf("sqlite store: Options.MaxEntries %d must be positive", o.MaxEntries)
	}
	return nil
}

// withDefaults gives the driver's own tuning its defaults.
func withDefaults(o Options) Options {
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.ReadConns <= 0 {
		o.ReadConns = 4
	}
	if o.IntegrityCheck == "" {
		o.IntegrityCheck = CheckQuick
	}
	if o.Reserve == 0 {
		o.Reserve = DefaultReserve
	}
	if o.probeEvery == 0 {
		o.probeEvery = defaultProbeEvery
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	return o
}

// createPrivate creates the database file with mode 0600 so that the WAL and shared-memory
// files SQLite derives from it are private too.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

func (s *SQLite) dsn(extra ...string) string {
	q := []string{
		fmt.Sprintf("_pragma=busy_timeout(%d)", s.opts.BusyTimeout.Milliseconds()),
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(" + strings.ToUpper(s.opts.Synchronous) + ")",
		"_txlock=immediate",
	}
	return s.path + "?" + strings.Join(append(q, extra...), "&")
}

func (s *SQLite) open(ctx context.Context, rec storeid.Record) error {
	switch s.opts.Synchronous {
	case SyncFull, SyncNormal:
	default:
		return fmt.Errorf("open store: synchronous %q is not %q or %q", s.opts.Synchronous, SyncFull, SyncNormal)
	}
	var err error
	s.wdb, err = sql.Open("sqlite", s.dsn())
	if err != nil {
		return fmt.Errorf("open store %s: %w", s.path, err)
	}
	s.wdb.SetMaxOpenConns(1)
	s.wconn, err = s.wdb.Conn(ctx)
	if err != nil {
		return s.openError(err)
	}
	var mode string
	if err := s.wconn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return s.openError(err)
	}
	if mode != "wal" {
		return fmt.Errorf("open store %s: journal mode is %q, want wal", s.path, mode)
	}
	if err := s.check(ctx); err != nil {
		return err
	}
	if _, err := deliveriesSchema.open(ctx, s.wconn, rec, s.path, s.log); err != nil {
		return s.openError(err)
	}
	// Every statement in a savepoint (an operation of a group commit, counts.go) copies
	// each page it first changes to a statement journal, so that it can be undone alone.
	// By default that journal is a temporary file, a write(2) per page. The writer keeps
	// it in memory: a few pages per statement. (Set after the migrations, whose index
	// builds sort in temporary storage too, and should spill to disk.)
	if _, err := s.wconn.ExecContext(ctx, "PRAGMA temp_store = MEMORY"); err != nil {
		return s.openError(err)
	}
	var sync int
	if err := s.wconn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return s.openError(err)
	}
	s.info = store.Info{Driver: "sqlite", Path: s.path, Synchronous: syncName(sync), Schema: SchemaVersion}
	// The live count the bound is checked against, from the counts the writer keeps (a
	// few rows), not a count of the live entries' index.
	if err := s.wconn.QueryRowContext(ctx, liveCountSQL).Scan(&s.live); err != nil {
		return s.openError(err)
	}
	// The writer keeps wconn for its own (wtx).
	s.stmts = map[string]*sql.Stmt{}
	s.rdb, err = sql.Open("sqlite", s.dsn("_pragma=query_only(1)"))
	if err != nil {
		return fmt.Errorf("open store %s: %w", s.path, err)
	}
	s.rdb.SetMaxOpenConns(s.opts.ReadConns)
	s.rdb.SetMaxIdleConns(s.opts.ReadConns)
	if err := s.rdb.PingContext(ctx); err != nil {
		return s.openError(err)
	}
	s.getStmt, err = s.rdb.PrepareContext(ctx, "SELECT "+entryCols+", payload FROM deliveries WHERE id = ?")
	if err != nil {
		return s.openError(err)
	}
	return nil
}

func syncName(v int) string {
	switch v {
	case 0:
		return "off"
	case 1:
		return SyncNormal
	case 2:
		return SyncFull
	case 3:
		return "extra"
	}
	return fmt.Sprint(v)
}

// openError names the file and marks corruption.
func (s *SQLite) openError(err error) error {
	if isCorrupt(err) || errors.Is(err, storeid.ErrDamaged) {
		return fmt.Errorf("open store %s: %w: %w", s.path, store.ErrCorrupt, err)
	}
	return fmt.Errorf("open store %s: %w", s.path, err)
}

func (s *SQLite) check(ctx context.Context) error {
	var pragma string
	switch s.opts.IntegrityCheck {
	case CheckOff:
		return nil
	case CheckQuick:
		pragma = "PRAGMA quick_check(5)"
	case CheckFull:
		pragma = "PRAGMA integrity_check(5)"
	default:
		return fmt.Errorf("open store: integrity check %q is not quick, full or off", s.opts.IntegrityCheck)
	}
	msgs, err := integrity(ctx, s.wconn, pragma)
	switch {
	case err != nil:
		return s.openError(err)
	case msgs == nil:
		return nil
	}
	return fmt.Errorf("open store %s: %w: integrity check: %s", s.path, store.ErrCorrupt, strings.Join(msgs, "; "))
}

// integrity runs an integrity check pragma on c: nil when it finds the file sound, else
// what it reports.
func integrity(ctx context.Context, c interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}, pragma string) ([]string, error) {
	rows, err := c.QueryContext(ctx, pragma)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	msgs := []string{} // no row at all is not a sound file either
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(msgs) == 1 && msgs[0] == "ok" {
		return nil, nil
	}
	return msgs, nil
}

// Info describes the store.
func (s *SQLite) Info() store.Info {
	in := s.info
	in.DiskFull = s.res.full.Load()
	in.Opened = true
	return in
}

// Path is the database file.
func (s *SQLite) Path() string { return s.path }

// Stats returns the writer's counters.
func (s *SQLite) Stats() Stats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	return s.stats
}

// Close waits for the operations already accepted, then closes the database.
func (s *SQLite) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.inflight.Wait()
	st := s.Stats()
	s.log.Info("delivery store closed", zap.String("path", s.path), zap.Int64("ops", st.Ops),
		zap.Int64("commits", st.Commits), zap.Int64("failed_commits", st.Failed))
	return s.closeDBs()
}

func (s *SQLite) closeDBs() error {
	var errs []error
	if s.wconn != nil {
		for _, st := range s.stmts {
			errs = append(errs, st.Close())
		}
		errs = append(errs, s.wconn.Close())
	}
	if s.getStmt != nil {
		errs = append(errs, s.getStmt.Close())
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
	}
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	return nil
}

func sqliteCode(err error) (int, bool) {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff, true
	}
	return 0, false
}

func isCorrupt(err error) bool {
	if errors.Is(err, store.ErrCorrupt) {
		return true
	}
	code, ok := sqliteCode(err)
	return ok && (code == sqlite3.SQLITE_CORRUPT || code == sqlite3.SQLITE_NOTADB)
}

// storageError maps a write failure to ErrDiskFull, ErrCorrupt or ErrStorage, keeping the cause.
func storageError(err error) error {
	switch {
	case errors.Is(err, store.ErrDiskFull), errors.Is(err, store.ErrStorage), errors.Is(err, store.ErrCorrupt), errors.Is(err, store.ErrClosed):
		return err
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("%w: %w", store.ErrDiskFull, err)
	case isCorrupt(err):
		return fmt.Errorf("%w: %w", store.ErrCorrupt, err)
	}
	if code, ok := sqliteCode(err); ok && code == sqlite3.SQLITE_FULL {
		return fmt.Errorf("%w: %w", store.ErrDiskFull, err)
	}
	return fmt.Errorf("%w: %w", store.ErrStorage, err)
}

// logical reports an operation error that concerns only that operation (its savepoint is
// rolled back; the rest of the batch commits).
func logical(err error) bool {
	for _, target := range []error{store.ErrNotFound, store.ErrNotClaimable, store.ErrNotOwner, store.ErrWrongState, store.ErrBusy,
		store.ErrQueueFull, store.ErrPayloadTooLarge, store.ErrKeyMismatch, store.ErrInvalid} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

func nullMs(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

func fromMs(v sql.NullInt64) time.Time {
	if !v.Valid || v.Int64 == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64).UTC()
}
