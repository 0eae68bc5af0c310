//go:build unix

package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// refuseStart runs schedd on dir and checks that it refuses to start on the damaged store
// db: exit 73, the file named with what happened to it and what to do, and no gateway
// started.
func refuseStart(t *testing.T, dir, cfg, db, what string) {
	t.Helper()
	pids := filepath.Join(t.TempDir(), "pids")
	d := newDaemon(t, daemonOpts{dir: dir, args: []string{"--config", cfg}, gateway: []string{"pid-file=" + pids}})
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- d.cmd.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		<-exited
		t.Fatalf("schedd started on the damaged store %s:\n%s", db, d.out.String())
	}
	out := d.out.String()
	if code := exitCode(err); code != exitStore || !strings.Contains(out, db) || !strings.Contains(out, what) ||
		!strings.Contains(out, "restore "+db+" from a backup") ||
		!strings.Contains(out, "move it aside with its -wal, -shm and -id files") {
		t.Fatalf("exit %d, want %d naming %s, %q and what to do:\n%s", code, exitStore, db, what, out)
	}
	if readFile(t, pids) != "" {
		t.Fatal("the gateway was started on a damaged store")
	}
}

// moveStoreAside does what the refusal says to start empty: it moves the database and its
// -wal, -shm and -id files aside.
func moveStoreAside(t *testing.T, db string) {
	t.Helper()
	aside := t.TempDir()
	for _, suffix := range []string{"", "-wal", "-shm", "-id"} {
		if err := os.Rename(db+suffix, filepath.Join(aside, filepath.Base(db)+suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
}

func stopClean(t *testing.T, d *testDaemon) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// R-INPUT-01 end to end: schedd is killed with deliveries pending, and its schedd.db is
// found truncated to 0 bytes (its WAL left): the next schedd refuses to start (exit 73,
// which its service manager does not restart), names the file and says what to do, and
// starts no gateway. Once the files are moved aside as it says, schedd starts with an
// empty queue.
func TestE2EEmptiedDeliveryStore_RINPUT01(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, `gateway:
  readiness: {notify: {}, timeout: 60s}
deliveries:
  sinks:
    outbox: {gateway: {path: /hooks/deliver, base_url: "http://127.0.0.1:1"}}
`)
	// The gateway never gets ready: the entries stay pending.
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{}})
	for _, data := range []string{"a", "b"} {
		enqueueCLI(t, d, "--sink", "outbox", "--data", data)
	}
	d.killSchedd()
	db := filepath.Join(d.dir, "schedd.db")
	if _, err := os.Stat(db + "-wal"); err != nil {
		t.Fatalf("no WAL after the kill: %v", err)
	}
	if err := os.Truncate(db, 0); err != nil {
		t.Fatal(err)
	}
	refuseStart(t, d.dir, cfg, db, "is empty (0 bytes)")
	if fi, err := os.Stat(db); err != nil || fi.Size() != 0 {
		t.Fatalf("the refused start changed the database: %v, %v", fi, err)
	}

	moveStoreAside(t, db)
	d = startDaemon(t, daemonOpts{dir: d.dir, args: []string{"--config", cfg}, gateway: []string{}})
	st, err := d.status()
	if err != nil || st.Deliveries == nil || st.Deliveries.Pending != 0 || st.Deliveries.StoreState != api.StoreNotOpened {
		t.Fatalf("after the move aside: %+v, %v; want an empty store", st.Deliveries, err)
	}
	enqueueCLI(t, d, "--sink", "outbox", "--data", "c")
	stopClean(t, d)
}

// R-INPUT-01 end to end for cron: cron.db truncated to 0 bytes after a clean stop (no WAL
// left, only its identity record shows that it existed) is refused the same way; moved
// aside, schedd starts with an empty task history.
func TestE2EEmptiedCronStore_RINPUT01(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, cronYAML(shJob("hello", "every: 24h", "echo hello from cron")))
	d := startDaemon(t, daemonOpts{args: []string{"--config", cfg}, gateway: []string{}})
	if code, out, errOut := cli("cron", "run", "hello", "--wait", "--socket", d.socket); code != 0 {
		t.Fatalf("cron run: exit %d: %s%s", code, out, errOut)
	}
	stopClean(t, d)
	db := filepath.Join(d.dir, "cron.db")
	if err := os.Truncate(db, 0); err != nil {
		t.Fatal(err)
	}
	refuseStart(t, d.dir, cfg, db, "is empty (0 bytes)")

	moveStoreAside(t, db)
	d = startDaemon(t, daemonOpts{dir: d.dir, args: []string{"--config", cfg}, gateway: []string{}})
	if ts := d.tasksOf("hello"); len(ts) != 0 {
		t.Fatalf("tasks after the move aside: %+v; want none", ts)
	}
	st, err := d.status()
	if err != nil || st.Cron == nil || st.Cron.StoreState != api.StoreOpen {
		t.Fatalf("cron after the move aside: %+v, %v", st.Cron, err)
	}
	stopClean(t, d)
}
