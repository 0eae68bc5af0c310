// Package postgres is the PostgreSQL implementation of store.Store, for a fleet of schedd
// hosts sharing one database.
//
// Claims. Every host allocates its boot epochs from one table (schedd_epochs) that records
// the host id of each epoch and how long it is alive (alive_until, renewed by a heartbeat
// every HostLease/3). A sending entry is claimable by epoch E when its own lease expired, or
// when its owner epoch is not E and is not alive on another host: an epoch of the same host
// is a dead process (one schedd per host and state directory), and an epoch whose host
// stopped renewing is a dead host. So a host that dies loses its claims one HostLease later,
// and a restarted host takes its own back at once, as with SQLite.
//
// A claim is one conditional UPDATE of the entry's row, so two claimers never both hold
// it. Times are the hosts' wall clocks in milliseconds, as in the
// SQLite store: the fleet's clocks must agree to well under a lease (NTP does).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/group"
)

const (
	// Channel is the LISTEN/NOTIFY channel an enqueue notifies on commit, with the host id.
	Channel = "schedd_deliveries"
)

// Options configure the store. HostID, HostLease, MaxConns, MaxPayload and MaxEntries
// are required: the config file gives them their defaults. The other zero values take the
// defaults named.
type Options struct {
	// HostID names this host in the claims it holds; required (see DefaultHostID).
	HostID string
	// HostLease is how long this host's claims stay its own after its last heartbeat.
	HostLease time.Duration
	// MaxConns bounds the connection pool.
	MaxConns int
	// MaxPayload bounds one payload in bytes.
	MaxPayload int
	// MaxEntries bounds pending+sending entries. Two
	// hosts enqueueing at the very same moment may pass it by a few entries; and a fleet
	// that enqueues more than a tenth of it within a second may pass it by that much (see
	// liveCount).
	MaxEntries int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Log receives store events (default zap.NewNop()).
	Log *zap.Logger
	// Wait, when the database cannot be reached at Open, returns the store anyway and
	// keeps connecting in the background (every RetryEvery): until it is reached and
	// migrated, Opened is not closed and every operation fails with ErrUnavailable. Other
	// failures (a bad password, a newer schema) still fail Open.
	Wait bool
	// RetryEvery is the pause between connection attempts with Wait (default 1 s).
	RetryEvery time.Duration
}

// Store is the PostgreSQL store.Store.
type Store struct {
	pool   *pgxpool.Pool
	opts   Options
	schema atomic.Int64
	opened chan struct{} // closed once the database was reached and migrated
	closed atomic.Bool

	wake chan struct{}
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu        sync.Mutex
	epoch     int64 // the newest epoch this store allocated: the one its heartbeat renews
	connected bool  // the last contact with the server succeeded

	liveMu sync.Mutex
	live   liveCount     // guarded by liveMu
	exact  chan struct{} // held by the enqueue that counts (enqueueExact)

	// inserts groups the enqueues of concurrent callers into shared statements, ops their
	// claims and completions, reads their Gets (claim.go).
	inserts *group.Group[*enqueueJob, struct{}]
	ops     *group.Group[opReq, opRes]
	reads   *group.Group[opReq, opRes]
	notify  notifyGate
}

var (
	_ store.Store = (*Store)(nil)
	_ store.Waker = (*Store)(nil)
)

// DefaultHostID is the host id used when none is configured: the host name and the state
// directory, which together name one schedd (the daemon holds a lock on its state directory).
func DefaultHostID(stateDir string) string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "localhost"
	}
	return h + ":" + stateDir
}

// Open connects to dsn, migrates the schema and starts the heartbeat and the listener.
// Errors never contain the DSN (it holds a password).
func Open(ctx context.Context, dsn string, o Options) (*Store, error) {
	if o.HostID == "" {
		return nil, errors.New("postgres store: empty host id")
	}
	switch {
	case o.HostLease <= 0:
		return nil, fmt.Errorf("postgres store: Options.HostLease %v must be positive", o.HostLease)
	case o.MaxConns <= 0:
		return nil, fmt.Errorf("postgres store: Options.MaxConns %d must be positive", o.MaxConns)
	case o.MaxPayload <= 0:
		return nil, fmt.Errorf("postgres store: Options.MaxPayload %d must be positive", o.MaxPayload)
	case o.MaxEntries <= 0:
		return nil, fmt.Errorf("postgres store: Options.MaxEntries %d must be positive", o.MaxEntries)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors quote the DSN: say only that it is malformed.
		return nil, errors.New("postgres store: the dsn cannot be parsed (check its syntax)")
	}
	cfg.MaxConns = int32(o.MaxConns)
	// A transaction left open by a host cut off mid-way would keep its row locks until the
	// server noticed the dead connection (hours, with default keepalives): the server ends
	// it after one lease instead, so that other hosts can take over its claims and the
	// cron lead.
	cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(o.HostLease.Milliseconds(), 10)
	cfg.AfterConnect = durableCommits(o.Log)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", redact(err))
	}
	bg, stop := context.WithCancel(context.Background())
	s := &Store{pool: pool, opts: o, opened: make(chan struct{}), wake: make(chan struct{}, 1), stop: stop,
		exact: make(chan struct{}, 1)}
	// One statement (or batch) of each group at a time: the callers that come meanwhile
	// go together into the next, which on a machine whose CPU is the bound did better (in
	// bench/deliveries/run-postgres.sh) than two or more at once, each with fewer entries.
	s.inserts = &group.Group[*enqueueJob, struct{}]{MaxRunning: 1, MaxItems: 32, Run: s.insertJobs}
	s.ops = &group.Group[opReq, opRes]{MaxRunning: 1, MaxItems: 128, Run: s.opsGroup}
	s.reads = &group.Group[opReq, opRes]{MaxRunning: 1, MaxItems: 128, Run: s.opsGroup}
	err = s.open(ctx, bg)
	if err == nil {
		return s, nil
	}
	var ce *pgconn.ConnectError
	if !o.Wait || !errors.As(err, &ce) {
		stop()
		pool.Close()
		return nil, fmt.Errorf("postgres store: %w", redact(err))
	}
	o.Log.Warn("postgres store: database unreachable; deliveries wait for it, enqueues are refused meanwhile",
		zap.Error(redact(err)))
	s.wg.Go(func() {
		retry := o.RetryEvery
		if retry <= 0 {
			retry = time.Second
		}
		for {
			select {
			case <-bg.Done():
				return
			case <-time.After(retry):
			}
			if err := s.open(bg, bg); err == nil {
				o.Log.Info("postgres store: database reached")
				return
			}
		}
	})
	return s, nil
}

// durableCommits returns the setup of a new connection: a server (or database, or role)
// whose synchronous_commit is off acknowledges a commit before its WAL is written, and a
// crash of the server then loses enqueues that schedd acknowledged. Such a connection
// commits with synchronous_commit = local instead, said once in the log; any other setting
// (on, remote_write, remote_apply) is kept.
func durableCommits(log *zap.Logger) func(context.Context, *pgx.Conn) error {
	var said atomic.Bool
	return func(ctx context.Context, c *pgx.Conn) error {
		var mode string
		if err := c.QueryRow(ctx, "SELECT current_setting('synchronous_commit')").Scan(&mode); err != nil {
			return err
		}
		if mode != "off" {
			return nil
		}
		if _, err := c.Exec(ctx, "SET synchronous_commit = local"); err != nil {
			return err
		}
		if !said.Swap(true) {
			log.Warn("postgres store: the server's synchronous_commit is off; schedd's connections commit with " +
				"synchronous_commit = local, so that an acknowledged enqueue survives a crash of the server")
		}
		return nil
	}
}

// open migrates the schema, then starts the heartbeat and the listener and closes opened.
func (s *Store) open(ctx, bg context.Context) error {
	v, err := Migrate(ctx, s.pool, deliveries)
	s.setConnected(err)
	if err != nil {
		return err
	}
	s.schema.Store(int64(v))
	s.wg.Add(2)
	go s.heartbeat(bg)
	go s.listen(bg)
	close(s.opened)
	return nil
}

// ready fails with ErrUnavailable until the database was reached at least once.
func (s *Store) ready() error {
	select {
	case <-s.opened:
		return nil
	default:
		return fmt.Errorf("%w (%w): the database has not been reached since schedd started", store.ErrUnavailable, store.ErrStorage)
	}
}

// Wake is signalled (at most one pending signal) when an entry was enqueued or retried by
// another host, so an idle host looks for work before its next poll. Polling stays the
// fallback: a notification is lost while the listening connection is down.
func (s *Store) Wake() <-chan struct{} { return s.wake }

// RescanEvery is how often the delivery runtime looks for work other hosts left: half the
// host lease, so a dead host's claims are taken over within about 1.5 leases of its last
// heartbeat.
func (s *Store) RescanEvery() time.Duration { return s.opts.HostLease / 2 }

// HostID is the host id this store claims under.
func (s *Store) HostID() string { return s.opts.HostID }

// HostLease is how long this host's claims outlive its last heartbeat.
func (s *Store) HostLease() time.Duration { return s.opts.HostLease }

// Pool is the store's connection pool, for the other components that keep their state in
// the same database (cron on a fleet). They must not close it.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	err := s.pool.Ping(ctx)
	s.setConnected(err)
	if err != nil {
		return s.fail(err)
	}
	return nil
}

// Opened is closed once the database was reached and migrated: when Open returns, unless
// Options.Wait let it return before.
func (s *Store) Opened() <-chan struct{} { return s.opened }

// Path is empty: the DSN is a secret, and names no file.
func (s *Store) Path() string { return "" }

// Info describes the store; Connected is the outcome of the last heartbeat or operation.
func (s *Store) Info() store.Info {
	s.mu.Lock()
	connected := s.connected
	s.mu.Unlock()
	return store.Info{Driver: "postgres", Synchronous: "server", Schema: int(s.schema.Load()), Opened: s.ready() == nil,
		HostID: s.opts.HostID, Connected: &connected}
}

// setConnected records the outcome of a contact with the server: err, or nil.
func (s *Store) setConnected(err error) {
	ok := err == nil || !unreachable(err)
	s.mu.Lock()
	s.connected = ok
	s.mu.Unlock()
}

// unreachable reports whether err is a failure to reach the server, or the server saying
// it cannot serve now (SQLSTATE classes 08 connection, 53 resources, 57 shutting down),
// rather than its answer to a statement.
func unreachable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return true
	}
	switch pgErr.Code[:min(2, len(pgErr.Code))] {
	case "08", "53", "57":
		return true
	}
	return false
}

// Close stops the heartbeat and the listener and closes the pool.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.stop()
	s.wg.Wait()
	s.closeNotify()
	s.pool.Close()
	return nil
}

func (s *Store) now() int64 { return s.opts.Now().UnixMilli() }

// heartbeat renews the alive_until of this store's newest epoch.
func (s *Store) heartbeat(ctx context.Context) {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.HostLease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		ep := s.epoch
		s.mu.Unlock()
		var err error
		if ep == 0 {
			err = s.pool.Ping(ctx)
		} else {
			_, err = s.pool.Exec(ctx, `UPDATE schedd_epochs SET alive_until = $1 WHERE epoch = $2`,
				s.now()+s.opts.HostLease.Milliseconds(), ep)
		}
		if ctx.Err() != nil {
			return
		}
		s.setConnected(err)
		if err != nil {
			s.opts.Log.Warn("postgres store: heartbeat failed", zap.Error(redact(err)))
		}
	}
}

// listen holds one connection with LISTEN and turns notifications into Wake signals,
// reconnecting after a pause when the connection drops.
func (s *Store) listen(ctx context.Context) {
	defer s.wg.Done()
	for logged := false; ctx.Err() == nil; {
		err := s.listenOnce(ctx, &logged)
		if ctx.Err() != nil {
			return
		}
		if !logged { // once per outage, not every second
			s.opts.Log.Warn("postgres store: listener down, polling only until it is back", zap.Error(redact(err)))
			logged = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// listenOnce listens until the connection fails; it clears *logged once listening.
func (s *Store) listenOnce(ctx context.Context, logged *bool) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection carries a LISTEN: it must not go back to the pool.
	conn := c.Hijack()
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		return err
	}
	*logged = false
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Payload == s.opts.HostID {
			continue // this host armed what it wrote already
		}
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// NewEpoch allocates an epoch for this host, alive for one HostLease and renewed by the
// heartbeat from then on.
func (s *Store) NewEpoch(ctx context.Context) (int64, error) {
	if err := s.ready(); err != nil {
		return 0, fmt.Errorf("new epoch: %w", err)
	}
	var ep int64
	now := s.now()
	err := s.pool.QueryRow(ctx, `INSERT INTO schedd_epochs (host_id, started_at, alive_until)
		VALUES ($1, $2, $3) RETURNING epoch`, s.opts.HostID, now, now+s.opts.HostLease.Milliseconds()).Scan(&ep)
	if err != nil {
		return 0, fmt.Errorf("new epoch: %w", s.fail(err))
	}
	s.mu.Lock()
	s.epoch = ep
	s.mu.Unlock()
	return ep, nil
}

// fail maps a driver error to the queue's errors: a context error stays itself, a closed
// store is ErrClosed, a server that cannot be reached ErrUnavailable (and ErrStorage),
// anything else ErrStorage (nothing was committed).
func (s *Store) fail(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	s.setConnected(err)
	if unreachable(err) {
		return fmt.Errorf("%w (%w): %v", store.ErrUnavailable, store.ErrStorage, redact(err))
	}
	return fmt.Errorf("%w: %v", store.ErrStorage, redact(err))
}

// redact drops what a connection error may say about the DSN: pgx's connect errors name
// the host, port and user, never the password, but keep only the cause to be safe.
func redact(err error) error {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return fmt.Errorf("cannot connect to the database: %w", errors.Unwrap(ce))
	}
	return err
}

// tx runs fn in one transaction and commits it. A connection that breaks once the commit
// was sent leaves its outcome unknown: ErrOutcomeUnknown.
func (s *Store) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	if err := s.usable(); err != nil {
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.fail(err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(ctx) // on a broken connection too: it releases the connection
		if logical(err) {
			return err
		}
		return s.fail(err)
	}
	// pgx may report a connection that broke while it awaited the reply as "conn closed",
	// an error it calls safe to retry: only a connection closed before the commit is sure
	// not to have sent it.
	unsent := tx.Conn().PgConn().IsClosed()
	err = tx.Commit(ctx)
	switch {
	case err == nil:
		s.setConnected(nil)
		return nil
	case unsent:
		return s.fail(err)
	}
	return s.failAfterSend(err, "the commit")
}

// failSent is fail for a statement (or batch) that commits on its own: once it was sent, a
// connection that broke, or a wait given up, leaves its outcome unknown (ErrOutcomeUnknown),
// as for a commit in tx. pgx says which errors come before anything was sent (a failed
// connect among them), and a server that ends the session (57P01 and its kin: a shutdown)
// says it ran nothing. A pooled connection that the server or the network closed
// unannounced takes the write and then fails: the client cannot tell that from a lost
// reply, so the outcome is unknown there too (a checked connection would cost a wait or a
// round trip on every statement: measured, it tripled the enqueue's latency).
func (s *Store) failSent(err error) error {
	var pgErr *pgconn.PgError
	var connectErr *pgconn.ConnectError
	if pgconn.SafeToRetry(err) || errors.As(err, &connectErr) || errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "57P") {
		return s.fail(err)
	}
	return s.failAfterSend(err, "the statement")
}

// failAfterSend is the error of what (a commit, a statement) that failed once it was sent:
// a wait given up or a connection that broke leaves its outcome unknown; any other error is
// fail's.
func (s *Store) failAfterSend(err error, what string) error {
	switch {
	case s.closed.Load():
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %s was sent, its reply not awaited: %w", store.ErrOutcomeUnknown, what, err)
	case unreachable(err):
		s.setConnected(err)
		return fmt.Errorf("%w (%w, %w): the connection broke during %s: %v",
			store.ErrOutcomeUnknown, store.ErrUnavailable, store.ErrStorage, what, redact(err))
	}
	return s.fail(err)
}

// logical reports whether err is the queue's answer about an entry rather than a storage
// failure.
func logical(err error) bool {
	for _, e := range []error{store.ErrNotFound, store.ErrNotClaimable, store.ErrNotOwner, store.ErrWrongState,
		store.ErrBusy, store.ErrPayloadTooLarge, store.ErrQueueFull, store.ErrKeyMismatch, store.ErrInvalid} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
