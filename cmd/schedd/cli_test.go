package main

import (
	"bytes"
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
