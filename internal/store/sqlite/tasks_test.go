package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/schedd/schedd/internal/store/storetest"
)

// The task store is created private at the current schema version, opens again unchanged,
// and a file from a newer schedd is refused by name.
func TestTasksSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), TasksFile)
	ctx := context.Background()
	for range 2 {
		st, err := OpenTasks(ctx, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		var v int
		var sync int
		if err := st.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != TasksSchemaVersion {
			t.Fatalf("version %d %v", v, err)
		}
		if err := st.db.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil || sync != 2 {
			t.Fatalf("synchronous %d %v, want 2 (FULL)", sync, err)
		}
		st.Close()
	}
	if fi, err := os.Stat(path); err != nil || runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}
	st, _ := OpenTasks(ctx, path, nil)
	st.db.Exec("PRAGMA user_version = 99")
	st.Close()
	if _, err := OpenTasks(ctx, path, nil); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("newer schema: %v", err)
	}
}

// The task store passes the conformance suite (it keeps no host).
func TestTasksConformance(t *testing.T) {
	st, err := OpenTasks(context.Background(), filepath.Join(t.TempDir(), TasksFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	storetest.RunTasks(t, st, "")
}
