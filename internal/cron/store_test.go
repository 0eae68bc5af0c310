package cron

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// The store is created private at the current schema version, opens again unchanged, and a
// file from a newer schedd is refused by name.
func TestStoreSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), DBName)
	ctx := context.Background()
	for range 2 {
		st, err := openStore(ctx, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		var v int
		var sync int
		if err := st.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != SchemaVersion {
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
	st, _ := openStore(ctx, path, nil)
	st.db.Exec("PRAGMA user_version = 99")
	st.Close()
	if _, err := openStore(ctx, path, nil); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("newer schema: %v", err)
	}
}

// A task's every field survives the store.
func TestStoreTaskRoundTrip(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 3, 29, 1, 30, 0, 123456789, time.UTC)
	code := 3
	in := &task{ID: 5, Job: "j", Kind: api.KindRetry, RunKey: slotKey("j", at), Attempt: 2, Slot: at, Due: at.Add(time.Second),
		State: api.TaskFailed, Reason: "r", Queued: at.Add(2 * time.Second), Started: at.Add(3 * time.Second),
		Ended: at.Add(4 * time.Second), ExitCode: &code, Signal: "SIGTERM", HTTPStatus: 503, Class: api.ClassTransient,
		Err: "boom", Output: "out", qidx: -1}
	seed(t, dir, nil, in)
	got := storedTasks(t, dir, "j")
	if len(got) != 1 || got[0].ID != 5 {
		t.Fatalf("%+v", got)
	}
	want := in.API()
	g := got[0]
	if g.Slot == nil || !g.Slot.Equal(*want.Slot) || *g.ExitCode != 3 || !g.StartedAt.Equal(*want.StartedAt) ||
		!g.EndedAt.Equal(*want.EndedAt) || g.DurationMS != 1000 {
		t.Fatalf("round trip:\n got %+v\nwant %+v", g, want)
	}
	g.Slot, g.StartedAt, g.EndedAt, g.ExitCode = want.Slot, want.StartedAt, want.EndedAt, want.ExitCode
	if g != want {
		t.Fatalf("round trip:\n got %+v\nwant %+v", g, want)
	}
}

// With no job configured the store is not opened (no file is created); the first job
// configured by an update opens it.
func TestStoreOpensWithFirstJob(t *testing.T) {
	bubble(t, func(t *testing.T, dir string) {
		h := start(t, dir, Config{}, nil)
		if _, err := os.Stat(filepath.Join(dir, DBName)); !os.IsNotExist(err) {
			t.Fatalf("store created without a job: %v", err)
		}
		if st := h.svc.Status(); st.StoreState != api.StoreNotOpened || len(st.Jobs) != 0 {
			t.Fatalf("status %+v", st)
		}
		if l, err := h.svc.Tasks(context.Background(), TaskFilter{}); err != nil || len(l.Tasks) != 0 {
			t.Fatalf("tasks %v %v", l, err)
		}
		a := &fakeAction{}
		if err := h.svc.Update(context.Background(), []Job{{Name: "j", Schedule: every{period: time.Minute, origin: t0}, Action: a}}); err != nil {
			t.Fatal(err)
		}
		if st := h.svc.Status(); st.StoreState != api.StoreOpen || st.Store != filepath.Join(dir, DBName) {
			t.Fatalf("status %+v", st)
		}
		sleepTo(time.Minute)
		if len(a.seen()) != 1 {
			t.Fatal("the added job did not run")
		}
	})
}
