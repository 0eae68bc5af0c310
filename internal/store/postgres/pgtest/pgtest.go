// Package pgtest gives tests a PostgreSQL database of their own: on the server named by
// SCHEDD_TEST_PG_DSN when it is set, else on a throwaway cluster that it starts with the
// PostgreSQL binaries found on PATH or in /usr/lib/postgresql/*/bin. Without either the test
// is skipped with a message, or fails when SCHEDD_REQUIRE_POSTGRES=1 (as in CI). A test
// that stops and starts its server gets a cluster of its own (NewCluster), which always
// needs the binaries.
package pgtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

var (
	once    sync.Once
	cluster struct {
		admin string   // DSN of a database to run CREATE DATABASE from
		c     *Cluster // the private cluster, nil for an external server
		err   error
		skip  string
	}
	seq atomic.Int64
)

// noBinaries is why a test is skipped without PostgreSQL.
const noBinaries = "no PostgreSQL binaries (initdb) on PATH nor in /usr/lib/postgresql/*/bin"

// Main runs the tests of a package and then stops the cluster they started: call it from
// TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	stop()
	return code
}

// VerifyMain is Main followed by goleak's check that no goroutine outlived the tests, for
// the packages whose TestMain would otherwise be goleak.VerifyTestMain; it exits.
func VerifyMain(m *testing.M) {
	code := Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// DSN returns the DSN of a new, empty database for t.
func DSN(t testing.TB) string {
	t.Helper()
	once.Do(start)
	if cluster.skip != "" {
		if os.Getenv("SCHEDD_REQUIRE_POSTGRES") == "1" {
			t.Fatalf("SCHEDD_REQUIRE_POSTGRES=1 but %s", cluster.skip)
		}
		t.Skip(cluster.skip)
	}
	if cluster.err != nil {
		t.Fatalf("postgres test cluster: %v", cluster.err)
	}
	name := fmt.Sprintf("schedd_test_%d_%d", os.Getpid(), seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, cluster.admin)
	if err != nil {
		t.Fatalf("postgres test cluster: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("postgres test cluster: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, cluster.admin); err == nil {
			_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			_ = conn.Close(ctx)
		}
	})
	return withDatabase(cluster.admin, name)
}

// WaitListening waits until n connections LISTEN on channel in the database of dsn, so that
// a test's notification is not missed by a listener that is still connecting.
func WaitListening(t testing.TB, dsn, channel string, n int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var got int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND query = 'LISTEN '||$1`, channel).Scan(&got)
		if err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d connections listening on %s after 10 s", got, n, channel)
		}
	}
}

// withDatabase is dsn naming the database db instead.
func withDatabase(dsn, db string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			u.Path = "/" + db
			return u.String()
		}
	}
	return dsn + " dbname=" + db // a later keyword overrides an earlier one
}

func start() {
	if dsn := os.Getenv("SCHEDD_TEST_PG_DSN"); dsn != "" {
		cluster.admin = dsn
		return
	}
	bin := findBin()
	if bin == "" {
		cluster.skip = noBinaries + ", and SCHEDD_TEST_PG_DSN is not set"
		return
	}
	// The tests that share this cluster never stop it: nothing needs to reach the disk.
	c, err := initCluster(bin, "fsync=off", "synchronous_commit=off")
	if err == nil {
		err = c.start()
	}
	if err != nil && c != nil {
		c.remove()
	}
	cluster.c, cluster.err = c, err
	if err == nil {
		cluster.admin = c.dsn
	}
}

// findBin is the directory of initdb and pg_ctl, "" if there is none.
func findBin() string {
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "pg_ctl")); err == nil {
			return filepath.Dir(p)
		}
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	slices.SortFunc(found, func(a, b string) int { return version(b) - version(a) }) // newest first
	if len(found) == 0 {
		return ""
	}
	return filepath.Dir(found[0])
}

func version(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func stop() {
	if cluster.c != nil {
		cluster.c.remove()
	}
}
