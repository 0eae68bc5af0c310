package handoff

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/schedd/schedd/internal/api"
	"github.com/schedd/schedd/internal/platform"
)

// ErrBusy is returned by Replace while schedd is already replacing itself.
var ErrBusy = errors.New("schedd is already replacing itself")

// ErrRespawnMe ends the daemon when schedd hands its own respawn to the service manager:
// the process exits with code 75, which the generated units treat as "start me again".
var ErrRespawnMe = errors.New("schedd exits so that its service manager starts a fresh process")

// checkTimeout bounds each command of the binary check.
const checkTimeout = 15 * time.Second

// Exit is the last act of a daemon that replaces itself: the daemon calls Run once the
// gateway has been stopped and the lock and the sockets are released, and Run's error
// ends the daemon (ErrRespawnMe asks the service manager for a fresh process).
type Exit struct {
	Why string // why the daemon stops, for its log
	run func() error
}

// Run hands over to the fresh process.
func (e *Exit) Run() error { return e.run() }

// Setup is what the daemon hands a replacement.
type Setup struct {
	Environ        []string // the daemon's environment (os.Environ() form)
	ServiceManager string   // --service-manager as given ("" = detect)
	Socket         string   // the control socket, where the task helper looks for the new schedd
	// ConfigPath returns the config file in use ("" = none), which the new binary must
	// validate; it is asked only once a mode that replaces schedd was chosen.
	ConfigPath func() string
	Log        *zap.Logger
	// HandOver passes the exit to the daemon's main loop, which stops the gateway and
	// then runs it; false means the daemon is already handing over or stopping.
	HandOver func(*Exit) bool
}

// Replacer replaces schedd with a fresh process, one replacement at a time; once handed
// over it stays taken, as the daemon is on its way out. The zero value is ready.
type Replacer struct {
	mu   sync.Mutex
	busy bool
}

func (r *Replacer) begin() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy {
		return false
	}
	r.busy = true
	return true
}

func (r *Replacer) end() {
	r.mu.Lock()
	r.busy = false
	r.mu.Unlock()
}

// Replace replaces schedd itself with a fresh process (`schedd restart --daemon`, or after
// an upgrade replaced the binary). The mode comes from Choose. Before anything is stopped
// the binary on disk is checked: `schedd version` and, with a config file, `schedd config
// validate FILE`; if that fails the daemon keeps running and the result says why
// (R-SUP-08). Then the exit is handed to the daemon, which stops the gateway gracefully,
// releases the lock and the sockets, and runs it (exit 75 for a service manager, 0 for a
// spawned successor); the successor starts the gateway again.
//
// The result is returned and logged; disabled and failed results keep the daemon running
// and are not errors. ErrBusy means a replacement is already under way.
func (r *Replacer) Replace(ctx context.Context, s Setup) (api.SelfRespawn, error) {
	if s.Log == nil {
		s.Log = zap.NewNop()
	}
	if !r.begin() {
		return api.SelfRespawn{}, ErrBusy
	}
	handed := false
	defer func() {
		if !handed {
			r.end()
		}
	}()
	env := s.Environ
	det, err := platform.ResolveServiceManager(s.ServiceManager, platform.ServiceHints{GOOS: runtime.GOOS, Environ: env})
	if err != nil {
		return s.result(api.SelfRespawn{Mode: string(Failed), Detail: err.Error()}), nil
	}
	plan := Choose(Input{
		GOOS: runtime.GOOS, Manager: det.Manager, TaskName: det.TaskName, NoRespawn: lookupEnv(env, EnvNoRespawn),
	})
	res := api.SelfRespawn{Mode: string(plan.Mode), Detail: plan.Detail}
	if plan.Action == KeepRunning {
		return s.result(res), nil
	}
	failed := func(format string, args ...any) (api.SelfRespawn, error) {
		return s.result(api.SelfRespawn{Mode: string(Failed),
			Detail: fmt.Sprintf(format, args...) + "; schedd keeps running"}), nil
	}
	exe, err := os.Executable()
	if err != nil {
		return failed("find the schedd binary: %v", err)
	}
	if err := s.checkBinary(ctx, exe); err != nil {
		return failed("new binary check: %v", err)
	}

	var x Exit
	var callOff func()
	switch plan.Action {
	case ExitForManager:
		x.run = func() error { return ErrRespawnMe }
		callOff = func() {}
	case RunTaskHelper:
		helper, err := platform.StartDetached(platform.DetachedCommand{
			Argv:   taskHelperArgv(exe, os.Getpid(), s.Socket, det.TaskName),
			Env:    platform.ChildEnv(env, nil),
			Stdout: os.Stderr, Stderr: os.Stderr,
		})
		if err != nil {
			return failed("start the task helper: %v", err)
		}
		res.Detail += fmt.Sprintf(" (helper pid %d)", helper.PID())
		x.run = func() error { _ = helper.Release(); return ErrRespawnMe }
		callOff = func() { _ = helper.Kill() }
	case SpawnSuccessor:
		succ, goAhead, err := startSuccessor(exe, env)
		if err != nil {
			return failed("start the successor: %v", err)
		}
		res.PID = succ.PID()
		x.run = func() error {
			_, werr := goAhead.WriteString("go\n")
			return errors.Join(werr, goAhead.Close(), succ.Release())
		}
		callOff = func() {
			goAhead.Close() // EOF without "go": the successor exits by itself
			_, _ = succ.Wait()
		}
	}
	x.Why = "schedd replaces itself (" + res.Mode + ")"
	if !s.HandOver(&x) {
		callOff()
		return api.SelfRespawn{}, ErrBusy
	}
	handed = true
	return s.result(res), nil
}

// result logs the result of a replacement and returns it.
func (s *Setup) result(res api.SelfRespawn) api.SelfRespawn {
	fields := []zap.Field{zap.String("mode", res.Mode), zap.String("detail", res.Detail)}
	if res.PID != 0 {
		fields = append(fields, zap.Int("successor_pid", res.PID))
	}
	switch Mode(res.Mode) {
	case Supervised, Spawned:
		s.Log.Info("schedd replaces itself with a fresh process; stopping the gateway first", fields...)
	default:
		s.Log.Warn("schedd does not replace itself", fields...)
	}
	return res
}

// checkBinary runs the binary that would be started: `version` must answer as schedd,
// and the config file in use must validate with it.
func (s *Setup) checkBinary(ctx context.Context, exe string) error {
	env := platform.ChildEnv(s.Environ, nil)
	run := func(args ...string) (platform.RunResult, error) {
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		defer cancel()
		res, err := platform.RunCommand(cctx, platform.RunSpec{Argv: append([]string{exe}, args...), Env: env, MaxOutput: 4 << 10})
		if err != nil {
			return res, fmt.Errorf("`schedd %s`: %w", strings.Join(args, " "), err)
		}
		if res.Status.Code != 0 || !res.Status.Exited {
			return res, fmt.Errorf("`schedd %s`: %s: %s", strings.Join(args, " "), res.Status, firstOutputLine(res.Stderr, res.Stdout))
		}
		return res, nil
	}
	res, err := run("version")
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(res.Stdout, []byte("schedd ")) {
		return fmt.Errorf("`schedd version` printed %q: not schedd", firstOutputLine(res.Stdout))
	}
	if path := s.ConfigPath(); path != "" {
		if _, err := run("config", "validate", path); err != nil {
			return err
		}
	}
	return nil
}

// firstOutputLine returns the first line of the first non-empty output.
func firstOutputLine(outs ...[]byte) string {
	for _, o := range outs {
		if s := strings.TrimSpace(string(o)); s != "" {
			line, _, _ := strings.Cut(s, "\n")
			return line
		}
	}
	return "no output"
}

// startSuccessor starts this schedd's command line again as a detached process that waits
// (AwaitPredecessor) for the "go" written on the returned pipe and for this process to
// exit. Closing the pipe without "go" calls it off.
func startSuccessor(exe string, env []string) (*platform.Detached, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	succ, err := platform.StartDetached(platform.DetachedCommand{
		Argv: append([]string{exe}, os.Args[1:]...),
		Env: platform.ChildEnv(env, map[string]string{
			EnvRespawnFD:             "3",
			EnvRespawnPID:            strconv.Itoa(os.Getpid()),
			"SCHEDD_SERVICE_MANAGER": platform.ManagerNone,
		}),
		Stdout: os.Stdout, Stderr: os.Stderr,
		ExtraFiles: []*os.File{r},
	})
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	return succ, w, nil
}

// lookupEnv returns the value of key in environ (the last one wins).
func lookupEnv(environ []string, key string) string {
	v := ""
	for _, kv := range environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
