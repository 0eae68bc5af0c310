package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
)

// The writer talks to its one connection through the driver's own interfaces, not through
// database/sql: a database/sql transaction starts a goroutine to watch its context, and
// so does every query in it, and each statement goes through the pool's bookkeeping. The
// writer needs none of that: it owns the connection (sql.Conn.Raw hands it over for each
// batch), runs every statement with a context that never ends, and keeps each statement
// prepared for the life of the store.

// rawConn is what the writer needs of the driver's connection.
type rawConn interface {
	driver.ConnPrepareContext
}

// wtx runs the writer's statements in its transaction on the raw connection.
type wtx struct {
	c rawConn
	s *SQLite
}

// stmt returns the prepared statement for q, preparing it on first use.
func (w wtx) stmt(ctx context.Context, q string) (driver.Stmt, error) {
	if st, ok := w.s.stmts[q]; ok {
		return st, nil
	}
	st, err := w.c.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if len(w.s.stmts) < maxStmts {
		w.s.stmts[q] = st
	} else {
		w.s.spare = append(w.s.spare, st) // closed after the batch
	}
	return st, nil
}

// maxStmts bounds the prepared statements (the writer's queries are a fixed set).
const maxStmts = 64

// args turns the arguments of a statement into the driver's values, in w.s.argBuf.
func (w wtx) args(args []any) ([]driver.NamedValue, error) {
	nv := w.s.argBuf[:0]
	for i, a := range args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	w.s.argBuf = nv
	return nv, nil
}

func (w wtx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	st, err := w.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	nv, err := w.args(args)
	if err != nil {
		return nil, err
	}
	return st.(driver.StmtExecContext).ExecContext(ctx, nv)
}

func (w wtx) QueryContext(ctx context.Context, q string, args ...any) (*wrows, error) {
	st, err := w.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	nv, err := w.args(args)
	if err != nil {
		return nil, err
	}
	r, err := st.(driver.StmtQueryContext).QueryContext(ctx, nv)
	if err != nil {
		return nil, err
	}
	return &wrows{r: r, vals: make([]driver.Value, len(r.Columns()))}, nil
}

func (w wtx) QueryRowContext(ctx context.Context, q string, args ...any) *wrow {
	r, err := w.QueryContext(ctx, q, args...)
	return &wrow{rows: r, err: err}
}

func (w wtx) Exec(q string, args ...any) (sql.Result, error) {
	return w.ExecContext(context.Background(), q, args...)
}

func (w wtx) Query(q string, args ...any) (*wrows, error) {
	return w.QueryContext(context.Background(), q, args...)
}

func (w wtx) QueryRow(q string, args ...any) *wrow {
	return w.QueryRowContext(context.Background(), q, args...)
}

// wrows reads the rows of a writer's query, as sql.Rows does.
type wrows struct {
	r      driver.Rows
	vals   []driver.Value
	err    error
	closed bool
}

func (r *wrows) Next() bool {
	if r.closed {
		return false
	}
	if err := r.r.Next(r.vals); err != nil {
		if !errors.Is(err, io.EOF) {
			r.err = err
		}
		r.Close()
		return false
	}
	return true
}

// Scan copies the current row into dest (pointers to any, int64, int or []byte).
func (r *wrows) Scan(dest ...any) error {
	if len(dest) != len(r.vals) {
		return fmt.Errorf("scan: %d destinations for %d columns", len(dest), len(r.vals))
	}
	for i, d := range dest {
		if err := assign(d, r.vals[i]); err != nil {
			return fmt.Errorf("scan column %d: %w", i, err)
		}
	}
	return nil
}

func (r *wrows) Err() error { return r.err }

func (r *wrows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	return r.r.Close()
}

// wrow is the first row of a query, as sql.Row.
type wrow struct {
	rows *wrows
	err  error
}

// Scan reads the first row into dest; sql.ErrNoRows if there is none.
func (r *wrow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	return r.rows.Close()
}

// assign stores a driver value in dest, copying bytes (the driver may reuse them).
func assign(dest any, v driver.Value) error {
	switch d := dest.(type) {
	case *any:
		if b, ok := v.([]byte); ok {
			v = bytes.Clone(b)
		}
		*d = v
	case *[]byte:
		switch x := v.(type) {
		case []byte:
			*d = bytes.Clone(x)
		case string:
			*d = []byte(x)
		case nil:
			*d = nil
		default:
			return fmt.Errorf("%T into []byte", v)
		}
	case *int64:
		x, ok := v.(int64)
		if !ok {
			return fmt.Errorf("%T into int64", v)
		}
		*d = x
	case *int:
		x, ok := v.(int64)
		if !ok {
			return fmt.Errorf("%T into int", v)
		}
		*d = int(x)
	default:
		return fmt.Errorf("unsupported destination %T", dest)
	}
	return nil
}
