package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/storeid"
)

// identity reads the identity the database holds, before the migrations, and settles it
// against the identity record rec: it returns the identity the store keeps and the one the
// database holds (0: none). A database that is not rec's store is an error wrapping
// ErrCorrupt.
func (s *SQLite) identity(ctx context.Context, rec storeid.Record) (id, held int64, err error) {
	var v int
	if err := s.wconn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, 0, s.openError(err)
	}
	if v >= 1 { // meta exists from the first schema step
		err := s.wconn.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'store_id'").Scan(&held)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return 0, 0, s.openError(err)
		}
	}
	id, err = rec.Settle(held, v > 0)
	if err != nil {
		return 0, 0, s.openError(err)
	}
	return id, held, nil
}

// keepIdentity commits id into the database if it does not hold it yet, then writes the
// identity record. A record that cannot be written is logged: the store works, and the
// next open writes it again.
func (s *SQLite) keepIdentity(ctx context.Context, rec storeid.Record, id, held int64) error {
	if id != held {
		if _, err := s.wconn.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES ('store_id', ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, id); err != nil {
			return s.openError(err)
		}
	}
	if err := rec.Keep(id); err != nil {
		s.log.Warn("delivery store: its identity record is not written; a lost database would not be noticed at the next start",
			zap.String("path", s.path), zap.Error(err))
	}
	return nil
}
