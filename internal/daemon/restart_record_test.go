package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/restart"
)

// newCoordinator is the restart coordinator the daemon builds from c (the default config
// when nil), restarting through r.
func newCoordinator(t *testing.T, d *Daemon, c *config.Config, r restart.Restarter) *restart.Coordinator {
	t.Helper()
	if c == nil {
		c = config.Default()
	}
	rc, err := d.restartConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	coord, err := restart.New(rc, r, zap.NewNop(), restart.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	return coord
}

// R-INPUT-06: a restart.json that an older schedd wrote with every reason of thousands of
// requests is bounded as a restart bounds its reasons, in the log line that reads it and
// in the recovered result the status shows.
func TestRestartRecordBounded_RINPUT06(t *testing.T) {
	dir := t.TempDir()
	rec := restartRecord{Requests: 3000}
	for range 3000 {
		rec.Reasons = append(rec.Reasons, strings.Repeat("r", 1000))
		rec.Sources = append(rec.Sources, api.SourceAPI)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, restartRecordFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	d := &Daemon{opts: Options{StateDir: dir}, log: zap.New(core)}
	d.coord = newCoordinator(t, d, nil, nil)
	d.loadInterruptedRestart()
	d.completeInterrupted(api.Gateway{State: api.GatewayReady, PID: 7})

	last := d.coord.Status().Last
	if last == nil || last.Requests != 3000 || len(last.Reasons) != restart.MaxReasons || len(last.Sources) != restart.MaxReasons ||
		!strings.HasSuffix(last.Reason, "… (and 2995 earlier requests)") {
		t.Fatalf("recovered result %+v", last)
	}
	for _, r := range last.Reasons {
		if len(r) > restart.MaxReasonLen {
			t.Fatalf("a reason of %d bytes", len(r))
		}
	}
	if b, _ := json.Marshal(last); len(b) > 3000 {
		t.Fatalf("the recovered result is %d bytes", len(b))
	}
	for _, e := range logs.All() {
		buf, _ := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()).EncodeEntry(e.Entry, e.Context)
		if buf.Len() > 1500 {
			t.Fatalf("a log line of %d bytes: %.300s", buf.Len(), buf)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, restartRecordFile)); !os.IsNotExist(err) {
		t.Fatalf("restart.json left behind: %v", err)
	}
}
