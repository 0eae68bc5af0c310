package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/daemon"
	"github.com/schedd/schedd/internal/handoff"
	"github.com/schedd/schedd/internal/platform"
	"github.com/schedd/schedd/internal/server"
	"github.com/schedd/schedd/internal/store/storeid"
)

type runOptions struct {
	*globals
	configPath     string
	stateDir       string
	serviceManager string
	logFormat      string
	logLevel       string
}

func newRunCmd(g *globals) *cobra.Command {
	o := &runOptions{globals: g}
	c := &cobra.Command{
		Use:   "run [flags] [-- COMMAND [ARG...]]",
		Short: "Run the daemon: supervise the gateway until stopped",
		Long: `Run schedd in the foreground and supervise the gateway: start it, wait until it is
ready, restart it with backoff when it dies, stop it gracefully on SIGTERM or ^C.

The gateway command comes from the config file (gateway.command) or after "--";
with "--" no config file is needed at all: every setting has a default.

  schedd run -- ./my-gateway --port 8080
  schedd run --config /etc/schedd/schedd.yaml

Signals: SIGTERM/SIGINT stop (a second one kills the gateway at once),
SIGUSR1 restarts the gateway, SIGHUP reloads the config.

Exit status: 0 stopped cleanly, 1 runtime failure, 2 usage, 73 another schedd
holds the state dir or a store in it is damaged, 78 configuration error.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args)
		},
	}
	f := c.Flags()
	f.StringVarP(&o.configPath, "config", "c", "", "config `FILE` (YAML); see `schedd config example`")
	f.StringVar(&o.stateDir, "state-dir", "", "state `DIR` for the lock, notify socket and store (default "+platform.DefaultStateDir()+")")
	f.StringVar(&o.serviceManager, "service-manager", "auto", "the service manager running schedd: auto|none|systemd|launchd|schtasks")
	f.StringVar(&o.logFormat, "log-format", "", "log format: console|json (default from the config, else console)")
	f.StringVar(&o.logLevel, "log-level", "", "log level: debug|info|warn|error (default from the config, else info)")
	return c
}

func (o *runOptions) run(cmd *cobra.Command, args []string) error {
	// Signals first: a SIGUSR1 or SIGTERM that arrives while we load the config must be
	// queued, not kill us by its default action.
	sigs, stopSignals := platform.Signals()
	defer stopSignals()

	if cmd.ArgsLenAtDash() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q before \"--\"; put the gateway command after \"--\"", args[:cmd.ArgsLenAtDash()])}
	}
	cfg, err := o.loadConfig(args)
	if err != nil {
		return err
	}
	log, level, err := newLogger(cmd, cfg.Log)
	if err != nil {
		return withCode(exitConfig, err)
	}
	defer log.Sync()
	if err := handoff.AwaitPredecessor(log); err != nil { // a successor of `schedd restart --daemon`
		if errors.Is(err, handoff.ErrPredecessorKept) {
			return nil // the predecessor did not hand over: exit quietly
		}
		return err
	}
	inherited := platform.InheritedSockets() // gateway.sockets may pass them on (from:)
	if err := platform.CloseInheritedOnExec(); err != nil {
		log.Warn("could not mark inherited descriptors close-on-exec; the gateway may inherit them", zap.Error(err))
	}
	defer startReaper(log)()

	stateDir := o.stateDir
	if stateDir == "" {
		stateDir = cfg.StateDir
	}
	if stateDir == "" {
		stateDir = platform.DefaultStateDir()
	}
	if stateDir, err = filepath.Abs(stateDir); err != nil {
		return err
	}
	socket := o.socket
	if socket == "" {
		socket = cfg.Control.Socket
	}
	if socket == "" {
		socket = o.socketPath()
	}
	if socket, err = filepath.Abs(socket); err != nil {
		return err
	}
	sm, err := serviceManager(o.serviceManager)
	if err != nil {
		return err
	}

	serveProfiles()
	err = daemon.Run(context.Background(), daemon.Options{
		Config:         cfg,
		StateDir:       stateDir,
		RuntimeDir:     stateDir,
		Socket:         socket,
		ServiceManager: sm,
		Version:        version,
		Logger:         log,
		Signals:        sigs,
		Environ:        os.Environ(),
		LogLevel:       level,
		Reload:         o.reloader(args),
		Inherited:      inherited,
	})
	if _, ok := errors.AsType[*config.Error](err); ok {
		return withCode(exitConfig, err) // a gateway socket that could not be made
	}
	if _, ok := errors.AsType[*platform.LockedError](err); ok {
		return withCode(exitLocked, fmt.Errorf("%w; stop it first, or give this one another --state-dir", err))
	}
	if errors.Is(err, server.ErrInUse) {
		return withCode(exitLocked, fmt.Errorf("%w; stop it first, or give this one another --socket", err))
	}
	if errors.Is(err, storeid.ErrDamaged) {
		return withCode(exitStore, err)
	}
	if errors.Is(err, handoff.ErrRespawnMe) {
		return withCode(exitRespawn, err)
	}
	return err
}

// loadConfig reads --config (if any), puts the command after "--" in place of
// gateway.command, and validates the result. Config problems exit 78.
func (o *runOptions) loadConfig(args []string) (*config.Config, error) {
	var cfg *config.Config
	if o.configPath != "" {
		c, err := config.Load(o.configPath)
		if err != nil {
			return nil, withCode(exitConfig, err)
		}
		cfg = c
	} else {
		cfg = config.Default()
	}
	if len(args) > 0 {
		cfg.Gateway.Command = args
	}
	if len(cfg.Gateway.Command) == 0 {
		return nil, usageError{errors.New("no gateway command: pass it after \"--\" (schedd run -- ./my-gateway) or set gateway.command in a --config file")}
	}
	if err := cfg.Validate(); err != nil {
		return nil, withCode(exitConfig, err)
	}
	return cfg, nil
}

// reloader re-reads the config for SIGHUP exactly as at start (the command after "--"
// still wins); nil without a config file.
func (o *runOptions) reloader(args []string) func() (*config.Config, error) {
	if o.configPath == "" {
		return nil
	}
	return func() (*config.Config, error) { return o.loadConfig(args) }
}

// serviceManager resolves --service-manager.
func serviceManager(flag string) (string, error) {
	switch flag {
	case "none", "systemd", "launchd", "schtasks":
		return flag, nil
	case "auto", "":
		return platform.DetectServiceManager(os.Environ()), nil
	}
	return "", usageError{fmt.Errorf("--service-manager %q: want auto, none, systemd, launchd or schtasks", flag)}
}

// newLogger builds the daemon's logger from the config and the flags, writing to stderr.
// The level is returned so a config reload can change it (unless --log-level fixed it).
func newLogger(cmd *cobra.Command, lc config.Log) (*zap.Logger, *zap.AtomicLevel, error) {
	format, level := lc.Format, lc.Level
	if f := cmd.Flags().Lookup("log-format"); f != nil && f.Changed {
		format = f.Value.String()
	}
	fixed := false
	if f := cmd.Flags().Lookup("log-level"); f != nil && f.Changed {
		level, fixed = f.Value.String(), true
	}
	if level == "" {
		level = "info"
	}
	lvl, err := zap.ParseAtomicLevel(level)
	if err != nil {
		return nil, nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	var enc zapcore.Encoder
	switch format {
	case "json":
		ec := zap.NewProductionEncoderConfig()
		ec.EncodeTime = zapcore.RFC3339NanoTimeEncoder
		enc = zapcore.NewJSONEncoder(ec)
	case "console", "":
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.TimeEncoderOfLayout("2006-01-02T15:04:05.000Z07:00")
		ec.CallerKey, ec.StacktraceKey = "", ""
		enc = zapcore.NewConsoleEncoder(ec)
	default:
		return nil, nil, fmt.Errorf("log format %q: want console or json", format)
	}
	// Each line is written at once, in one write: nothing waits, so nothing is lost at exit
	// or on SIGKILL, and no timer is needed to bound a wait. (A buffer's flush timer would
	// wake the idle daemon several times a second.)
	core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(cmd.ErrOrStderr())), lvl)
	if fixed {
		return zap.New(core), nil, nil
	}
	return zap.New(core), &lvl, nil
}
