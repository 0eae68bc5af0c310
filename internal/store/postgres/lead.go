package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/schedd/schedd/internal/store"
)

// Cron is cron's part of the fleet's database, on the delivery store's pool.
func (s *Store) Cron() store.FleetCron { return FleetCronOn(s.pool) }

// FleetCronOn is cron's part of the fleet's database on pool.
func FleetCronOn(pool *pgxpool.Pool) store.FleetCron { return fleetCron{pool: pool} }

// fleetCron is store.FleetCron on the tables of cronSchema.
type fleetCron struct{ pool *pgxpool.Pool }

var _ store.FleetCron = fleetCron{}

// Migrate brings cron's tables to cronSchema's last step.
func (c fleetCron) Migrate(ctx context.Context) error {
	_, err := Migrate(ctx, c.pool, cronSchema)
	return err
}

// Tasks is the task store of host's term.
func (c fleetCron) Tasks(host string, term int64, timeout time.Duration) store.TaskStore {
	return newPGTasks(c.pool, host, term, timeout)
}

// AcquireLead takes the lease when it ran out (or is host's own from before a restart).
func (c fleetCron) AcquireLead(ctx context.Context, host string, lease time.Duration) (int64, bool, error) {
	var term int64
	err := c.pool.QueryRow(ctx, `INSERT INTO schedd_cron_leader (id, host, term, expires_at)
		VALUES (1, $1, 1, now() + $2 * interval '1 millisecond')
		ON CONFLICT (id) DO UPDATE SET host = excluded.host, term = schedd_cron_leader.term + 1,
			expires_at = excluded.expires_at
		WHERE schedd_cron_leader.expires_at <= now() OR schedd_cron_leader.host = excluded.host
		RETURNING term`, host, lease.Milliseconds()).Scan(&term)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return term, err == nil, err
}

// Leader reads the leader row.
func (c fleetCron) Leader(ctx context.Context) (store.Lead, bool, error) {
	var l store.Lead
	err := c.pool.QueryRow(ctx, `SELECT host, term, expires_at FROM schedd_cron_leader WHERE id = 1`).
		Scan(&l.Host, &l.Term, &l.Until)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, false, nil
	}
	return l, err == nil, err
}

// RenewLead extends the lease of term.
func (c fleetCron) RenewLead(ctx context.Context, host string, term int64, lease time.Duration) (bool, time.Time, error) {
	var until time.Time
	err := c.pool.QueryRow(ctx, `UPDATE schedd_cron_leader SET expires_at = now() + $3 * interval '1 millisecond'
		WHERE id = 1 AND host = $1 AND term = $2 RETURNING expires_at`, host, term, lease.Milliseconds()).Scan(&until)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, until, nil
	}
	return err == nil, until, err
}

// ReleaseLead ends term at once.
func (c fleetCron) ReleaseLead(ctx context.Context, host string, term int64) error {
	_, err := c.pool.Exec(ctx, `UPDATE schedd_cron_leader SET expires_at = now() - interval '1 millisecond'
		WHERE id = 1 AND host = $1 AND term = $2`, host, term)
	return err
}
