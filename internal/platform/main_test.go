package platform

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// helperEnv switches the test binary into a helper process: TestMain runs the mode named
// by os.Args[1] (see runHelper) instead of the tests.
const helperEnv = "SCHEDD_PLATFORM_HELPER"

// testExe is the test binary, re-executed as the helper.
var testExe string

func TestMain(m *testing.M) {
	ListenExecMain()
	if os.Getenv(helperEnv) == "1" {
		os.Exit(runHelper(os.Args[1:]))
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "find test binary:", err)
		os.Exit(1)
	}
	testExe = exe
	goleak.VerifyTestMain(m)
}

// helperArgv is the argv that runs helper mode args[0] with args[1:].
func helperArgv(args ...string) []string {
	return append([]string{testExe}, args...)
}

// helperEnviron is a scrubbed environment that turns the test binary into the helper.
func helperEnviron(extra map[string]string) []string {
	// The race runtime sleeps a second at exit by default; helpers must not.
	gorace := "atexit_sleep_ms=0"
	if v := os.Getenv("GORACE"); v != "" {
		gorace = v + " " + gorace
	}
	set := map[string]string{helperEnv: "1", "GORACE": gorace}
	for k, v := range extra {
		set[k] = v
	}
	return ChildEnv(os.Environ(), set)
}

// lines collects a child's output for tests and lets them wait for a line.
type lines struct {
	mu      sync.Mutex
	all     []string
	changed chan struct{}
}

func newLines() *lines { return &lines{changed: make(chan struct{})} }

func (l *lines) output(s Stream, line []byte, _ int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, s.String()+": "+string(line))
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *lines) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.all...)
}

// waitTimeout bounds every wait on a real process so a broken guarantee fails instead of
// hanging; it is never used to measure speed.
const waitTimeout = 20 * time.Second

// waitFor waits until a line starting with prefix (including the "stdout: " part) has
// arrived and returns it.
func (l *lines) waitFor(t *testing.T, prefix string) string {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		for _, s := range l.all {
			if strings.HasPrefix(s, prefix) {
				l.mu.Unlock()
				return s
			}
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("no line %q; got %q", prefix, l.snapshot())
		}
	}
}

// waitDone waits for ch with the test deadline.
func waitDone(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// afterTimeout returns a channel that fires after waitTimeout.
func afterTimeout() <-chan time.Time { return time.After(waitTimeout) }
