// Package daemon wires schedd into one process: it takes the state-dir lock, opens the
// gateway's notify socket and the control socket, runs the supervisor, talks to its own
// service manager (READY, STATUS, STOPPING, WATCHDOG) and turns signals into actions.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/deliveries"
	"github.com/schedd/schedd/internal/handoff"
	"github.com/schedd/schedd/internal/heartbeat"
	"github.com/schedd/schedd/internal/metrics"
	"github.com/schedd/schedd/internal/platform"
	"github.com/schedd/schedd/internal/restart"
	"github.com/schedd/schedd/internal/server"
	"github.com/schedd/schedd/internal/store/postgres"
	"github.com/schedd/schedd/internal/supervisor"
)

// Notifier talks to the service manager that runs schedd (platform.SdNotifier).
type Notifier interface {
	Notify(state string) (bool, error)
	WatchdogInterval() (time.Duration, error)
}

// Options is everything Run needs; cmd/schedd builds it from flags and the config file.
type Options struct {
	Config         *config.Config
	StateDir       string
	RuntimeDir     string // notify socket lives here
	Socket         string // control socket path
	ServiceManager string // systemd|launchd|schtasks|none
	Version        string
	Logger         *zap.Logger
	Notifier       Notifier
	// Signals delivers the signals registered by platform.Signals before anything slow ran.
	Signals <-chan os.Signal
	// Environ is the environment the gateway's is built from (os.Environ()).
	Environ []string
	// Starter replaces how gateway processes are started (tests).
	Starter supervisor.Starter
	// Reload reads the config again for SIGHUP, the way the command line first did (nil:
	// SIGHUP has nothing to re-read).
	Reload func() (*config.Config, error)
	// LogLevel, when set, follows log.level on reload.
	LogLevel *zap.AtomicLevel
	// Inherited are the listening sockets schedd's own service manager gave it, by their
	// LISTEN_FDNAMES name (platform.InheritedSockets); gateway.sockets may pass them on.
	Inherited map[string]*os.File
}

// Daemon is one running schedd.
type Daemon struct {
	opts      Options
	log       *zap.Logger
	sup       *supervisor.Supervisor
	coord     *restart.Coordinator
	startedAt time.Time

	mu  sync.Mutex
	cfg *config.Config // the config in effect

	readyOnce  sync.Once
	restarting atomic.Bool // RELOADING=1 sent; READY=1 is due when the gateway is ready
	// interrupted is the restart an earlier schedd died in, until this one's first start ends.
	interrupted atomic.Pointer[restartRecord]

	notifyPath string // the gateway's NOTIFY_SOCKET ("" when unsupported)
	sockets    *gatewaySockets

	// components are the background parts beside the supervisor (heartbeats, deliveries,
	// cron), added by the setup functions in their own files.
	components []component
	// heartbeats and deliveries take the work of cron's heartbeat_wake and deliver actions.
	heartbeats *heartbeat.Service
	deliveries *deliveries.Service
	cron       cronService // the status page reads its tasks
	// fleetDB is the delivery store when it is a fleet's PostgreSQL database: cron shares it.
	fleetDB *postgres.Store
	// output keeps the gateway's recent output lines for `schedd logs`.
	output *supervisor.OutputRing
	// metrics is nil unless metrics.listen is set (metrics.go).
	metrics   *metrics.Metrics
	metricsLn net.Listener

	stopc    chan string        // stop requests from the control API
	handoffc chan *handoff.Exit // a replacement of schedd itself, once the gateway is stopped
	self     handoff.Replacer   // one replacement of schedd itself at a time (self.go)
}

// component is a background part of the daemon with its own lifecycle. run blocks until
// ctx ends (at the daemon's stop); the optional hooks add its status block, its control
// endpoints and what it does with a reloaded config: prepare builds and checks the
// component's new settings without applying them, and the commit it returns applies them
// (called only once every part of the reload prepared without an error).
type component struct {
	name    string
	run     func(ctx context.Context) error
	status  func(context.Context, *api.Status)
	routes  func(*server.Server)
	prepare func(*config.Config) (commit func(), err error)
}

// Run runs the daemon until a stop signal (or ctx ends): the gateway is stopped gracefully
// and Run returns nil. Errors before the gateway could be supervised are returned: a held
// lock as *platform.LockedError, a live socket as server.ErrInUse.
func Run(ctx context.Context, opts Options) error {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Notifier == nil {
		opts.Notifier = platform.SdNotifier{}
	}
	d := &Daemon{opts: opts, log: opts.Logger, startedAt: time.Now(), cfg: opts.Config,
		stopc: make(chan string, 1), handoffc: make(chan *handoff.Exit, 1)}
	return d.run(ctx)
}

func (d *Daemon) run(ctx context.Context) error {
	o := d.opts
	if err := os.MkdirAll(o.StateDir, 0o700); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	lock, err := platform.LockStateDir(o.StateDir)
	if err != nil {
		return err
	}
	defer lock.Close()

	if err := os.MkdirAll(o.RuntimeDir, 0o700); err != nil {
		return fmt.Errorf("runtime dir: %w", err)
	}
	notifyPath := filepath.Join(o.RuntimeDir, "gateway.notify")
	ns, err := platform.ListenNotify(notifyPath)
	switch {
	case errors.Is(err, platform.ErrNotSupported):
		notifyPath = ""
		d.log.Info("no notify socket on this platform; notify readiness and watchdog are off")
	case err != nil:
		return fmt.Errorf("gateway notify socket: %w", err)
	default:
		defer ns.Close()
	}

	ln, err := server.Listen(o.Socket, 0o600)
	if err != nil {
		return err
	}
	kept := server.Keep(ln, o.Socket, 0o600)
	ln = kept
	defer ln.Close()
	mln, err := d.listenMetrics(o.Config)
	if err != nil {
		return err
	}
	if mln != nil {
		defer mln.Close()
	}

	d.sockets, err = openSockets(o.Config, o.Inherited)
	if err != nil {
		return err
	}
	defer d.sockets.close()

	d.notifyPath = notifyPath
	scfg, err := d.supervisorConfig(o.Config)
	if err != nil {
		return err
	}
	d.output = supervisor.NewOutputRing(o.Config.Gateway.Output.KeepLines)
	sopts := []supervisor.Option{supervisor.WithLogger(d.log), supervisor.OnStateChange(d.stateChanged),
		supervisor.WithOutputRing(d.output), supervisor.OnStopWait(d.extendTimeout)}
	if o.Starter != nil {
		sopts = append(sopts, supervisor.WithStarter(o.Starter))
	}
	d.sup, err = supervisor.New(scfg, sopts...)
	if err != nil {
		return err
	}
	rcfg, err := d.restartConfig(o.Config)
	if err != nil {
		return err
	}
	d.coord, err = restart.New(rcfg, supRestarter{d}, d.log.Named("restart"), restart.Hooks{
		OnPending: d.restartPending,
		OnBegin:   d.restartBegins,
		OnEnd: func(r api.RestartResult) {
			d.metrics.RestartEnded(r)
			d.restartEnds(r)
		},
	})
	if err != nil {
		return err
	}
	d.loadInterruptedRestart()
	for _, setup := range []func() (*component, error){d.setupMetrics, d.setupHeartbeat, d.setupDeliveries, d.setupCron} {
		c, err := setup()
		if err != nil {
			return err
		}
		if c != nil {
			d.components = append(d.components, *c)
		}
	}

	d.log.Info("schedd started", zap.String("version", o.Version), zap.Int("pid", os.Getpid()),
		zap.String("state_dir", o.StateDir), zap.String("socket", o.Socket),
		zap.String("service_manager", o.ServiceManager), zap.String("config", o.Config.Path))

	supCtx, stopSup := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSup()
	bg, bgCancel := context.WithCancel(context.WithoutCancel(ctx))
	var g errgroup.Group
	g.Go(func() error {
		srv := server.New(server.Options{
			Backend:        d,
			Logger:         d.log.Named("control"),
			MaxBody:        int64(o.Config.Control.MaxBody),
			RequestTimeout: o.Config.Control.RequestTimeout.D(),
			PeerCheck:      platform.CheckPeerIsOwner,
		})
		d.routes(srv)
		for _, c := range d.components {
			if c.routes != nil {
				c.routes(srv)
			}
		}
		return srv.Serve(bg, ln)
	})
	if ns != nil {
		g.Go(func() error { d.readNotify(bg, ns); return nil })
	}
	g.Go(func() error { d.keepSockets(bg, kept, ns); return nil })
	g.Go(func() error { d.watchdog(bg); return nil })

	supDone := make(chan error, 1)
	go func() { supDone <- d.sup.Run(supCtx) }()
	coordCtx, stopCoord := context.WithCancel(context.WithoutCancel(ctx))
	defer stopCoord()
	coordDone := make(chan error, 1)
	go func() { coordDone <- d.coord.Run(coordCtx) }()
	compCtx, stopComps := context.WithCancel(context.WithoutCancel(ctx))
	defer stopComps()
	var comps errgroup.Group
	for _, c := range d.components {
		comps.Go(func() error {
			if err := c.run(compCtx); err != nil && !errors.Is(err, context.Canceled) {
				d.log.Error("component failed", zap.String("component", c.name), zap.Error(err))
				return fmt.Errorf("%s: %w", c.name, err)
			}
			return nil
		})
	}

	stopping := false
	stop := func(why string) {
		if stopping {
			return
		}
		stopping = true
		d.log.Info("stopping", zap.String("why", why))
		d.notify("STOPPING=1")
		stopCoord() // a pending restart is cancelled; the stop wins over one in progress
		stopComps()
		stopSup()
	}
	var supErr error
	var last *handoff.Exit
loop:
	for {
		select {
		case supErr = <-supDone:
			break loop
		case <-ctx.Done():
			stop("context ended")
		case why := <-d.stopc:
			stop(why)
		case h := <-d.handoffc:
			if !stopping {
				last = h
				stop(h.Why)
			}
		case sig := <-o.Signals:
			switch {
			case platform.IsTerminate(sig):
				if stopping {
					d.log.Warn("second stop signal; killing the gateway now", zap.String("signal", platform.SignalName(sig)))
					kctx, cancel := context.WithTimeout(context.Background(), time.Second)
					_ = d.sup.Kill(kctx)
					cancel()
					continue
				}
				stop("signal " + platform.SignalName(sig))
			case platform.IsRestart(sig):
				if stopping {
					continue
				}
				if !on(d.config().Restart.AllowSignal, true) {
					d.log.Warn("SIGUSR1 restart ignored: restart.allow_signal is false; use `schedd restart`")
					continue
				}
				d.coord.Request(restart.Request{Reason: platform.SignalName(sig), Source: api.SourceSignal})
			case platform.IsReload(sig):
				if !stopping {
					d.reload()
				}
			}
		}
	}
	stopCoord()
	stopComps()
	d.output.Close() // ends `schedd logs -f` streams, which the server's shutdown waits for
	bgCancel()
	err = errors.Join(supErr, <-coordDone, comps.Wait(), ignoreClosed(g.Wait()))
	d.forgetRestart() // a stop ends any restart in progress: none is left to complete
	if last != nil && err == nil {
		// Release the lock and the sockets before the successor needs them.
		ln.Close()
		lock.Close()
		return last.Run() // handoff.ErrRespawnMe asks the service manager for a fresh process
	}
	return err
}

func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// readNotify passes the gateway's notify messages to the supervisor.
func (d *Daemon) readNotify(ctx context.Context, ns *platform.NotifySocket) {
	go func() { <-ctx.Done(); ns.Close() }()
	for {
		m, err := ns.Recv()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				d.log.Warn("gateway notify socket", zap.Error(err))
				continue
			}
			return
		}
		d.sup.HandleNotify(ctx, m)
	}
}

// keepSockets binds the control socket and the gateway's notify socket again when their
// files are gone (R-ENV-07): without them the CLI cannot reach schedd, and the gateway's
// READY=1 and WATCHDOG=1 go nowhere, so its watchdog would kill it. It waits on their
// directories' removals (inotify; a look every server.KeepEvery elsewhere).
func (d *Daemon) keepSockets(ctx context.Context, ctl *server.KeptListener, ns *platform.NotifySocket) {
	dirs := []string{filepath.Dir(ctl.Addr().String())}
	if ns != nil && filepath.Dir(ns.Path()) != dirs[0] {
		dirs = append(dirs, filepath.Dir(ns.Path()))
	}
	var ctlFailing, nsFailing bool
	platform.WatchRemovals(ctx, dirs, server.KeepEvery, func() {
		if ctx.Err() != nil { // the stop closes the sockets and removes their files
			return
		}
		ok, err := ctl.Check()
		server.ReportRebind(d.log.Named("control"), "the control socket", ctl.Addr().String(), ok, err, &ctlFailing)
		if ns != nil {
			ok, err := ns.Rebind()
			server.ReportRebind(d.log, "the gateway's notify socket", ns.Path(), ok, err, &nsFailing)
		}
	})
}

// watchdog feeds our own service manager's watchdog at half its interval, but only while
// the supervision loop answers: a wedged loop lets the service manager restart us.
func (d *Daemon) watchdog(ctx context.Context) {
	iv, err := d.opts.Notifier.WatchdogInterval()
	if err != nil {
		d.log.Warn("service manager watchdog", zap.Error(err))
		return
	}
	if iv <= 0 {
		return
	}
	d.log.Info("feeding the service manager watchdog", zap.Duration("every", iv/2))
	t := time.NewTicker(iv / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, iv/4)
			err := d.sup.Ping(pctx)
			cancel()
			if err != nil {
				d.log.Warn("supervision loop did not answer; not feeding the watchdog", zap.Error(err))
				continue
			}
			d.notify("WATCHDOG=1")
		}
	}
}

// stateChanged tells the service manager about the gateway (called by the supervisor):
// READY=1 the first time it is ready, and again when it is ready after a restart that
// began with RELOADING=1.
func (d *Daemon) stateChanged(st api.Gateway) {
	d.metrics.Gateway(st)
	d.completeInterrupted(st)
	d.notify("STATUS=" + statusLine(st))
	if st.State != api.GatewayReady {
		return
	}
	first := false
	d.readyOnce.Do(func() { first = true })
	if first || d.restarting.CompareAndSwap(true, false) {
		if d.notify("READY=1") && first {
			d.log.Info("told the service manager schedd is ready")
		}
	}
}

// extendTimeout asks the service manager for at least left more time while the gateway
// drains, so a long but finite drain is not killed by its stop (or reload) timeout.
func (d *Daemon) extendTimeout(left time.Duration) {
	d.notify(fmt.Sprintf("EXTEND_TIMEOUT_USEC=%d", left.Microseconds()))
}

// notify sends state to the service manager; false when there is none to tell (no
// NOTIFY_SOCKET) or the send failed.
func (d *Daemon) notify(state string) bool {
	sent, err := d.opts.Notifier.Notify(state)
	if err != nil {
		d.log.Warn("notify service manager", zap.String("state", state), zap.Error(err))
	}
	return sent && err == nil
}

// statusLine is the one-line STATUS= text for a gateway state.
func statusLine(st api.Gateway) string {
	switch st.State {
	case api.GatewayReady:
		return fmt.Sprintf("gateway ready (pid %d)", st.PID)
	case api.GatewayStarting:
		return "gateway starting"
	case api.GatewayStopping:
		return fmt.Sprintf("gateway stopping (pid %d)", st.PID)
	case api.GatewayBackoff, api.GatewayCrashLooping:
		s := "gateway down, restarting"
		if st.State == api.GatewayCrashLooping {
			s = "gateway crash looping"
		}
		if !st.NextStartAt.IsZero() {
			s += fmt.Sprintf("; next start in %s", time.Until(st.NextStartAt).Round(time.Millisecond))
		}
		return s
	case api.GatewayFailed:
		s := "gateway failed"
		if e := st.LastExit; e != nil && e.Code != nil {
			s += fmt.Sprintf(" (exit code %d)", *e.Code)
		}
		return s + "; not restarted until schedd restart or a config reload"
	}
	return "gateway " + string(st.State)
}

// Status implements server.Backend.
func (d *Daemon) Status(ctx context.Context) api.Status {
	o := d.opts
	rs := d.coord.Status()
	st := api.Status{
		Schedd: api.Daemon{
			PID:            os.Getpid(),
			Version:        o.Version,
			StartedAt:      d.startedAt,
			ServiceManager: o.ServiceManager,
			ConfigPath:     d.config().Path,
			StateDir:       o.StateDir,
			Socket:         o.Socket,
			Goroutines:     runtime.NumGoroutine(),
		},
		Gateway: d.sup.Status(),
		Restart: &rs,
	}
	for _, c := range d.components {
		if c.status != nil {
			c.status(ctx, &st)
		}
	}
	return st
}
