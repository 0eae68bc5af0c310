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

// features are the packages behind the control API: the CLI reaches them only through it.
var features = []string{"internal/daemon", "internal/supervisor", "internal/restart", "internal/heartbeat",
	"internal/deliveries", "internal/queue", "internal/cron"}

// TestLayout enforces the package rules (docs/architecture.md) with the real import graph:
//   - os/exec, os/signal and go-systemd only in internal/platform and cmd (plus the test-only
//     fake gateway and PostgreSQL cluster, the examples and the bench programs, which are
//     separate programs);
//   - internal/platform, internal/backoff and internal/api import nothing of ours;
//   - internal/control imports none of the features: it describes them with internal/api;
//   - only cmd/schedd imports the daemon, and there only to run it (run.go, and the
//     respawn helper that waits for a daemon to hand over); the rest of the CLI is a client
//     of the control API and imports none of the features.
func TestLayout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	restricted := map[string]bool{"os/exec": true, "os/signal": true, "github.com/coreos/go-systemd/v22/daemon": true}
	mayTouchOS := func(p string) bool {
		for _, pre := range []string{"internal/platform", "cmd/", "internal/testgateway", "internal/queue/pgstore/pgtest", "examples/", "bench/"} {
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
			case isOurs && p == "internal/control" && ours != "internal/api":
				t.Errorf("%s imports %s: the control API describes the features with internal/api", p, ours)
			case isOurs && ours == "internal/daemon" && p != "cmd/schedd":
				t.Errorf("%s imports the daemon: only cmd/schedd may", p)
			case isOurs && strings.HasPrefix(ours, "internal/testgateway"):
				t.Errorf("%s imports the test-only fake gateway outside a test", p)
			case isOurs && ours == "internal/queue/pgstore/pgtest":
				t.Errorf("%s imports the test-only PostgreSQL cluster outside a test", p)
			}
		}
	}
}

// TestCLIIsAClient: outside the files that run the daemon, no file of the command imports
// the daemon or a feature package; it speaks to them through internal/control and
// internal/api, as any other client would.
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
			if !isOurs || !slices.Contains(features, ours) {
				continue
			}
			if ours == "internal/daemon" && slices.Contains(runsTheDaemon, name) {
				continue
			}
			t.Errorf("%s imports %s: the CLI reaches it through the control API (internal/control, internal/api)", name, ours)
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d files", checked)
	}
}

// apiPathsAllowed are the packages that may write a path of the control API ("/v1/..."):
// its types and route table, the typed client, the server and its handlers, and the
// metrics that name the routes. Everyone else, the CLI first, calls a method of
// control.Client. The bench programs are separate load generators that write the wire
// themselves.
var apiPathsAllowed = []string{"internal/api", "internal/control", "internal/daemon", "internal/metrics", "bench/"}

// TestLayoutAPIPaths: no string in a non-test file outside apiPathsAllowed contains "/v1/",
// so the CLI speaks to the daemon only through control.Client's methods, and a path
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
					t.Errorf("%s/%s:%d: %s: call a method of control.Client instead of writing an API path",
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
