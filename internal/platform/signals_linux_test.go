//go:build linux

package platform

import (
	"strconv"
	"strings"
	"testing"
)

// Signals catches SIGPIPE instead of ignoring it, so children do not inherit an ignored
// SIGPIPE (shell pipelines in probes behave as usual).
func TestSignalsChildSIGPIPEDefault(t *testing.T) {
	_, stop := Signals()
	defer stop()
	res, err := RunCommand(t.Context(), RunSpec{Argv: []string{"cat", "/proc/self/status"}})
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(res.Stdout)) {
		hex, ok := strings.CutPrefix(line, "SigIgn:")
		if !ok {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		if mask&(1<<(13-1)) != 0 {
			t.Errorf("child ignores SIGPIPE: SigIgn %s", strings.TrimSpace(hex))
		}
		return
	}
	t.Fatalf("no SigIgn in %q", res.Stdout)
}
