package daemon

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
	"github.com/schedd/schedd/internal/supervisor"
)

// ErrSelfRespawnBusy is returned by RestartDaemon while schedd is already replacing itself.
var ErrSelfRespawnBusy = errors.New("schedd is already replacing itself")

// The environment of a successor started in the spawned mode (see AwaitPredecessor).
const (
	// EnvRespawnFD names the fd on which the predecessor writes "go" once it has stopped
	// the gateway and released the lock; its exit closes the pipe.
	EnvRespawnFD = "SCHEDD_RESPAWN_FD"
	// EnvRespawnPID is the predecessor's pid, for the log.
	EnvRespawnPID = "SCHEDD_RESPAWN_PID"
	// EnvNoRespawn disables the replacement of schedd by itself (truthy: 1, true, yes, on).
	EnvNoRespawn = "SCHEDD_NO_RESPAWN"
)

// checkTimeout bounds each command of the binary check.
const checkTimeout = 15 * time.Second

// selfRespawn makes sure one replacement at a time is under way; once handed over it
// stays taken, as the daemon is on its way out.
type selfRespawn struct {
	mu   sync.Mutex
	busy bool
}

func (s *selfRespawn) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy {
		return false
	}
	s.busy = true
	return true
}

func (s *selfRespawn) end() {
	s.mu.Lock()
	s.busy = false
	s.mu.Unlock()
}

// RestartDaemon replaces schedd itself with a fresh process (`schedd restart --daemon`,
// or after an upgrade replaced the binary). The mode comes from supervisor.PlanSelfRespawn.
// Before anything is stopped the binary on disk is checked: `schedd version` and, with a
// config file, `schedd config validate FILE`; if that fails the daemon keeps running and
// the result says why (R-SUP-08). Then the hand-off stops the gateway gracefully,
// releases the lock and the sockets, and exits (75 for a service manager, 0 for a
// spawned successor); the successor starts the gateway again.
//
// The result is returned and logged; disabled and failed results keep the daemon running
// and are not errors. ErrSelfRespawnBusy means a replacement is already under way.
func (d *Daemon) RestartDaemon(ctx context.Context) (api.SelfRespawn, error) {
	if !d.self.begin() {
		return api.SelfRespawn{}, ErrSelfRespawnBusy
	}
	handed := false
	defer func() {
		if !handed {
			d.self.end()
		}
	}()
	env := d.opts.Environ
	det, err := platform.ResolveServiceManager(d.opts.ServiceManager, platform.ServiceHints{GOOS: runtime.GOOS, Environ: env})
	if err != nil {
		return d.selfResult(api.SelfRespawn{Mode: string(supervisor.SelfFailed), Detail: err.Error()}), nil
	}
	plan := supervisor.PlanSelfRespawn(supervisor.SelfInput{
		GOOS: runtime.GOOS, Manager: det.Manager, TaskName: det.TaskName, NoRespawn: lookupEnv(env, EnvNoRespawn),
	})
	res := api.SelfRespawn{Mode: string(plan.Mode), Detail: plan.Detail}
	if plan.Action == supervisor.SelfKeepRunning {
		return d.selfResult(res), nil
	}
	failed := func(format string, args ...any) (api.SelfRespawn, error) {
		return d.selfResult(api.SelfRespawn{Mode: string(supervisor.SelfFailed),
			Detail: fmt.Sprintf(format, args...) + "; schedd keeps running"}), nil
	}
	exe, err := os.Executable()
	if err != nil {
		return failed("find the schedd binary: %v", err)
	}
	if err := d.checkBinary(ctx, exe); err != nil {
		return failed("new binary check: %v", err)
	}

	var h handoff
	var callOff func()
	switch plan.Action {
	case supervisor.SelfExitForManager:
		h.run = func() error { return ErrRespawnMe }
		callOff = func() {}
	case supervisor.SelfRunTaskHelper:
		helper, err := platform.StartDetached(platform.DetachedCommand{
			Argv:   taskHelperArgv(exe, os.Getpid(), d.opts.Socket, det.TaskName),
			Env:    platform.ChildEnv(env, nil),
			Stdout: os.Stderr, Stderr: os.Stderr,
		})
		if err != nil {
			return failed("start the task helper: %v", err)
		}
		res.Detail += fmt.Sprintf(" (helper pid %d)", helper.PID())
		h.run = func() error { _ = helper.Release(); return ErrRespawnMe }
		callOff = func() { _ = helper.Kill() }
	case supervisor.SelfSpawnSuccessor:
		succ, goAhead, err := startSuccessor(exe, env)
		if err != nil {
			return failed("start the successor: %v", err)
		}
		res.PID = succ.PID()
		h.run = func() error {
			_, werr := goAhead.WriteString("go\n")
			return errors.Join(werr, goAhead.Close(), succ.Release())
		}
		callOff = func() {
			goAhead.Close() // EOF without "go": the successor exits by itself
			_, _ = succ.Wait()
		}
	}
	h.why = "schedd replaces itself (" + res.Mode + ")"
	select {
	case d.handoffc <- h:
		handed = true
	default:
		callOff()
		return api.SelfRespawn{}, ErrSelfRespawnBusy
	}
	return d.selfResult(res), nil
}

// selfResult logs the result of a replacement and returns it.
func (d *Daemon) selfResult(res api.SelfRespawn) api.SelfRespawn {
	fields := []zap.Field{zap.String("mode", res.Mode), zap.String("detail", res.Detail)}
	if res.PID != 0 {
		fields = append(fields, zap.Int("successor_pid", res.PID))
	}
	switch supervisor.SelfMode(res.Mode) {
	case supervisor.SelfSupervised, supervisor.SelfSpawned:
		d.log.Info("schedd replaces itself with a fresh process; stopping the gateway first", fields...)
	default:
		d.log.Warn("schedd does not replace itself", fields...)
	}
	return res
}

// checkBinary runs the binary that would be started: `version` must answer as schedd,
// and the config file in use must validate with it.
func (d *Daemon) checkBinary(ctx context.Context, exe string) error {
	env := platform.ChildEnv(d.opts.Environ, nil)
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
	if path := d.config().Path; path != "" {
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

// taskHelperArgv runs `schedd respawn-helper`: wait for pid to exit, then run the task
// until a schedd other than pid answers on the socket.
func taskHelperArgv(exe string, pid int, socket, task string) []string {
	if task == "" {
		task = platform.DefaultTaskName
	}
	return []string{exe, "respawn-helper", "--wait-pid", strconv.Itoa(pid), "--socket", socket,
		"--", "schtasks", "/Run", "/TN", task}
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
