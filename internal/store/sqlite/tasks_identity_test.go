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
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/storeid"
)

// cronImage returns the path of a copy of a task store holding one job row and one task,
// taken while it was open: its database, its WAL and its identity record, as a crash
// leaves them.
func cronImage(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), TasksFile)
	st, err := OpenTasks(context.Background(), src, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	tk := &store.Task{ID: 1, Job: "j", Kind: api.KindScheduled, RunKey: "j@" + at.Format(time.RFC3339Nano), Attempt: 1, Slot: at, Due: at,
		State: api.TaskSucceeded, Queued: at}
	if _, _, err := st.Commit(context.Background(), &store.TaskBatch{Jobs: []*store.CronJob{{Name: "j", Schedule: "s", LastSlot: at}}, Tasks: []*store.Task{tk}}, at); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), TasksFile)
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

// R-INPUT-01: a task store whose database was emptied, deleted or replaced is never opened
// as a new, empty one (which would forget the slots already run and the history): the open
// fails naming the file and what to do, and changes nothing. Once the files are moved aside,
// as the error says, the store starts empty.
func TestDamagedCronStoreRefused_RINPUT01(t *testing.T) {
	remove := func(t *testing.T, path string) {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	truncate := func(t *testing.T, path string) {
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
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
			other := filepath.Join(t.TempDir(), TasksFile)
			st, err := OpenTasks(context.Background(), other, nil)
			if err != nil {
				t.Fatal(err)
			}
			st.Close()
			b, err := os.ReadFile(other)
			if err != nil {
				t.Fatal(err)
			}
			remove(t, p+"-wal")
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "another store"},
		{"no identity record: empty database with its WAL", func(t *testing.T, p string) {
			truncate(t, p)
			remove(t, p+storeid.Suffix)
		}, "write-ahead log"},
		{"no identity record: database deleted, WAL left", func(t *testing.T, p string) {
			remove(t, p)
			remove(t, p+storeid.Suffix)
		}, "write-ahead log"},
		{"not a database", func(t *testing.T, p string) {
			remove(t, p+"-wal")
			if err := os.WriteFile(p, []byte(strings.Repeat("not sqlite ", 600)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := cronImage(t)
			tc.damage(t, path)
			before := cronSizes(path)
			_, err := OpenTasks(context.Background(), path, nil)
			if !errors.Is(err, storeid.ErrDamaged) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), "move it aside with its -wal, -shm and -id files") {
				t.Fatalf("open = %v, want a damaged store naming %s, %q and what to do", err, path, tc.want)
			}
			if after := cronSizes(path); after != before {
				t.Fatalf("a refused open changed the files: %s, was %s", after, before)
			}
			aside := t.TempDir()
			for _, suffix := range []string{"", "-wal", "-shm", storeid.Suffix} {
				if err := os.Rename(path+suffix, filepath.Join(aside, TasksFile+suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
			}
			st, err := OpenTasks(context.Background(), path, nil)
			if err != nil {
				t.Fatalf("after the move aside: %v", err)
			}
			defer st.Close()
			if snap, err := st.LoadState(context.Background()); err != nil || len(snap.Jobs) != 0 {
				t.Fatalf("after the move aside: %d jobs, %v; want an empty store", len(snap.Jobs), err)
			}
		})
	}
}

func cronSizes(path string) string {
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

// cronStoreID is the identity the closed task store at path holds, 0 for none.
func cronStoreID(t *testing.T, path string) int64 {
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

// R-INPUT-01: what is not damage opens and keeps its tasks. A store from the first schema
// (before identities) is adopted: migrated, given an identity and its record; a crash
// between the identity's commit and its record leaves a record to write at the next open.
func TestCronStoreIdentityAdopted_RINPUT01(t *testing.T) {
	ctx := context.Background()
	record := func(t *testing.T, path string) string {
		b, err := os.ReadFile(path + storeid.Suffix)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	reopen := func(t *testing.T, path string) {
		t.Helper()
		st, err := OpenTasks(ctx, path, nil)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer st.Close()
		if ts, err := st.Tasks(ctx, store.TaskFilter{Limit: 10}); err != nil || len(ts) != 1 {
			t.Fatalf("tasks %d, %v; want the one stored", len(ts), err)
		}
		var id int64
		if err := st.db.QueryRow("SELECT value FROM meta WHERE key = 'store_id'").Scan(&id); err != nil || record(t, path) != fmt.Sprintf("%016x", id) {
			t.Fatalf("identity %x, %v; record %q", id, err, record(t, path))
		}
	}
	t.Run("store from the first schema", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), TasksFile)
		db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)")
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{tasksSchema.steps[0], "PRAGMA user_version = 1",
			`INSERT INTO tasks (job, kind, run_key, attempt, due_at, state, queued_at) VALUES ('j', 'scheduled', 'j@1', 1, 1, 'succeeded', 1)`} {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()
		reopen(t, path)
	})
	t.Run("record never written", func(t *testing.T) {
		path := cronImage(t)
		id := cronStoreID(t, path)
		if err := os.Remove(path + storeid.Suffix); err != nil {
			t.Fatal(err)
		}
		reopen(t, path)
		if record(t, path) != fmt.Sprintf("%016x", id) {
			t.Fatalf("record %q, want the database's %016x", record(t, path), id)
		}
	})
}
