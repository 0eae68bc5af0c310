package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/spf13/cobra"

	"github.com/schedd/schedd/internal/config"
	"github.com/schedd/schedd/internal/platform"
)

// installOptions are the flags of `schedd install` and `schedd uninstall`.
type installOptions struct {
	manager string
	user    bool
	print   bool
	config  string
	binary  string
	root    string
	noStart bool
	notes   []string // what the config asks that install does not do, for stderr
}

func (o *installOptions) bindCommon(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&o.manager, "manager", defaultManager(), "service manager: systemd|launchd|schtasks")
	f.BoolVar(&o.user, "user", false, "a per-user service (systemd --user, a LaunchAgent, a logon task) instead of a system one")
	f.StringVar(&o.root, "root", "", "write and remove files under `DIR` and leave the service manager alone (packaging, tests)")
}

func newInstallCmd() *cobra.Command {
	o := &installOptions{}
	c := &cobra.Command{
		Use:   "install [--manager systemd|launchd|schtasks] [--user] [--print]",
		Short: "Install schedd as a service of systemd, launchd or the Windows Task Scheduler",
		Long: `Write the systemd unit, launchd plist or Windows task that runs schedd, register it
with its service manager, and start it. The file passes --service-manager and
--config to schedd run, so schedd never has to guess who runs it. A missing config file
is created from ` + "`schedd config example`" + `; an existing one is kept, and its
gateway.stop.timeout sets the service manager's stop budget. A gateway.sockets entry
with from: NAME and listen: ADDRESS also gets a systemd socket unit, schedd.socket,
started before the service so that the port outlives a restart of schedd itself.

Installing again is safe: an unchanged file leaves the running service alone, a changed
one is reloaded. --print shows the file and changes nothing.

  sudo schedd install                 # systemd on Linux, launchd on macOS
  schedd install --user               # a per-user service
  schedd install --print --manager launchd`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.install(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.bindCommon(c)
	f := c.Flags()
	f.BoolVar(&o.print, "print", false, "print the service file and change nothing")
	f.StringVar(&o.config, "config", "", "config `FILE` the service runs with (default per manager, e.g. /etc/schedd/schedd.yaml)")
	f.StringVar(&o.binary, "binary", "", "schedd `PATH` the service runs (default: this binary)")
	f.BoolVar(&o.noStart, "no-start", false, "register the service to start at boot or logon, but do not start it now")
	return c
}

func defaultManager() string {
	switch runtime.GOOS {
	case "darwin":
		return platform.ManagerLaunchd
	case "windows":
		return platform.ManagerSchtasks
	}
	return platform.ManagerSystemd
}

func pathEnv() platform.PathEnv {
	home, _ := os.UserHomeDir()
	return platform.PathEnv{
		Home:        home,
		ConfigHome:  os.Getenv("XDG_CONFIG_HOME"),
		ProgramData: os.Getenv("ProgramData"),
		AppData:     os.Getenv("APPDATA"),
	}
}

// spec resolves the flags into what the service file is rendered from and where it goes;
// without render only the names and paths are filled in.
func (o *installOptions) spec(render bool) (platform.ServiceSpec, platform.ServicePaths, error) {
	switch o.manager {
	case platform.ManagerSystemd, platform.ManagerLaunchd, platform.ManagerSchtasks:
	default:
		return platform.ServiceSpec{}, platform.ServicePaths{}, usageError{fmt.Errorf("--manager %q: want systemd, launchd or schtasks", o.manager)}
	}
	paths := platform.DefaultServicePaths(o.manager, o.user, pathEnv())
	s := platform.ServiceSpec{Manager: o.manager, User: o.user, Binary: o.binary, Config: o.config, LogPath: paths.Log}
	if s.Config == "" {
		s.Config = paths.Config
	}
	if !render {
		return s, paths, nil
	}
	if s.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return s, paths, fmt.Errorf("find this binary (give --binary): %w", err)
		}
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
		s.Binary = exe
	}
	if o.manager == platform.ManagerSchtasks && o.user {
		u, err := user.Current()
		if err != nil {
			return s, paths, fmt.Errorf("current user: %w", err)
		}
		s.TaskUser = u.Username
	}
	cfg, err := o.loadConfig(s.Config)
	if err != nil {
		return s, paths, err
	}
	s.StopTimeout = config.Default().Gateway.Stop.Timeout.D()
	if cfg != nil {
		s.StopTimeout = cfg.Gateway.Stop.Timeout.D()
	}
	s.Socket, o.notes, err = socketUnit(cfg, o.manager)
	return s, paths, err
}

// at is path under --root.
func (o *installOptions) at(path string) string {
	if o.root == "" {
		return path
	}
	return filepath.Join(o.root, path)
}

// loadConfig loads the config file if there is one (nil if not); a config that does not
// load is refused (exit 78) rather than installed. Its gateway.stop.timeout sets the stop
// budget, and its gateway.sockets taken from systemd the socket unit.
func (o *installOptions) loadConfig(path string) (*config.Config, error) {
	cfg, err := config.Load(o.at(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, withCode(exitConfig, err)
	}
	return cfg, nil
}

func (o *installOptions) install(ctx context.Context, stdout, stderr io.Writer) error {
	s, paths, err := o.spec(true)
	if err != nil {
		return err
	}
	content, err := platform.RenderServiceFile(s)
	if err != nil {
		return err
	}
	var socket []byte
	if s.Socket != nil {
		if socket, err = platform.RenderSocketUnit(s); err != nil {
			return err
		}
	}
	for _, n := range o.notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	if o.print {
		if socket != nil {
			content = fmt.Appendf(content, "\n# %s\n%s", paths.Socket, socket)
		}
		_, err := stdout.Write(content)
		return err
	}
	if o.manager == platform.ManagerSchtasks {
		content = utf16File(content) // what schtasks /Create /XML reads
	}
	uid := os.Getuid()
	if o.root == "" {
		if err := checkManager(ctx, o.manager, platform.ServiceCheck(s, uid)); err != nil {
			return err
		}
	}
	run := &installRun{}
	if err := o.writeConfigIfMissing(run, stdout, s.Config); err != nil {
		return run.undo(ctx, stdout, s, uid, false, err)
	}
	changed, err := run.writeServiceFile(&run.service, o.at(paths.File), content)
	if err != nil {
		return run.undo(ctx, stdout, s, uid, false, err)
	}
	reportWrite(stdout, o.at(paths.File), changed)
	socketChanged := false
	if socket != nil {
		if socketChanged, err = run.writeServiceFile(&run.socket, o.at(paths.Socket), socket); err != nil {
			return run.undo(ctx, stdout, s, uid, false, err)
		}
		reportWrite(stdout, o.at(paths.Socket), socketChanged)
	} else if _, err := os.Stat(o.at(paths.Socket)); paths.Socket != "" && err == nil {
		fmt.Fprintf(stderr, "note: %s is left from an earlier install, but no gateway.sockets entry takes a socket from systemd now: "+
			"`schedd uninstall` removes it, before installing again\n", o.at(paths.Socket))
	}
	if o.root != "" {
		fmt.Fprintf(stdout, "files only (--root): %s was not told\n", o.manager)
		return nil
	}
	if err := runSteps(ctx, stdout, platform.InstallStepsWithSocket(s, paths.File, uid, changed, socketChanged, !o.noStart)); err != nil {
		return run.undo(ctx, stdout, s, uid, true, err)
	}
	fmt.Fprintf(stdout, "installed: schedd runs under %s with %s; `schedd status` shows it\n", o.manager, s.Config)
	return nil
}

func reportWrite(stdout io.Writer, path string, changed bool) {
	if changed {
		fmt.Fprintf(stdout, "wrote %s\n", path)
	} else {
		fmt.Fprintf(stdout, "%s is up to date\n", path)
	}
}

// writeConfigIfMissing creates the config file from the example; an existing one is kept.
func (o *installOptions) writeConfigIfMissing(run *installRun, stdout io.Writer, path string) error {
	p := o.at(path)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := run.mkdirAll(filepath.Dir(p)); err != nil {
		return fmt.Errorf("config dir: %w", err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	run.config = p
	_, err = io.WriteString(f, config.Example())
	if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s from `schedd config example`: set gateway.command there\n", p)
	return nil
}

// writeIfChanged writes content to path (through a temp file and a rename) unless the
// file already holds exactly that; it reports whether it wrote.
func writeIfChanged(path string, content []byte) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, content) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, fmt.Errorf("service file dir: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return false, fmt.Errorf("write service file: %w", err)
	}
	_, err = tmp.Write(content)
	err = errors.Join(err, tmp.Chmod(0o644), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return false, fmt.Errorf("write service file: %w", err)
	}
	return true, nil
}

// utf16File re-encodes an XML document as UTF-16LE with a byte-order mark.
func utf16File(content []byte) []byte {
	s := strings.Replace(string(content), `encoding="UTF-8"`, `encoding="UTF-16"`, 1)
	s = strings.ReplaceAll(s, "\n", "\r\n")
	u := utf16.Encode([]rune(s))
	out := make([]byte, 2, 2+2*len(u))
	out[0], out[1] = 0xff, 0xfe
	for _, c := range u {
		out = binary.LittleEndian.AppendUint16(out, c)
	}
	return out
}

// runSteps runs service-manager commands, printing each, with the step's tolerance
// and retries.
func runSteps(ctx context.Context, stdout io.Writer, steps []platform.ServiceStep) error {
	for _, st := range steps {
		fmt.Fprintf(stdout, "+ %s\n", strings.Join(st.Argv, " "))
		for try := 0; ; try++ {
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			res, err := platform.RunCommand(cctx, platform.RunSpec{Argv: st.Argv})
			cancel()
			if err != nil {
				return err
			}
			code := res.Status.Code
			if code == 0 || slices.Contains(st.OK, code) {
				break
			}
			if try < st.Retries && slices.Contains(st.RetryOn, code) {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Second):
				}
				continue
			}
			msg := strings.TrimSpace(string(res.Stderr))
			if msg == "" {
				msg = strings.TrimSpace(string(res.Stdout))
			}
			return fmt.Errorf("%s: %s: %s", strings.Join(st.Argv, " "), res.Status, msg)
		}
	}
	return nil
}
