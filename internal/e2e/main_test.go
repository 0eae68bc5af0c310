//go:build unix

package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/schedd/schedd/internal/store/postgres/pgtest"
	"github.com/schedd/schedd/internal/testgateway"
	"go.uber.org/goleak"
)

// scheddBin is the schedd command under test, built once by TestMain (empty with -short,
// where every test that would run it skips).
var scheddBin string

// The exit codes of `schedd` (docs/service.md, "Exit codes"), as a script sees them.
const (
	exitFailure = 1
	exitUsage   = 2
	exitLocked  = 73 // another schedd holds the state dir
	exitStore   = 73 // a store in the state dir is damaged, or missing where it was
	exitConfig  = 78
)

// defaultParallel is how many tests run at once when -parallel is not given. The tests
// mostly wait (on restarts, timeouts, leases, a gateway that starts slowly), each with
// processes and state dirs of its own, so more of them than GOMAXPROCS share the machine.
// Every test calls t.Parallel() except the few whose assertions count on tight timing
// (a second to be ready, 5 s to answer), which the others' load could break: those run
// alone, before the parallel ones, and say why.
const defaultParallel = 6

// TestMain is the fake gateway when testgateway.Env says so (the daemons under test run
// this binary as their gateway); otherwise it builds schedd, runs the tests (defaultParallel
// at once unless -parallel says otherwise), stops the PostgreSQL cluster of the fleet tests
// and looks for leaked goroutines.
func TestMain(m *testing.M) {
	testgateway.MaybeRun()
	flag.Parse()
	setDefaultParallel(max(defaultParallel, runtime.GOMAXPROCS(0)))
	dir := ""
	if !testing.Short() {
		var err error
		if dir, err = buildSchedd(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		scheddBin = filepath.Join(dir, "schedd")
	}
	code := pgtest.Main(m)
	if dir != "" {
		os.RemoveAll(dir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// buildSchedd builds ./cmd/schedd into a new temporary directory, with the race detector
// when the tests run with it, so the daemons are checked as the tests are.
func buildSchedd() (string, error) {
	dir, err := os.MkdirTemp("", "schedd-e2e")
	if err != nil {
		return "", err
	}
	args := []string{"build", "-o", filepath.Join(dir, "schedd")}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./cmd/schedd")...)
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build ./cmd/schedd: %v\n%s", err, out)
	}
	return dir, nil
}

// setDefaultParallel sets -test.parallel to n unless the command line set it.
func setDefaultParallel(n int) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic(err)
		}
	}
}

// cpuHeavy is held by the tests that keep both cores busy for minutes: the real OpenClaw
// gateway and the two kill loops. Side by side on a loaded machine they starve each other,
// and the OpenClaw gateway missed its readiness timeout; one at a time, each runs beside
// the tests that mostly wait.
var cpuHeavy sync.Mutex

// heavy makes t wait for the other CPU-heavy tests, after t.Parallel.
func heavy(t *testing.T) {
	t.Helper()
	cpuHeavy.Lock()
	t.Cleanup(cpuHeavy.Unlock)
}
