package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestManPages: `schedd man --dir` writes one page for schedd and each command a user can
// call (hidden ones have none), and a page carries its command's help text.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := Main([]string{"man", "--dir", dir}, &out, &errb); code != 0 {
		t.Fatalf("schedd man: exit %d: %s", code, errb.String())
	}
	var want []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		want = append(want, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	root := newRootCmd(&out, &errb)
	root.InitDefaultCompletionCmd() // cobra adds it when the command runs
	walk(root)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("pages:\n got %v\nwant %v", got, want)
	}
	page, err := os.ReadFile(filepath.Join(dir, "schedd-run.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`.TH "SCHEDD" "1"`, "schedd-run - Run the daemon", "SIGUSR1 restarts the gateway", "--config"} {
		if !strings.Contains(string(page), s) {
			t.Errorf("schedd-run.1 lacks %q", s)
		}
	}
	if code := Main([]string{"man"}, &out, &errb); code != exitUsage {
		t.Errorf("schedd man without --dir: exit %d, want %d", code, exitUsage)
	}
}
