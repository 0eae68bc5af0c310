package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Cluster is a PostgreSQL server of its own, in a temporary directory, on a free port of
// 127.0.0.1: the shared cluster of a test binary, or one test's own (NewCluster), which that
// test may stop and start again as an operator or a crash does.
type Cluster struct {
	bin      string   // directory of initdb, pg_ctl
	dir      string   // holds data/, log and the socket
	run      []string // argv prefix that runs a command as the postgres user (as root)
	port     int
	settings []string // -c name=value of every start
	dsn      string
}

// NewCluster starts a cluster for t alone, stopped and removed when t ends. Unlike the
// shared cluster it keeps fsync off (the machine does not crash in a test) but commits
// synchronously, so that an immediate stop loses no acknowledged commit; settings
// ("name=value") are added to, or override, its server settings. Without PostgreSQL
// binaries t is skipped, or fails when SCHEDD_REQUIRE_POSTGRES=1.
func NewCluster(t testing.TB, settings ...string) *Cluster {
	t.Helper()
	bin := findBin()
	if bin == "" {
		if os.Getenv("SCHEDD_REQUIRE_POSTGRES") == "1" {
			t.Fatalf("SCHEDD_REQUIRE_POSTGRES=1 but %s", noBinaries)
		}
		t.Skip(noBinaries)
	}
	c, err := initCluster(bin, append([]string{"fsync=off", "synchronous_commit=on"}, settings...)...)
	if c != nil {
		t.Cleanup(c.remove)
	}
	if err == nil {
		err = c.start()
	}
	if err != nil {
		t.Fatalf("postgres test cluster: %v", err)
	}
	return c
}

// DSN is the cluster's postgres database, as its superuser, over TCP.
func (c *Cluster) DSN() string { return c.dsn }

// Stop stops the server with pg_ctl stop -m fast: sessions are ended (clients see
// "terminating connection due to administrator command"), a checkpoint is written.
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	if err := c.stop("fast"); err != nil {
		t.Fatal(err)
	}
}

// Crash stops the server with pg_ctl stop -m immediate: every server process quits at
// once, without a checkpoint, and the next start recovers from the WAL, as after a crash.
func (c *Cluster) Crash(t testing.TB) {
	t.Helper()
	if err := c.stop("immediate"); err != nil {
		t.Fatal(err)
	}
}

// Start starts the stopped server again, on the same port and data directory, and waits
// until it accepts connections.
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	if err := c.start(); err != nil {
		t.Fatal(err)
	}
}

// initCluster runs initdb in a new temporary directory and picks a free port. initdb
// refuses to run as root, so as root the cluster runs as the postgres user (the one
// Debian's package creates). A cluster is returned with its error once its directory
// exists, for remove.
func initCluster(bin string, settings ...string) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "schedd-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, dir: dir, settings: settings}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return c, fmt.Errorf("running as root and there is no postgres user to run initdb as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return c, err
		}
		runuser, err := exec.LookPath("runuser")
		if err != nil {
			return c, fmt.Errorf("running as root and runuser is missing: %w", err)
		}
		c.run = []string{runuser, "-u", "postgres", "--"}
	}
	if c.port, err = freePort(); err != nil {
		return c, err
	}
	if out, err := c.command("initdb", "-D", c.data(), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8").CombinedOutput(); err != nil {
		return c, fmt.Errorf("initdb: %v: %s", err, out)
	}
	c.dsn = fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable", c.port)
	return c, nil
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// start starts the server, its socket in the cluster's directory, and waits until it
// accepts connections.
func (c *Cluster) start() error {
	opts := fmt.Sprintf("-h 127.0.0.1 -p %d -k %s -c max_connections=200", c.port, c.dir)
	for _, s := range c.settings {
		opts += " -c " + s
	}
	log := filepath.Join(c.dir, "log")
	if out, err := c.command("pg_ctl", "-D", c.data(), "-l", log, "-w", "-t", "60", "-o", opts, "start").CombinedOutput(); err != nil {
		text, _ := os.ReadFile(log)
		return fmt.Errorf("pg_ctl start: %v: %s\n%s", err, out, text)
	}
	return nil
}

// stop stops the server with pg_ctl stop -m mode and waits until it is gone.
func (c *Cluster) stop(mode string) error {
	if out, err := c.command("pg_ctl", "-D", c.data(), "-m", mode, "-w", "-t", "60", "stop").CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl stop -m %s: %v: %s", mode, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// remove stops the server if it runs and deletes the cluster's directory.
func (c *Cluster) remove() {
	if _, err := os.Stat(filepath.Join(c.data(), "postmaster.pid")); err == nil {
		_ = c.stop("immediate")
	}
	_ = os.RemoveAll(c.dir)
}

// command runs the PostgreSQL program name as the cluster's owner.
func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	all := append(slices.Clone(c.run), filepath.Join(c.bin, name))
	all = append(all, args...)
	cmd := exec.Command(all[0], all[1:]...)
	cmd.Dir = c.dir // readable by the postgres user
	return cmd
}
