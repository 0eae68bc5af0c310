package platform

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// rssFileKB is this process's resident file-backed memory.
func rssFileKB(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range bytes.Lines(data) {
		if kb, ok := smapsKB(line, "RssFile:"); ok {
			return kb
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// TestReleaseImagePages: the executable's read-only pages leave the process's RSS, and
// the code and constant data they held still work afterwards (they fault back in).
func TestReleaseImagePages(t *testing.T) {
	before := rssFileKB(t)
	released, err := ReleaseImagePages()
	if err != nil {
		t.Fatal(err)
	}
	after := rssFileKB(t)
	if released <= 0 || after >= before {
		t.Fatalf("released %d bytes; RssFile %d kB before, %d kB after", released, before, after)
	}
	// Code and tables run again from the page cache.
	env := ChildEnv([]string{"NOTIFY_SOCKET=/x", "A=b"}, nil)
	if len(env) != 1 || env[0] != "A=b" {
		t.Fatalf("after the release, ChildEnv = %q", env)
	}
	if s := strconv.Quote("ok\n"); s != `"ok\n"` {
		t.Fatalf("strconv after the release: %s", s)
	}
}

func TestSmapsKB(t *testing.T) {
	for _, c := range []struct {
		line, key string
		want      int64
		ok        bool
	}{
		{"Rss:                5632 kB", "Rss:", 5632, true},
		{"Anonymous:             0 kB", "Anonymous:", 0, true},
		{"Pss:  12 kB", "Rss:", 0, false},
		{"Rss: x kB", "Rss:", 0, false},
	} {
		got, ok := smapsKB([]byte(c.line), c.key)
		if got != c.want || ok != c.ok {
			t.Errorf("smapsKB(%q, %q) = %d, %v; want %d, %v", c.line, c.key, got, ok, c.want, c.ok)
		}
	}
}
