//go:build unix

package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

func TestLogPrinter(t *testing.T) {
	at := time.Date(2026, 12, 1, 16, 12, 51, 123_000_000, time.UTC)
	lines := []api.LogLine{
		{Seq: 1, Time: at, PID: 4242, Stream: "stdout", Text: "listening on :18789"},
		{Seq: 2, Time: at, PID: 4242, Stream: "stderr", Text: "xxxx", Truncated: true, NotLogged: true},
	}
	var b bytes.Buffer
	p := &logPrinter{out: &b}
	for _, l := range lines {
		if err := p.line(l); err != nil {
			t.Fatal(err)
		}
	}
	ts := at.Local().Format(logTime)
	if want := ts + " 4242 stdout listening on :18789\n" + ts + " 4242 stderr xxxx [cut]\n"; b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	p.json = true
	for _, l := range lines {
		p.line(l)
	}
	got := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(got) != 2 || got[0] != `{"seq":1,"time":"2026-12-01T16:12:51.123Z","pid":4242,"stream":"stdout","text":"listening on :18789"}` ||
		!strings.Contains(got[1], `"truncated":true,"not_logged":true`) {
		t.Errorf("json lines:\n%s", b.String())
	}
}

// Without a daemon, `schedd logs` (and -f) says so and how to start one; a negative -n
// is a usage error.
func TestLogsErrors(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	for _, args := range [][]string{{"logs"}, {"logs", "-f"}} {
		code, _, errOut := cli(append(args, "--socket", sock)...)
		if code != exitFailure || !strings.Contains(errOut, "no schedd is running on "+sock) || !strings.Contains(errOut, "schedd run") {
			t.Errorf("schedd %s without a daemon: exit %d, %q", strings.Join(args, " "), code, errOut)
		}
	}
	if code, _, errOut := cli("logs", "-n", "-1", "--socket", sock); code != exitUsage || !strings.Contains(errOut, "-n -1") {
		t.Errorf("schedd logs -n -1: exit %d, %q", code, errOut)
	}
	if code, out, _ := cli("logs", "--help"); code != 0 || !strings.Contains(out, "schedd logs -f -n 0") || !strings.Contains(out, "keep_lines") {
		t.Errorf("schedd logs --help: exit %d\n%s", code, out)
	}
}
