package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docPath matches a path of the repository in docs/architecture.md: internal/... or cmd/...,
// not glued to a word before it, without the punctuation that may follow it in a sentence.
var docPath = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.-])((?:internal|cmd)/[A-Za-z0-9_./-]*[A-Za-z0-9_])`)

// internalPackages lists the package directories under internal/ of the repository at root,
// as slash paths ("internal/store/postgres"): every directory that holds a .go file, except
// the ones the go command ignores (testdata, and names starting with "." or "_").
func internalPackages(t *testing.T, root string) []string {
	t.Helper()
	var pkgs []string
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return filepath.SkipDir
		}
		gofiles, err := filepath.Glob(filepath.Join(path, "*.go"))
		if err != nil {
			return err
		}
		if len(gofiles) > 0 {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			pkgs = append(pkgs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// TestArchitectureDoc keeps docs/architecture.md in step with the tree: every package under
// internal/ is named in it, and every internal/... or cmd/... path it names exists (a
// directory under internal/ must be a package).
func TestArchitectureDoc(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	pkgs := internalPackages(t, root)
	if len(pkgs) < 10 {
		t.Fatalf("found only %d packages under internal/: %v", len(pkgs), pkgs)
	}
	named := map[string]bool{}
	for _, m := range docPath.FindAllStringSubmatch(string(doc), -1) {
		named[m[1]] = true
	}
	for _, p := range pkgs {
		if !named[p] {
			t.Errorf("docs/architecture.md does not name the package %s: add it to the table of packages", p)
		}
	}
	for p := range named {
		fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(p)))
		switch {
		case err != nil:
			t.Errorf("docs/architecture.md names %s, which does not exist", p)
		case fi.IsDir() && strings.HasPrefix(p, "internal/") && !slices.Contains(pkgs, p):
			t.Errorf("docs/architecture.md names %s as a package, but it holds no Go files", p)
		}
	}
}
