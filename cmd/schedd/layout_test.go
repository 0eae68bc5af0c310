package main

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// goPackage is what TestLayout reads of `go list -json`.
type goPackage struct {
	ImportPath string
	Dir        string
	Imports    []string
}

func listPackages(t *testing.T) []goPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", modulePath+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 5 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

const modulePath = "github.com/schedd/schedd/"

// storageDrivers are the packages that open and write a store's database; only the
// daemon chooses one.
var storageDrivers = []string{"internal/store/sqlite", "internal/store/postgres"}

// features are the packages behind the control API: the CLI reaches them only through it.
var features = []string{"internal/daemon", "internal/supervisor", "internal/restart", "internal/heartbeat",
	"internal/deliveries", "internal/store", "internal/store/sqlite", "internal/store/postgres", "internal/cron", "internal/handoff"}

// handoffMayImport is all of ours that internal/handoff imports: whatever else schedd's
// replacement of itself needs, the daemon or the command hands it through a function.
var handoffMayImport = []string{"internal/api", "internal/platform"}

// TestLayout enforces the package rules (docs/architecture.md) with the real import graph:
//   - os/exec, os/signal and go-systemd only in internal/platform and cmd (plus the test-only
//     fake gateway and PostgreSQL cluster, the examples and the bench programs, which are
//     separate programs);
//   - internal/platform, internal/backoff and internal/api import nothing of ours;
//   - internal/client imports only internal/api: it describes the features with its types;
//   - internal/server imports neither the daemon nor a storage driver: its handlers reach
//     the running parts through interfaces the daemon satisfies;
//   - internal/outbound, the one outbound call the features make, imports none of them:
//     only internal/platform and internal/backoff;
//   - only cmd/schedd imports the daemon, and there only to run it (run.go, and the
//     respawn helper that waits for a daemon to hand over); the rest of the CLI is a client
//     of the control API and imports none of the features;
//   - internal/handoff imports of ours only internal/api and internal/platform, and only
//     the daemon and cmd/schedd import it: the supervisor knows nothing of schedd's own
//     replacement.
func TestLayout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	restricted := map[string]bool{"os/exec": true, "os/signal": true, "github.com/coreos/go-systemd/v22/daemon": true}
	mayTouchOS := func(p string) bool {
		for _, pre := range []string{"internal/platform", "cmd/", "internal/testgateway", "internal/store/postgres/pgtest", "examples/", "bench/"} {
			if strings.HasPrefix(p, pre) {
				return true
			}
		}
		return false
	}
	for _, pkg := range listPackages(t) {
		p := strings.TrimPrefix(pkg.ImportPath, modulePath)
		for _, imp := range pkg.Imports {
			ours, isOurs := strings.CutPrefix(imp, modulePath)
			switch {
			case restricted[imp] && !mayTouchOS(p):
				t.Errorf("%s imports %s: only internal/platform and cmd may", p, imp)
			case isOurs && (p == "internal/platform" || p == "internal/backoff" || p == "internal/api"):
				t.Errorf("%s imports %s: it must import nothing of ours", p, ours)
			case isOurs && p == "internal/client" && ours != "internal/api":
				t.Errorf("%s imports %s: the control client describes the features with internal/api", p, ours)
			case isOurs && p == "internal/server" && (ours == "internal/daemon" || slices.Contains(storageDrivers, ours)):
				t.Errorf("%s imports %s: the control server reaches the daemon's parts through its interfaces", p, ours)
			case isOurs && p == "internal/outbound" && ours != "internal/platform" && ours != "internal/backoff":
				t.Errorf("%s imports %s: the outbound call imports only internal/platform and internal/backoff", p, ours)
			case isOurs && ours == "internal/daemon" && p != "cmd/schedd":
				t.Errorf("%s imports the daemon: only cmd/schedd may", p)
			case isOurs && p == "internal/handoff" && !slices.Contains(handoffMayImport, ours):
				t.Errorf("%s imports %s: it is handed what it needs through a function", p, ours)
			case isOurs && ours == "internal/handoff" && p != "internal/daemon" && p != "cmd/schedd":
				t.Errorf("%s imports internal/handoff: only the daemon and cmd/schedd may", p)
			case isOurs && strings.HasPrefix(ours, "internal/testgateway"):
				t.Errorf("%s imports the test-only fake gateway outside a test", p)
			case isOurs && ours == "internal/store/postgres/pgtest":
				t.Errorf("%s imports the test-only PostgreSQL cluster outside a test", p)
			}
		}
	}
}

// storeDrivers are the packages that keep the stores on a medium: files of the state
// directory, or a fleet's database.
var storeDrivers = []string{"internal/store/sqlite", "internal/store/postgres"}

// TestLayoutStore enforces the storage layer's rules with the real import graph:
//   - the features depend on the contract (internal/store), never on a driver: only
//     internal/daemon, which chooses the store the config names, imports a driver (and the
//     bench programs, which are separate programs that open a store themselves);
//   - internal/store and everything under it import nothing of ours outside internal/store
//     but the API's types a task is shown with (internal/api): no feature, no daemon.
func TestLayoutStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	checked := 0
	for _, pkg := range listPackages(t) {
		p := strings.TrimPrefix(pkg.ImportPath, modulePath)
		inStore := p == "internal/store" || strings.HasPrefix(p, "internal/store/")
		checked++
		for _, imp := range pkg.Imports {
			ours, isOurs := strings.CutPrefix(imp, modulePath)
			if !isOurs {
				continue
			}
			if slices.Contains(storeDrivers, ours) && p != "internal/daemon" && !strings.HasPrefix(p, "bench/") {
				t.Errorf("%s imports the store driver %s: features use internal/store; only internal/daemon picks a driver", p, ours)
			}
			if inStore && ours != "internal/store" && !strings.HasPrefix(ours, "internal/store/") && ours != "internal/api" {
				t.Errorf("%s imports %s: the storage layer imports no feature", p, ours)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("checked only %d packages", checked)
	}
}

// TestCLIIsAClient: outside the files that run the daemon, no file of the command imports
// the daemon, the control server or a feature package; it speaks to them through
// internal/client and internal/api, as any other client would. The files that run the
// daemon may import it, internal/server (for its errors) and internal/handoff (a successor
// waits for its predecessor, the respawn helper brings schedd back).
func TestCLIIsAClient(t *testing.T) {
	runsTheDaemon := []string{"run.go", "respawn_helper.go"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, is := range f.Imports {
			ours, isOurs := strings.CutPrefix(strings.Trim(is.Path.Value, `"`), modulePath)
			if !isOurs || !slices.Contains(features, ours) && ours != "internal/server" {
				continue
			}
			if (ours == "internal/daemon" || ours == "internal/server" || ours == "internal/handoff") && slices.Contains(runsTheDaemon, name) {
				continue
			}
			t.Errorf("%s imports %s: the CLI reaches it through the control API (internal/client, internal/api)", name, ours)
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d files", checked)
	}
}

// apiPathsAllowed are the packages that may write a path of the control API ("/v1/..."):
// the server (its route table and handlers) and the typed client. Everyone else, the CLI
// first, calls a method of client.Client. The bench programs are separate load generators
// that write the wire themselves.
var apiPathsAllowed = []string{"internal/client", "internal/server", "bench/"}

// TestLayoutAPIPaths: no string in a non-test file outside apiPathsAllowed contains "/v1/",
// so the CLI speaks to the daemon only through client.Client's methods, and a path
// changes in one place.
func TestLayoutAPIPaths(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	fset := token.NewFileSet()
	checked := 0
	for _, pkg := range listPackages(t) {
		p := strings.TrimPrefix(pkg.ImportPath, modulePath)
		if slices.ContainsFunc(apiPathsAllowed, func(a string) bool { return p == a || strings.HasSuffix(a, "/") && strings.HasPrefix(p, a) }) {
			continue
		}
		names, err := filepath.Glob(filepath.Join(pkg.Dir, "*.go")) // every build tag's files
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range names {
			name := filepath.Base(path)
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && strings.Contains(lit.Value, "/v1/") {
					t.Errorf("%s/%s:%d: %s: call a method of client.Client instead of writing an API path",
						p, name, fset.Position(lit.Pos()).Line, lit.Value)
				}
				return true
			})
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d files", checked)
	}
}

// TestNoInit: no package of schedd has an init function, so nothing runs before main
// and every command starts the same way (no I/O, no request, no listener at start-up).
func TestNoInit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	fset := token.NewFileSet()
	for _, pkg := range listPackages(t) {
		names, err := filepath.Glob(filepath.Join(pkg.Dir, "*.go")) // every build tag's files
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range names {
			name := filepath.Base(path)
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "init" {
					t.Errorf("%s/%s: func init: do the work where it is needed, not before main",
						strings.TrimPrefix(pkg.ImportPath, modulePath), name)
				}
			}
		}
	}
}

// TestLayoutEndToEnd: the end-to-end runs of the built command live in internal/e2e, which
// holds tests only; cmd/schedd holds the CLI and its unit tests, so none of its tests
// brings the fake gateway or a PostgreSQL cluster, which only a running daemon needs.
func TestLayoutEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-json", modulePath+"cmd/schedd", modulePath+"internal/e2e").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for {
		var p struct {
			ImportPath           string
			GoFiles, TestGoFiles []string
			TestImports          []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		seen++
		switch strings.TrimPrefix(p.ImportPath, modulePath) {
		case "internal/e2e":
			if len(p.GoFiles) > 0 || len(p.TestGoFiles) < 10 {
				t.Errorf("internal/e2e: %d non-test files, %d test files: it holds the end-to-end tests and nothing else", len(p.GoFiles), len(p.TestGoFiles))
			}
		case "cmd/schedd":
			for _, imp := range p.TestImports {
				if ours, _ := strings.CutPrefix(imp, modulePath); ours == "internal/testgateway" || strings.HasSuffix(ours, "/pgtest") {
					t.Errorf("a test of cmd/schedd imports %s: a test that runs the daemon belongs in internal/e2e", ours)
				}
			}
		}
	}
	if seen != 2 {
		t.Fatalf("go list described %d packages, want 2", seen)
	}
}
