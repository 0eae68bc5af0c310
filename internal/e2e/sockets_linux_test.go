package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/schedd/schedd/internal/api"
)

// TestE2ESocketsRemoved_RENV07 is R-ENV-07 on a running daemon: the control socket and the
// gateway's notify socket are removed (a tmp cleaner). schedd is told at once (inotify),
// so both are back within a second, not at a look every 10 s: the CLI reaches schedd
// again and the gateway is still the same ready one.
func TestE2ESocketsRemoved_RENV07(t *testing.T) {
	// Not parallel: it wants the sockets back within a second, which other tests' load could
	// break.
	d := startDaemon(t, daemonOpts{gateway: []string{"ready"}})
	pid := d.waitFor("ready", func(g api.Gateway) bool { return g.State == api.GatewayReady }).Gateway.PID
	notify := filepath.Join(d.dir, "gateway.notify")
	for _, p := range []string{d.socket, notify} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Second)
	for _, p := range []string{d.socket, notify} {
		for {
			if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s was not bound again within a second", p)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	st, err := d.status()
	if err != nil || st.Gateway.PID != pid || st.Gateway.State != api.GatewayReady {
		t.Fatalf("status after the sockets came back: %+v, %v", st.Gateway, err)
	}
	if !d.waitLog("the control socket was removed; bound it again") ||
		!d.waitLog("the gateway's notify socket was removed; bound it again") {
		t.Fatalf("the rebinds were not logged:\n%s", d.out.String())
	}
}
