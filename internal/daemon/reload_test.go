package daemon

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/platform"
	"github.com/schedd/schedd/internal/supervisor"
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

// reloadComponent prepares c for next and, when it took it, commits.
func reloadComponent(c *component, next *config.Config) error {
	commit, err := c.prepare(next)
	if err != nil {
		return err
	}
	commit()
	return nil
}

// A reload prepares every part before it applies any: when the last component refuses the
// new config, the parts before it (here the heartbeat) and the daemon's own config stay as
// they were, so the status never shows a config that is half applied.
func TestReloadPreparesEveryPartFirst(t *testing.T) {
	load := func(every string) *config.Config {
		c, err := config.Parse("schedd.yaml", []byte(`
gateway: {command: [gw]}
heartbeat:
  defaults:
    every: `+every+`
    target: {http: {url: "http://127.0.0.1:1/wake"}}
  agents: [{id: main}]
`))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	old, next := load("30m"), load("1h")
	d := &Daemon{opts: Options{StateDir: t.TempDir(), Config: old, Notifier: platform.SdNotifier{},
		Reload: func() (*config.Config, error) { return next, nil }}, log: zap.NewNop(), cfg: old,
		sockets: &gatewaySockets{}, output: supervisor.NewOutputRing(10)}
	scfg, err := d.supervisorConfig(old)
	if err != nil {
		t.Fatal(err)
	}
	if d.sup, err = supervisor.New(scfg); err != nil {
		t.Fatal(err)
	}
	d.coord = newCoordinator(t, d, old, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go d.coord.Run(ctx) //nolint:errcheck // ends with the test
	hb, err := d.setupHeartbeat()
	if err != nil {
		t.Fatal(err)
	}
	committed := false
	d.components = []component{*hb, {name: "last", prepare: func(*config.Config) (func(), error) {
		return func() { committed = true }, errors.New("refused")
	}}}
	every := func() string {
		var st api.Status
		hb.status(t.Context(), &st)
		if st.Heartbeat == nil || len(st.Heartbeat.Agents) != 1 {
			t.Fatalf("heartbeat status = %+v", st.Heartbeat)
		}
		return st.Heartbeat.Agents[0].Every
	}
	if got := every(); got != "30m" {
		t.Fatalf("before the reload: every %s", got)
	}
	d.reload()
	if got := every(); got != "30m" || d.config() != old || committed {
		t.Fatalf("after a refused reload: heartbeat every %s, config replaced %v, last committed %v",
			got, d.config() != old, committed)
	}
	// The same reload, the last part willing: every part takes it.
	d.components[1].prepare = func(*config.Config) (func(), error) { return func() { committed = true }, nil }
	d.reload()
	if got := every(); got != "1h" || d.config() != next || !committed {
		t.Fatalf("after the reload: heartbeat every %s, config replaced %v, last committed %v",
			got, d.config() == next, committed)
	}
}
