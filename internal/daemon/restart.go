package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/platform"
	"github.com/schedd/schedd/internal/probe"
	"github.com/schedd/schedd/internal/restart"
	"github.com/schedd/schedd/internal/supervisor"
)

// on reads an optional switch.
func on(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// config returns the config in effect.
func (d *Daemon) config() *config.Config {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg
}

// supervisorConfig builds the supervisor's settings from c.
func (d *Daemon) supervisorConfig(c *config.Config) (supervisor.Config, error) {
	scfg, err := SupervisorConfig(c, d.opts.Environ)
	if err != nil {
		return scfg, err
	}
	scfg.NotifySocket = d.notifyPath
	scfg.ControlSocket = d.opts.Socket
	scfg.PIDFile = filepath.Join(d.opts.StateDir, "gateway.pid")
	if d.sockets != nil {
		scfg.Sockets = d.sockets.socks
		if len(d.sockets.socks) == 0 {
			scfg.Overlap = false // restart.overlap came with a reload: no sockets to share
		}
	}
	return scfg, nil
}

// restartConfig builds the coordinator's settings from c, and refuses them as the
// coordinator would, so a reload fails before anything is applied.
func (d *Daemon) restartConfig(c *config.Config) (restart.Config, error) {
	r := c.Restart
	rc := restart.Config{
		Delay:    r.Delay.D(),
		Cooldown: r.Cooldown.D(),
		Method:   restart.Method(r.Method),
		Poll:     r.DeferUntilIdle.Poll.D(),
		MaxWait:  r.DeferUntilIdle.MaxWait.D(),
	}
	if idle := r.DeferUntilIdle.Idle; idle != nil && on(r.DeferUntilIdle.Enabled, true) {
		rc.ProbeTimeout = idle.Timeout.D()
		switch {
		case idle.Notify != nil:
			rc.Idle = notifyCounter{d}
		case idle.HTTP != nil:
			rc.Idle = probe.HTTP{URL: idle.HTTP.URL, Pointer: idle.HTTP.InflightPointer, Headers: idle.HTTP.Headers}
		case idle.Exec != nil:
			rc.Idle = probe.Exec{Argv: idle.Exec.Command, Env: platform.ChildEnv(d.opts.Environ, nil)}
		case idle.OpenClaw != nil:
			oc := openclawProbe(c, d.opts.Environ)
			rc.Idle = oc
			if on(r.DeferUntilIdle.Fence, false) {
				rc.Fence = oc
			}
		}
	}
	if rc.Method == restart.MethodSignal {
		if _, err := platform.ParseSignal(r.Signal); err != nil {
			return rc, fmt.Errorf("restart.signal: %w", err)
		}
	}
	return rc, rc.Check()
}

// openclawProbe is the openclaw idle probe. Its CLI runs with the gateway's environment
// (gateway.env applied), so it reads the gateway's config file and state directory.
func openclawProbe(c *config.Config, environ []string) probe.OpenClaw {
	o := c.Restart.DeferUntilIdle.Idle.OpenClaw
	set, unset := c.Gateway.EnvSplit()
	return probe.OpenClaw{Command: o.Command, Port: o.Port, URL: o.URL,
		Env: platform.ChildEnv(platform.WithoutKeys(environ, unset), set)}
}

// errNoInflight is the notify idle check's answer before the gateway has said anything.
var errNoInflight = errors.New("the gateway has not reported X_SCHEDD_INFLIGHT")

// notifyCounter is the `notify` idle probe: the gateway's last X_SCHEDD_INFLIGHT=N.
type notifyCounter struct{ d *Daemon }

func (n notifyCounter) Inflight(context.Context) (int, error) {
	st := n.d.sup.Status()
	if st.Inflight == nil {
		return 0, errNoInflight
	}
	return *st.Inflight, nil
}

// supRestarter performs the coordinator's restarts with the supervisor.
type supRestarter struct{ d *Daemon }

func (s supRestarter) Restart(ctx context.Context, m restart.Method) (restart.Outcome, error) {
	var res supervisor.RestartResult
	var err error
	if m == restart.MethodSignal {
		sig, perr := platform.ParseSignal(s.d.config().Restart.Signal)
		if perr != nil {
			return restart.Outcome{}, perr
		}
		res, err = s.d.sup.Reload(ctx, sig)
	} else {
		res, err = s.d.sup.Restart(ctx)
	}
	return restart.Outcome{OK: res.OK, PID: res.PID, PreviousPID: res.PreviousPID, Error: res.Error}, err
}

// restartBegins tells the service manager that schedd is reloading; READY=1 follows once
// the gateway is ready again (stateChanged).
func (d *Daemon) restartBegins(p api.RestartPending) {
	d.restarting.Store(true)
	d.recordRestart(p)
	msg := "RELOADING=1\nSTATUS=restarting the gateway: " + restart.JoinReasons(p.Reasons, p.Requests)
	if mu := (platform.SdNotifier{}).MonotonicUsec(); mu != "" {
		msg += "\n" + strings.TrimSuffix(mu, "\n")
	}
	d.notify(msg)
}

// restartPending tells the service manager about a restart that waits.
func (d *Daemon) restartPending(p api.RestartPending) {
	d.notify("STATUS=" + pendingLine(p, time.Now()))
}

// pendingLine is the STATUS= text for a pending restart.
func pendingLine(p api.RestartPending, now time.Time) string {
	reasons := restart.JoinReasons(p.Reasons, p.Requests)
	switch {
	case p.FollowUp:
		return fmt.Sprintf("restart in progress; another is queued (%s)", reasons)
	case p.DeferredSince != nil:
		busy := "busy"
		switch {
		case p.Fence != nil:
			busy = "admission closed: " + p.Fence.Status
		case p.IdleDetail != nil && p.IdleDetail.Summary != "":
			busy = p.IdleDetail.Summary
		case p.Inflight != nil:
			busy = fmt.Sprintf("%d in flight", *p.Inflight)
		}
		return fmt.Sprintf("restart pending (%s): waiting for the gateway to be idle (%s), forced in %s",
			reasons, busy, p.DeadlineAt.Sub(now).Round(time.Second))
	}
	return fmt.Sprintf("restart pending (%s) in %s", reasons, p.DueAt.Sub(now).Round(time.Millisecond))
}

// reload applies a changed config file (SIGHUP). An invalid file changes nothing. A changed
// gateway command, environment or working dir becomes a restart request; the other
// settings apply without one (gateway settings at its next start), except those read only
// when schedd starts, which the log names.
func (d *Daemon) reload() {
	if d.opts.Reload == nil {
		d.log.Info("SIGHUP: nothing to reload (no config file)")
		return
	}
	next, err := d.opts.Reload()
	if err != nil {
		d.log.Error("config reload failed; keeping the config in effect", zap.Error(err))
		d.notify("STATUS=config reload failed: " + firstLine(err.Error()))
		return
	}
	// Prepare every part first; only when all of them took the new config is it applied,
	// so a part that refuses it never leaves the others (and the status) half reloaded.
	commits, err := d.prepareReload(next)
	if err != nil {
		d.log.Error("config reload failed; keeping the config in effect", zap.Error(err))
		d.notify("STATUS=config reload failed: " + firstLine(err.Error()))
		return
	}
	d.mu.Lock()
	prev := d.cfg
	d.cfg = next
	d.mu.Unlock()
	d.sockets.changed(d.log, next.Gateway.Sockets)
	d.output.Resize(next.Gateway.Output.KeepLines)
	for _, commit := range commits {
		commit()
	}
	if d.opts.LogLevel != nil {
		if lvl, err := zap.ParseAtomicLevel(next.Log.Level); err == nil {
			d.opts.LogLevel.SetLevel(lvl.Level())
		}
	}
	if later := startOnlyChanges(prev, next); len(later) > 0 {
		d.log.Warn("settings changed that apply only when schedd starts again", zap.Strings("settings", later),
			zap.String("state_dir", d.opts.StateDir), zap.String("socket", d.opts.Socket))
	}
	changed := gatewayChanges(prev.Gateway, next.Gateway)
	d.log.Info("config reloaded", zap.String("path", next.Path), zap.Strings("gateway_changes", changed))
	if len(changed) > 0 {
		d.coord.Request(restart.Request{Reason: "config changed: " + strings.Join(changed, ", "), Source: api.SourceConfig})
	}
}

// prepareReload builds every part's settings from next without applying any, and returns
// what applies them, in order: the supervisor's, the restart coordinator's, then each
// component's.
func (d *Daemon) prepareReload(next *config.Config) ([]func(), error) {
	scfg, err := d.supervisorConfig(next)
	if err == nil {
		err = scfg.Check()
	}
	if err != nil {
		return nil, err
	}
	rcfg, err := d.restartConfig(next)
	if err != nil {
		return nil, err
	}
	commits := []func(){
		func() {
			if err := d.sup.Reconfigure(scfg); err != nil {
				d.log.Error("config reload: the supervisor kept its old settings", zap.Error(err))
			}
		},
		func() {
			if err := d.coord.Reconfigure(rcfg); err != nil {
				d.log.Error("config reload: restarts keep their old settings", zap.Error(err))
			}
		},
	}
	for _, c := range d.components {
		if c.prepare == nil {
			continue
		}
		commit, err := c.prepare(next)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		commits = append(commits, commit)
	}
	return commits, nil
}

// startOnlyChanges names the settings outside the components (which name their own) that
// differ between a and b and are read only when schedd starts: where its state and its
// socket are, the control API's limits and the log format.
func startOnlyChanges(a, b *config.Config) []string {
	var out []string
	for _, s := range []struct {
		name    string
		changed bool
	}{
		{"state_dir", a.StateDir != b.StateDir},
		{"control.socket", a.Control.Socket != b.Control.Socket},
		{"control.max_body", a.Control.MaxBody != b.Control.MaxBody},
		{"control.request_timeout", a.Control.RequestTimeout != b.Control.RequestTimeout},
		{"log.format", a.Log.Format != b.Log.Format},
	} {
		if s.changed {
			out = append(out, s.name)
		}
	}
	return out
}

// gatewayChanges names what changed among the settings that need a new gateway process.
func gatewayChanges(a, b config.Gateway) []string {
	var out []string
	if !slices.Equal(a.Command, b.Command) {
		out = append(out, "gateway.command")
	}
	if !maps.EqualFunc(a.Env, b.Env, func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }) {
		out = append(out, "gateway.env")
	}
	if a.Workdir != b.Workdir {
		out = append(out, "gateway.workdir")
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
