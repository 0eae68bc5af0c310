package supervisor

import (
	"context"
	"os"
	"time"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/backoff"
	"github.com/schedd/schedd/internal/platform"
	"github.com/schedd/schedd/internal/probe"
)

// failure reports whether an exit counts toward backoff and the crash loop.
func failure(e api.Exit) bool {
	switch e.Reason {
	case api.ExitRestart, api.ExitStop, api.ExitKilledAfterTimeout:
		return false
	}
	return true
}

// Proc is a started gateway process; *platform.Process is the real one.
type Proc interface {
	PID() int
	Signal(sig os.Signal) error       // to the whole process group
	SignalLeader(sig os.Signal) error // to the gateway's own pid alone
	Kill() error
	Done() <-chan struct{}
	ExitStatus() platform.ExitStatus
	KillGroupAndWait(ctx context.Context) error
	Release() error
}

// Starter starts gateway processes.
type Starter interface {
	Start(cmd platform.Command) (Proc, error)
}

// PlatformStarter starts real processes through internal/platform.
type PlatformStarter struct{}

// Start implements Starter.
func (PlatformStarter) Start(cmd platform.Command) (Proc, error) {
	p, err := platform.Start(cmd)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Readiness says how the supervisor learns that a new gateway is ready.
// With neither Notify nor Probe, a gateway is ready once it has started.
type Readiness struct {
	Notify  bool          // wait for READY=1 on the notify socket
	Probe   probe.Checker // poll until it passes
	Timeout time.Duration // a start that is not ready by then failed; 0 waits forever
}

// Liveness says how the supervisor notices a hung gateway.
type Liveness struct {
	// Watchdog is the WATCHDOG_USEC given to the gateway: it must send WATCHDOG=1 at least
	// this often. 0 turns the notify watchdog off.
	Watchdog time.Duration
	Probe    probe.Checker // checked every Every, each check bounded by Timeout
	Every    time.Duration
	Timeout  time.Duration
	// Failures is how many missed watchdog periods or failed checks in a row end in a kill;
	// the ones before it are logged as warnings.
	Failures int
}

// Socket is one listening socket passed to the gateway, under its LISTEN_FDNAMES name.
type Socket struct {
	Name string
	File *os.File
}

// Config is everything the supervisor needs to run one gateway.
type Config struct {
	Argv    []string
	Env     map[string]string // set in the gateway's environment over BaseEnv
	Unset   []string          // removed from BaseEnv (a null in gateway.env)
	BaseEnv []string          // the environment to start from (os.Environ()); it is scrubbed
	Dir     string

	// NotifySocket is the path given to the gateway as NOTIFY_SOCKET ("" = none).
	NotifySocket string
	// ControlSocket is the path given to the gateway as SCHEDD_SOCKET ("" = none).
	ControlSocket string

	Readiness Readiness
	Liveness  Liveness

	// PIDFile, when set, holds the running gateway's pid and start time, so that the next
	// schedd can stop a gateway this one could not (R-SUP-01).
	PIDFile string

	// Ports are the TCP addresses the gateway binds (host:port). Before each start schedd
	// waits up to PortWait for every one of them to be free; none, no wait.
	// PortsFrom says where the list came from, for the log line of a port that stays busy
	// (the setting to change).
	Ports     []string
	PortsFrom string
	// Sockets are listening sockets every start passes on with systemd's protocol (fds
	// from 3, LISTEN_FDS, LISTEN_FDNAMES, LISTEN_PID): the caller made them, keeps them
	// open across starts and closes them. Unix only.
	Sockets []Socket
	// Overlap makes a restart start the new gateway on Sockets while the old one still
	// serves, and stop the old one only once the new one is ready (restart.overlap).
	Overlap bool

	StopSignal  os.Signal     // required
	StopTimeout time.Duration // then SIGKILL to the whole group; 0: at once
	// StopMain sends the stop signal, and the signal of a restart in process, to the
	// gateway's own pid alone (gateway.stop.scope: main): its children are its own to stop.
	// The whole group still gets SIGKILL at the stop timeout, and what is left of it once
	// the gateway has exited is killed as ever (systemd's KillMode=mixed).
	StopMain bool

	// SignalDownWait bounds how long a restart in process (Reload) with a readiness probe
	// waits for that probe to fail before it waits for it to pass again
	// (restart.signal_down_wait); 0 waits for it to pass at once.
	SignalDownWait time.Duration

	// NoRestartExitCodes are exit codes after which the gateway is not started again: it
	// stays failed, with its last output lines in the status, until Restart, Reload or
	// Reconfigure (gateway.no_restart_exit_codes).
	NoRestartExitCodes []int

	Backoff    backoff.Policy
	ResetAfter time.Duration // ready this long resets the failure count

	CrashLoopFailures int           // failures within CrashLoopWindow that mean crash_looping (>= 1)
	CrashLoopWindow   time.Duration // > 0

	// MaxLinesPerSecond caps how many lines of gateway output are logged; the rest are
	// counted and reported as dropped (>= 1).
	MaxLinesPerSecond int
}
