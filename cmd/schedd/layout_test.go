package main

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// TestLayout enforces the package rules of DESIGN.md with the real import graph:
// os/exec, os/signal and go-systemd only in internal/platform and cmd (plus the test-only
// fake gateway and the examples, which are separate programs); platform and backoff import
// nothing of ours (platform's own subpackages aside, which import nothing of ours either);
// internal/early imports only internal/platform/dirs; no package imports cmd or daemon
// except cmd.
func TestLayout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const mod = "github.com/schedd/schedd/"
	out, err := exec.Command("go", "list", "-json", mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	restricted := map[string]bool{"os/exec": true, "os/signal": true, "github.com/coreos/go-systemd/v22/daemon": true}
	mayTouchOS := func(p string) bool {
		for _, pre := range []string{"internal/platform", "cmd/", "internal/testgateway", "examples/"} {
			if strings.HasPrefix(p, pre) {
				return true
			}
		}
		return false
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for {
		var pkg struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&pkg); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
		p := strings.TrimPrefix(pkg.ImportPath, mod)
		for _, imp := range pkg.Imports {
			ours := strings.TrimPrefix(imp, mod)
			switch {
			case restricted[imp] && !mayTouchOS(p):
				t.Errorf("%s imports %s: only internal/platform and cmd may", p, imp)
			case ours != imp && strings.HasPrefix(p, "internal/platform") && !strings.HasPrefix(ours, "internal/platform/"),
				ours != imp && strings.HasPrefix(p, "internal/platform/"),
				ours != imp && p == "internal/backoff":
				t.Errorf("%s imports %s: it must import nothing of ours", p, ours)
			case ours != imp && p == "internal/early" && ours != "internal/platform/dirs":
				t.Errorf("%s imports %s: it runs before the rest of schedd is initialized, and may import only internal/platform/dirs", p, ours)
			case ours != imp && strings.HasPrefix(ours, "internal/daemon") && !strings.HasPrefix(p, "cmd/"):
				t.Errorf("%s imports the daemon: only cmd may", p)
			case ours != imp && strings.HasPrefix(ours, "internal/testgateway"):
				t.Errorf("%s imports the test-only fake gateway outside a test", p)
			}
		}
	}
	if n < 5 {
		t.Fatalf("go list found only %d packages", n)
	}
}
