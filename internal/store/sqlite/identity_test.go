package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storeid"
)

// crashImage returns the path of a copy of a store holding n pending entries, taken while
// it was open: its database, its WAL (the newest commits are only there) and its identity
// record, as a crash leaves them.
func crashImage(t *testing.T, n int) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "schedd.db")
	s := openTest(t, src, Options{})
	for i := range n {
		mustEnqueue(t, s, string(rune('a'+i)))
	}
	path := filepath.Join(t.TempDir(), "schedd.db")
	for _, suffix := range []string{"", "-wal", storeid.Suffix} {
		b, err := os.ReadFile(src + suffix)
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// refused checks that opening path fails as a damaged store naming the file, eagerly and
// lazily, and leaves the files as they were.
func refused(t *testing.T, path, want string) {
	t.Helper()
	before := sizes(path)
	_, err := Open(context.Background(), path, settings(Options{}))
	if !errors.Is(err, store.ErrCorrupt) || !errors.Is(err, storeid.ErrDamaged) || !strings.Contains(err.Error(), path) ||
		!strings.Contains(err.Error(), want) {
		t.Fatalf("open = %v, want a damaged store naming %s and %q", err, path, want)
	}
	if _, err := OpenLazy(context.Background(), path, settings(Options{})); !errors.Is(err, store.ErrCorrupt) || !errors.Is(err, storeid.ErrDamaged) {
		t.Fatalf("lazy open = %v, want a damaged store", err)
	}
	if after := sizes(path); after != before {
		t.Fatalf("a refused open changed the files: %s, was %s", after, before)
	}
}

// sizes describes the store's files: each one's size, or "-" when it is missing.
func sizes(path string) string {
	var out []string
	for _, suffix := range []string{"", "-wal", storeid.Suffix} {
		if fi, err := os.Stat(path + suffix); err != nil {
			out = append(out, "-")
		} else {
			out = append(out, fmt.Sprint(fi.Size()))
		}
	}
	return strings.Join(out, " ")
}

// moveAside moves the store's files aside, as the refusal says to do to start empty.
func moveAside(t *testing.T, path string) {
	t.Helper()
	aside := t.TempDir()
	for _, suffix := range []string{"", "-wal", "-shm", storeid.Suffix} {
		if err := os.Rename(path+suffix, filepath.Join(aside, filepath.Base(path)+suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
}

// R-INPUT-01: a store whose database was emptied, deleted or replaced is never opened as
// a new, empty one: the open fails naming the file and changes nothing. Once the files are
// moved aside, as the error says, the store starts empty.
func TestDamagedStoreRefused_RINPUT01(t *testing.T) {
	truncate := func(t *testing.T, path string) {
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
	}
	remove := func(t *testing.T, path string) {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	other := func(t *testing.T) string {
		p := filepath.Join(t.TempDir(), "other.db")
		s := openTest(t, p, Options{})
		mustEnqueue(t, s, "theirs")
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
		want   string
	}{
		{"empty database with its WAL", func(t *testing.T, p string) { truncate(t, p) }, "is empty (0 bytes)"},
		{"empty database without WAL", func(t *testing.T, p string) { truncate(t, p); remove(t, p+"-wal") }, "is empty (0 bytes)"},
		{"database deleted, WAL left", func(t *testing.T, p string) { remove(t, p) }, "is missing"},
		{"database deleted with its WAL", func(t *testing.T, p string) { remove(t, p); remove(t, p+"-wal") }, "is missing"},
		{"another store's database", func(t *testing.T, p string) {
			b, err := os.ReadFile(other(t))
			if err != nil {
				t.Fatal(err)
			}
			remove(t, p+"-wal")
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "another store"},
		{"an empty database in its place", func(t *testing.T, p string) {
			remove(t, p)
			remove(t, p+"-wal")
			db, err := sql.Open("sqlite", p+"?_pragma=journal_mode(WAL)")
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Ping(); err != nil {
				t.Fatal(err)
			}
			db.Close()
		}, "the database is empty"},
		// A store from before identity records: only its WAL shows that it existed.
		{"no identity record: empty database with its WAL", func(t *testing.T, p string) {
			truncate(t, p)
			remove(t, p+storeid.Suffix)
		}, "write-ahead log"},
		{"no identity record: database deleted, WAL left", func(t *testing.T, p string) {
			remove(t, p)
			remove(t, p+storeid.Suffix)
		}, "write-ahead log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := crashImage(t, 3)
			tc.damage(t, path)
			refused(t, path, tc.want)
			moveAside(t, path)
			s := openTest(t, path, Options{})
			if c, err := s.Counts(context.Background()); err != nil || c != (store.Counts{}) {
				t.Fatalf("after the move aside: %+v, %v; want an empty store", c, err)
			}
			if _, err := os.Stat(path + storeid.Suffix); err != nil {
				t.Fatalf("the new store has no identity record: %v", err)
			}
		})
	}
}

// storeID is the identity the closed database at path holds, 0 for none.
func storeID(t *testing.T, path string) int64 {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id int64
	if err := db.QueryRow("SELECT value FROM meta WHERE key = 'store_id'").Scan(&id); err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	return id
}

func recordID(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path + storeid.Suffix)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// R-INPUT-01: what is not damage opens. A new store gets an identity in its database and
// in its record; a crash between the two, a store from before identities, and a backup of
// this store made before identities keep working: the missing half is written again.
func TestStoreIdentityAdopted_RINPUT01(t *testing.T) {
	ctx := context.Background()
	reopen := func(t *testing.T, path string, entries int) {
		t.Helper()
		s, err := Open(ctx, path, settings(Options{}))
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer s.Close()
		if c, err := s.Counts(ctx); err != nil || c.Pending != entries {
			t.Fatalf("counts %+v, %v; want %d pending", c, err, entries)
		}
	}
	closed := func(t *testing.T) (string, int64) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "schedd.db")
		s, err := Open(ctx, path, settings(Options{}))
		if err != nil {
			t.Fatal(err)
		}
		mustEnqueue(t, s, "kept")
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		id := storeID(t, path)
		if id == 0 || recordID(t, path) != fmtID(id) {
			t.Fatalf("new store: database identity %x, record %q", id, recordID(t, path))
		}
		return path, id
	}
	t.Run("record lost or never written", func(t *testing.T) {
		path, id := closed(t)
		os.Remove(path + storeid.Suffix)
		reopen(t, path, 1)
		if recordID(t, path) != fmtID(id) || storeID(t, path) != id {
			t.Fatalf("identity %x, record %q; want both %x", storeID(t, path), recordID(t, path), id)
		}
	})
	t.Run("store from before identities", func(t *testing.T) {
		path, _ := closed(t)
		os.Remove(path + storeid.Suffix)
		dropID(t, path)
		reopen(t, path, 1)
		if id := storeID(t, path); id == 0 || recordID(t, path) != fmtID(id) {
			t.Fatalf("identity %x, record %q", id, recordID(t, path))
		}
	})
	t.Run("backup from before identities", func(t *testing.T) {
		path, id := closed(t)
		dropID(t, path)
		reopen(t, path, 1)
		if storeID(t, path) != id || recordID(t, path) != fmtID(id) {
			t.Fatalf("identity %x, record %q; want the record's %x", storeID(t, path), recordID(t, path), id)
		}
	})
	t.Run("crash before the first page", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "schedd.db")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		reopen(t, path, 0)
	})
}

func fmtID(id int64) string { return fmt.Sprintf("%016x", id) }

// dropID removes the identity from the closed database at path, as a store written before
// identities has none.
func dropID(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("DELETE FROM meta WHERE key = 'store_id'"); err != nil {
		t.Fatal(err)
	}
}
