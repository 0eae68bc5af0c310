package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedd/schedd/internal/client"
	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/platform"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes (the contract in docs/service.md, "Exit codes").
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitLocked  = 73 // another schedd holds the state dir
	// exitStore shares 73 with exitLocked: the state dir cannot be used as it is, and
	// restarting schedd would not change that. A store in it is damaged, or missing
	// where its files show that it was.
	exitStore   = 73
	exitRespawn = 75 // "start me again" for the service manager
	exitConfig  = 78 // configuration error: do not restart
)

// exitError carries an exit code to Main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// globals are the flags every client command shares.
type globals struct {
	socket string
}

// call asks the daemon for a T with do, on a client of the control socket, bounded by
// timeout.
func call[T any](cmd *cobra.Command, g *globals, timeout time.Duration, do func(context.Context, *client.Client) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
	defer cancel()
	cl := g.client()
	defer cl.Close()
	return do(ctx, cl)
}

// show gets a T from the daemon with get and prints it: as JSON with asJSON, else with print.
func show[T any](cmd *cobra.Command, g *globals, get func(context.Context, *client.Client) (T, error), asJSON bool, print func(io.Writer, T, time.Time)) error {
	v, err := call(cmd, g, 30*time.Second, get)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), v)
	}
	print(cmd.OutOrStdout(), v, time.Now())
	return nil
}

// client returns a client for the control socket; the caller closes it.
func (g *globals) client() *client.Client { return client.New(g.socketPath()) }

// socketPath resolves the control socket: --socket, $SCHEDD_SOCKET, then the default.
func (g *globals) socketPath() string {
	if g.socket != "" {
		return g.socket
	}
	if s := os.Getenv("SCHEDD_SOCKET"); s != "" {
		return s
	}
	return defaultSocket()
}

func defaultSocket() string { return platform.DefaultSocket() }

// socketRule says how this platform picks the default socket, for --help.
func socketRule() string {
	switch runtime.GOOS {
	case "windows":
		return `%ProgramData%\schedd\schedd.sock`
	case "darwin":
		return "/var/run/schedd/schedd.sock for root, else\n~/Library/Application Support/schedd/schedd.sock"
	}
	return "/run/schedd/schedd.sock for root,\n$XDG_RUNTIME_DIR/schedd/schedd.sock for other users, and without XDG_RUNTIME_DIR\n" +
		"~/.local/state/schedd/schedd.sock (under $XDG_STATE_HOME when set)"
}

// Main runs the CLI with args and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "schedd:", safeText(err.Error()))
	if ee, ok := errors.AsType[*exitError](err); ok {
		return ee.code
	}
	if _, ok := errors.AsType[config.Errors](err); ok {
		return exitConfig
	}
	if _, ok := errors.AsType[*config.Error](err); ok {
		return exitConfig
	}
	if _, ok := errors.AsType[usageError](err); ok {
		return exitUsage
	}
	return exitFailure
}

// usageError marks a command-line mistake (exit 2).
type usageError struct{ error }

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "schedd",
		Short: "Supervise a gateway process: restarts, heartbeats, durable deliveries and cron jobs",
		Long: `schedd owns one long-running gateway process and everything about it that depends
on time: it starts it, knows when it is ready and alive, stops it gracefully and
restarts it with backoff when it dies.

Start supervising a command with no config file:

  schedd run -- ./my-gateway --port 8080

Then, from another terminal:

  schedd status            # what the gateway is doing
  schedd config example    # a commented config file with every setting

Client commands reach the daemon on --socket, else $SCHEDD_SOCKET, else the default
socket, the one schedd run binds: ` + socketRule() + `.
Here that is ` + defaultSocket() + `.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see `%s --help`)", err, c.CommandPath())}
	})
	root.PersistentFlags().StringVar(&g.socket, "socket", "", "control socket `PATH` (default $SCHEDD_SOCKET, else "+defaultSocket()+")")
	group(root)
	root.AddCommand(
		newRunCmd(g),
		newStatusCmd(g),
		newRestartCmd(g),
		newStopCmd(g),
		newHeartbeatCmd(g),
		newDeliveriesCmd(g),
		newCronCmd(g),
		newTasksCmd(g),
		newLogsCmd(g),
		newVersionCmd(),
		newConfigCmd(),
		newInstallCmd(), newUninstallCmd(), newRespawnHelperCmd(g), newManCmd(),
	)
	return root
}

// group makes c a command that only holds subcommands: alone it prints its help, and
// anything else is an unknown command, a usage error (exit 2).
func group(c *cobra.Command) {
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageError{fmt.Errorf("unknown command %q for %s (see `%s --help`)", args[0], cmd.CommandPath(), cmd.CommandPath())}
		}
		return nil
	}
	c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
}

// noArgs is cobra.NoArgs with a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args)}
	}
	return nil
}
