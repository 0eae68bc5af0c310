package cron

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/store"
	"github.com/schedd/schedd/internal/store/sqlite"
	"github.com/schedd/schedd/internal/store/storeid"
)

// A task's every field survives the store.
func TestStoreTaskRoundTrip(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 3, 29, 1, 30, 0, 123456789, time.UTC)
	code := 3
	in := &task{Task: store.Task{ID: 5, Job: "j", Kind: api.KindRetry, RunKey: slotKey("j", at), Attempt: 2, Slot: at, Due: at.Add(time.Second),
		State: api.TaskFailed, Reason: "r", Queued: at.Add(2 * time.Second), Started: at.Add(3 * time.Second),
		Ended: at.Add(4 * time.Second), ExitCode: &code, Signal: "SIGTERM", HTTPStatus: 503, Class: api.ClassTransient,
		Err: "boom", Output: "out"}, qidx: -1}
	seed(t, dir, nil, &in.Task)
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
		if _, err := os.Stat(filepath.Join(dir, sqlite.TasksFile)); !os.IsNotExist(err) {
			t.Fatalf("store created without a job: %v", err)
		}
		if st := h.svc.Status(); st.StoreState != api.StoreNotOpened || len(st.Jobs) != 0 {
			t.Fatalf("status %+v", st)
		}
		if l, err := h.svc.Tasks(context.Background(), TaskFilter{}); err != nil || len(l.Tasks) != 0 {
			t.Fatalf("tasks %v %v", l, err)
		}
		a := &fakeAction{}
		if err := h.svc.Update(context.Background(), configuredJobs([]Job{{Name: "j", Schedule: every{period: time.Minute, origin: t0}, Action: a}})); err != nil {
			t.Fatal(err)
		}
		if st := h.svc.Status(); st.StoreState != api.StoreOpen || st.Store != filepath.Join(dir, sqlite.TasksFile) {
			t.Fatalf("status %+v", st)
		}
		sleepTo(time.Minute)
		if len(a.seen()) != 1 {
			t.Fatal("the added job did not run")
		}
	})
}

// R-INPUT-01: the service refuses to start on a damaged task store, with the store's
// error; a store never created opens without asking.
func TestCronServiceRefusesDamagedStore_RINPUT01(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, sqlite.TasksFile)
	st, err := sqlite.OpenTasks(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Commit(context.Background(), &store.TaskBatch{Jobs: []*store.CronJob{{Name: "j", Schedule: "s"}}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	job := Job{Name: "j", Schedule: every{period: time.Hour, origin: t0}, Action: &fakeAction{}}
	_, err = New(configured(Config{OpenStore: sqliteAt(dir), Jobs: []Job{job}}))
	if !errors.Is(err, storeid.ErrDamaged) || !strings.Contains(err.Error(), path) {
		t.Fatalf("New on an emptied store = %v, want a damaged store naming %s", err, path)
	}
	svc, err := New(configured(Config{OpenStore: sqliteAt(t.TempDir()), Jobs: []Job{job}}))
	if err != nil {
		t.Fatalf("New in a new state dir: %v", err)
	}
	svc.closeStore()
}
