package handoff

import (
	"fmt"
	"strings"
)

// Mode is how schedd replaces itself with a fresh process. The values are part of the API
// (the mode of `POST /v1/restart` with daemon set).
type Mode string

// The modes, in the order they are considered.
const (
	// Disabled: schedd keeps running; SCHEDD_NO_RESPAWN is set, or a Windows schedd has
	// no scheduled task to come back through.
	Disabled Mode = "disabled"
	// Supervised: the service manager starts the fresh process.
	Supervised Mode = "supervised"
	// Spawned: no service manager; a detached successor takes over once schedd exited.
	Spawned Mode = "spawned"
	// Failed: schedd could not hand over and keeps running; the detail says why.
	Failed Mode = "failed"
)

// Action is what the daemon does to carry a plan out, after it has stopped the gateway.
type Action int

// The actions of a plan.
const (
	// KeepRunning: nothing; the daemon keeps running (disabled, failed).
	KeepRunning Action = iota
	// ExitForManager: exit with code 75; systemd's Restart=on-failure and launchd's
	// KeepAlive{SuccessfulExit=false} start a fresh process.
	ExitForManager
	// RunTaskHelper: start a detached helper, in its own process group, that waits for
	// this process to exit, runs the scheduled task and checks that a new pid came up;
	// then exit with code 75.
	RunTaskHelper
	// SpawnSuccessor: start a detached successor that waits for this process to hand
	// over and exit, then takes the state-dir lock and starts the gateway; then exit 0.
	SpawnSuccessor
)

// Input is what the choice of mode depends on.
type Input struct {
	GOOS     string // runtime.GOOS
	Manager  string // the detected service manager: systemd|launchd|schtasks|none
	TaskName string // the scheduled task (schtasks)
	// NoRespawn is $SCHEDD_NO_RESPAWN; a truthy value (1, true, yes, on) disables the
	// respawn whatever else holds.
	NoRespawn string
}

// Plan is the chosen mode, the action that carries it out and a detail for people.
type Plan struct {
	Mode   Mode
	Action Action
	Detail string
}

// Choose decides how schedd replaces itself, in this order: disabled by
// SCHEDD_NO_RESPAWN; supervised under systemd, launchd or schtasks; disabled on Windows
// without a task (a detached successor would have no supervisor, and nothing to stop it
// from piling up); spawned otherwise. It never starts a second schedd under a service
// manager: that successor would race the manager's own restart of schedd for the lock.
func Choose(in Input) Plan {
	if Truthy(in.NoRespawn) {
		return Plan{Mode: Disabled, Detail: "SCHEDD_NO_RESPAWN is set"}
	}
	switch in.Manager {
	case "systemd":
		return Plan{Mode: Supervised, Action: ExitForManager,
			Detail: "exit 75; systemd starts a fresh schedd (Restart=on-failure)"}
	case "launchd":
		return Plan{Mode: Supervised, Action: ExitForManager,
			Detail: "exit 75; launchd starts a fresh schedd (KeepAlive SuccessfulExit=false)"}
	case "schtasks":
		task := in.TaskName
		if task == "" {
			task = "schedd"
		}
		return Plan{Mode: Supervised, Action: RunTaskHelper,
			Detail: fmt.Sprintf("exit 75; a helper runs scheduled task %q once this process is gone", task)}
	case "none", "":
		if in.GOOS == "windows" {
			return Plan{Mode: Disabled,
				Detail: "windows: no scheduled task runs schedd, and a detached successor would run unsupervised; install the task (schedd install)"}
		}
		return Plan{Mode: Spawned, Action: SpawnSuccessor,
			Detail: "a detached successor takes over once this process has exited"}
	}
	return Plan{Mode: Failed, Detail: fmt.Sprintf("unknown service manager %q", in.Manager)}
}

// Truthy reports whether an environment flag is set: 1, true, yes or on, in any case.
func Truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}
