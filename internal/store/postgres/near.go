package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// firstDueSQL is the earliest due time of the pending entries due at or after $1: the
// first key of the index on (next_attempt_at, id) from $1 on.
const firstDueSQL = `SELECT next_attempt_at FROM schedd_deliveries
	WHERE state = 'pending' AND next_attempt_at >= $1 ORDER BY next_attempt_at LIMIT 1`

// FirstDue returns the earliest due time of the pending entries due at or after from.
func (s *Store) FirstDue(ctx context.Context, from time.Time) (time.Time, bool, error) {
	if err := s.ready(); err != nil {
		return time.Time{}, false, err
	}
	var ms int64
	err := s.pool.QueryRow(ctx, firstDueSQL, from.UnixMilli()).Scan(&ms)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, fmt.Errorf("first due: %w", s.fail(err))
	}
	return time.UnixMilli(ms), true, nil
}
