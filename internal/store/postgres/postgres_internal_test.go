package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// The errors that mean "try again later" (503) are the ones that never reached the server
// and the server's own "not now"; a statement's error is a storage error.
func TestUnreachable(t *testing.T) {
	for err, want := range map[error]bool{
		io.ErrUnexpectedEOF: true,
		fmt.Errorf("x: %w", &pgconn.PgError{Code: "57P01"}): true, // admin shutdown
		&pgconn.PgError{Code: "53300"}:                      true, // too many connections
		&pgconn.PgError{Code: "08006"}:                      true,
		&pgconn.PgError{Code: "23505"}:                      false, // unique violation
		&pgconn.PgError{Code: "53100"}:                      true,  // disk full
		context.DeadlineExceeded:                            false,
		errors.New("conn closed"):                           true,
	} {
		if got := unreachable(err); got != want {
			t.Errorf("unreachable(%v) = %v, want %v", err, got, want)
		}
	}
}

// The default host id tells apart two schedd on one host (their state dirs differ).
func TestDefaultHostID(t *testing.T) {
	a, b := DefaultHostID("/var/lib/schedd"), DefaultHostID("/srv/schedd-2")
	if a == b || !strings.HasSuffix(a, ":/var/lib/schedd") || strings.HasPrefix(a, ":") {
		t.Fatalf("host ids %q and %q", a, b)
	}
}
