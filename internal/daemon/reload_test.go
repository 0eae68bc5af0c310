package daemon

import (
	"slices"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/config"
)

// TestStartOnlyChanges_RINPUT14: a reload names every setting it cannot apply before schedd
// starts again (the state dir, the socket, the control API's limits, the log format), and
// nothing when none of them changed.
func TestStartOnlyChanges_RINPUT14(t *testing.T) {
	a := config.Default()
	if got := startOnlyChanges(a, config.Default()); len(got) != 0 {
		t.Fatalf("no change: %v", got)
	}
	b := config.Default()
	b.StateDir = "/var/lib/other"
	b.Control.Socket = "/run/other.sock"
	b.Control.MaxBody = 1 << 20
	b.Control.RequestTimeout = config.Duration(time.Second)
	b.Log.Format = "json"
	b.Log.Level = "debug" // applied at once: not named
	want := []string{"state_dir", "control.socket", "control.max_body", "control.request_timeout", "log.format"}
	if got := startOnlyChanges(a, b); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
