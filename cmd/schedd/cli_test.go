package main

import (
	"bytes"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestUnknownCommandIsUsage: a command that does not exist, at any level, is a usage
// error (exit 2) that names it and points at --help; a command group alone prints its help.
func TestUnknownCommandIsUsage(t *testing.T) {
	for _, args := range [][]string{{"nope"}, {"heartbeat", "nope"}, {"deliveries", "nope"}, {"cron", "nope"}, {"tasks", "nope"}, {"config", "nope"}} {
		var out, errb bytes.Buffer
		if code := Main(args, &out, &errb); code != exitUsage {
			t.Errorf("schedd %s: exit %d, want %d (stderr %q)", strings.Join(args, " "), code, exitUsage, errb.String())
		}
		if !strings.Contains(errb.String(), `unknown command "nope"`) || !strings.Contains(errb.String(), "--help") {
			t.Errorf("schedd %s: stderr %q, want the unknown command and a pointer to --help", strings.Join(args, " "), errb.String())
		}
	}
	for _, args := range [][]string{nil, {"heartbeat"}, {"cron"}, {"tasks"}, {"config"}} {
		var out, errb bytes.Buffer
		if code := Main(args, &out, &errb); code != exitOK || !strings.Contains(out.String(), "Usage:") {
			t.Errorf("schedd %s: exit %d, output %q; want its help and exit 0", strings.Join(args, " "), code, out.String())
		}
	}
}

// TestHelpNamesSocketDefault: `schedd --help` says where client commands look for the
// daemon, the case without XDG_RUNTIME_DIR included, and the path that gives here.
func TestHelpNamesSocketDefault(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"--help"}, &out, &errb); code != exitOK {
		t.Fatalf("schedd --help: exit %d: %s", code, errb.String())
	}
	want := []string{"$SCHEDD_SOCKET", "Here that is " + defaultSocket() + "."}
	switch runtime.GOOS {
	case "linux", "freebsd", "openbsd", "netbsd":
		want = append(want, "/run/schedd/schedd.sock for root", "without XDG_RUNTIME_DIR\n~/.local/state/schedd/schedd.sock")
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("schedd --help does not say %q:\n%s", w, out.String())
		}
	}
}

// cli runs a schedd command in process and returns its exit code and output.
func cli(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := Main(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// shortDir is a temp dir with a path short enough for unix sockets.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}
