package supervisor

import (
	"fmt"
	"strings"
)

// SelfMode is how schedd replaces itself with a fresh process (`schedd restart --daemon`,
// or after an upgrade replaced its binary). The values are part of the API.
type SelfMode string

// The self-respawn modes, in the order they are considered.
const (
	// SelfDisabled: schedd keeps running; SCHEDD_NO_RESPAWN is set, or a Windows schedd has
	// no scheduled task to come back through.
	SelfDisabled SelfMode = "disabled"
	// SelfSupervised: the service manager starts the fresh process.
	SelfSupervised SelfMode = "supervised"
	// SelfSpawned: no service manager; a detached successor takes over once schedd exited.
	SelfSpawned SelfMode = "spawned"
	// SelfFailed: schedd could not hand over and keeps running; Detail says why.
	SelfFailed SelfMode = "failed"
)

// SelfAction is what the daemon does to carry a plan out, after it has stopped the gateway.
type SelfAction int

// The actions of a self-respawn plan.
const (
	// SelfKeepRunning: nothing; the daemon keeps running (disabled, failed).
	SelfKeepRunning SelfAction = iota
	// SelfExitForManager: exit with code 75; systemd's Restart=on-failure and launchd's
	// KeepAlive{SuccessfulExit=false} start a fresh process.
	SelfExitForManager
	// SelfRunTaskHelper: start a detached helper, in its own process group, that waits for
	// this process to exit, runs the scheduled task and checks that a new pid came up;
	// then exit with code 75.
	SelfRunTaskHelper
	// SelfSpawnSuccessor: start a detached successor that waits for this process to hand
	// over and exit, then takes the state-dir lock and starts the gateway; then exit 0.
	SelfSpawnSuccessor
)

// SelfInput is what the choice of mode depends on.
type SelfInput struct {
	GOOS     string // runtime.GOOS
	Manager  string // the detected service manager: systemd|launchd|schtasks|none
	TaskName string // the scheduled task (schtasks)
	// NoRespawn is $SCHEDD_NO_RESPAWN; a truthy value (1, true, yes, on) disables the
	// respawn whatever else holds.
	NoRespawn string
}

// SelfPlan is the chosen mode, the action that carries it out and a detail for people.
type SelfPlan struct {
	Mode   SelfMode
	Action SelfAction
	Detail string
}

// PlanSelfRespawn chooses how schedd replaces itself (UPSTREAM §3.7, in its order):
// disabled by SCHEDD_NO_RESPAWN; supervised under systemd, launchd or schtasks; disabled on
// Windows without a task (a detached successor would have no supervisor, and nothing to
// stop it from piling up); spawned otherwise. It never starts a second schedd under a
// service manager: that successor would fight the manager's own restart (RELIABILITY
// lesson 5).
func PlanSelfRespawn(in SelfInput) SelfPlan {
	if Truthy(in.NoRespawn) {
		return SelfPlan{Mode: SelfDisabled, Detail: "SCHEDD_NO_RESPAWN is set"}
	}
	switch in.Manager {
	case "systemd":
		return SelfPlan{Mode: SelfSupervised, Action: SelfExitForManager,
			Detail: "exit 75; systemd starts a fresh schedd (Restart=on-failure)"}
	case "launchd":
		return SelfPlan{Mode: SelfSupervised, Action: SelfExitForManager,
			Detail: "exit 75; launchd starts a fresh schedd (KeepAlive SuccessfulExit=false)"}
	case "schtasks":
		task := in.TaskName
		if task == "" {
			task = "schedd"
		}
		return SelfPlan{Mode: SelfSupervised, Action: SelfRunTaskHelper,
			Detail: fmt.Sprintf("exit 75; a helper runs scheduled task %q once this process is gone", task)}
	case "none", "":
		if in.GOOS == "windows" {
			return SelfPlan{Mode: SelfDisabled,
				Detail: "windows: no scheduled task runs schedd, and a detached successor would run unsupervised; install the task (schedd install)"}
		}
		return SelfPlan{Mode: SelfSpawned, Action: SelfSpawnSuccessor,
			Detail: "a detached successor takes over once this process has exited"}
	}
	return SelfPlan{Mode: SelfFailed, Detail: fmt.Sprintf("unknown service manager %q", in.Manager)}
}

// Truthy reports whether an environment flag is set: 1, true, yes or on, in any case.
func Truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}
