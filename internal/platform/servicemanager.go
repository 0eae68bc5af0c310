package platform

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// The service managers schedd cooperates with: the values of --service-manager (besides
// "auto") and of schedd.service_manager in the status.
const (
	ManagerNone     = "none"
	ManagerSystemd  = "systemd"
	ManagerLaunchd  = "launchd"
	ManagerSchtasks = "schtasks"
)

// DefaultTaskName is the Windows scheduled task `schedd install` creates; a task of another
// name tells schedd with SCHEDD_SCHTASKS_TASK.
const DefaultTaskName = "schedd"

// ErrUnknownManager is returned for a --service-manager value schedd does not know.
var ErrUnknownManager = errors.New("unknown service manager")

// ServiceHints is what detection looks at: the environment, and who started us. A hint
// variable is inherited by every descendant of the process it was set for (a shell opened
// from a service, the gateway and its children), so detection believes a hint only when
// the process tree says it was set for this very process. CurrentServiceHints fills it in;
// tests build it by hand.
type ServiceHints struct {
	GOOS    string
	Environ []string // os.Environ() form
	PID     int
	PPID    int
	// ParentName is the parent's command name ("systemd" on Linux, from /proc), "" when
	// it cannot be read.
	ParentName string
}

// Detection is which service manager runs schedd, and why detection thinks so.
type Detection struct {
	Manager string // ManagerNone, ManagerSystemd, ManagerLaunchd or ManagerSchtasks
	// Source says what decided: "flag", "SCHEDD_SERVICE_MANAGER", the hint variable that
	// was believed, or why none was.
	Source string
	// TaskName is the scheduled task that runs schedd (schtasks only).
	TaskName string
}

// CurrentServiceHints describes this process, with environ as its environment.
func CurrentServiceHints(environ []string) ServiceHints {
	ppid := os.Getppid()
	return ServiceHints{
		GOOS:       runtime.GOOS,
		Environ:    environ,
		PID:        os.Getpid(),
		PPID:       ppid,
		ParentName: processName(ppid),
	}
}

// DetectServiceManager returns the service manager this process runs under, judged from
// environ and the process tree (ResolveServiceManager with "auto").
func DetectServiceManager(environ []string) string {
	d, _ := ResolveServiceManager("auto", CurrentServiceHints(environ))
	return d.Manager
}

// ResolveServiceManager decides which service manager runs schedd (R-INIT-10).
//
// The explicit flag wins: `schedd install` writes --service-manager into the unit, plist
// and task, so an installed schedd never guesses. "auto" (or "") falls back to
// $SCHEDD_SERVICE_MANAGER, then to hints, each believed only when it was set for this
// process rather than inherited:
//
//   - systemd (Linux): SYSTEMD_EXEC_PID equal to our pid; or INVOCATION_ID,
//     NOTIFY_SOCKET or JOURNAL_STREAM with a parent that is a systemd manager (pid 1 or a
//     user manager, named "systemd"). A shell started from a unit carries the same
//     variables, but its children have the shell as their parent.
//   - launchd (macOS): LAUNCH_JOB_LABEL, LAUNCH_JOB_NAME or XPC_SERVICE_NAME naming a
//     label (not empty, not "0", which Terminal sets), with launchd (pid 1) as our parent.
//   - schtasks (Windows): SCHEDD_SCHTASKS_TASK, the task's name.
//
// Hints of another platform never count. Anything else is "none".
func ResolveServiceManager(flag string, h ServiceHints) (Detection, error) {
	env := envMap(h.Environ)
	task := env["SCHEDD_SCHTASKS_TASK"]
	if task == "" {
		task = DefaultTaskName
	}
	withTask := func(d Detection) Detection {
		if d.Manager == ManagerSchtasks {
			d.TaskName = task
		}
		return d
	}
	switch flag {
	case ManagerNone, ManagerSystemd, ManagerLaunchd, ManagerSchtasks:
		return withTask(Detection{Manager: flag, Source: "flag"}), nil
	case "auto", "":
	default:
		return Detection{Manager: ManagerNone}, fmt.Errorf("%w %q: want auto, none, systemd, launchd or schtasks", ErrUnknownManager, flag)
	}
	switch v := env["SCHEDD_SERVICE_MANAGER"]; v {
	case ManagerNone, ManagerSystemd, ManagerLaunchd, ManagerSchtasks:
		return withTask(Detection{Manager: v, Source: "SCHEDD_SERVICE_MANAGER"}), nil
	}
	return withTask(detectFromHints(h, env)), nil
}

func detectFromHints(h ServiceHints, env map[string]string) Detection {
	none := func(why string) Detection { return Detection{Manager: ManagerNone, Source: why} }
	switch h.GOOS {
	case "linux":
		if v := env["SYSTEMD_EXEC_PID"]; v != "" && v == strconv.Itoa(h.PID) {
			return Detection{Manager: ManagerSystemd, Source: "SYSTEMD_EXEC_PID"}
		}
		for _, k := range []string{"INVOCATION_ID", "NOTIFY_SOCKET", "JOURNAL_STREAM"} {
			if env[k] == "" {
				continue
			}
			if h.ParentName != "systemd" {
				return none(k + " inherited: the parent is not systemd")
			}
			return Detection{Manager: ManagerSystemd, Source: k}
		}
	case "darwin":
		for _, k := range []string{"LAUNCH_JOB_LABEL", "LAUNCH_JOB_NAME", "XPC_SERVICE_NAME"} {
			if v := env[k]; v == "" || v == "0" {
				continue
			}
			if h.PPID != 1 {
				return none(k + " inherited: the parent is not launchd")
			}
			return Detection{Manager: ManagerLaunchd, Source: k}
		}
	case "windows":
		if env["SCHEDD_SCHTASKS_TASK"] != "" {
			return Detection{Manager: ManagerSchtasks, Source: "SCHEDD_SCHTASKS_TASK"}
		}
	}
	return none("no hint")
}

// envMap indexes environ by key, values trimmed; a blank value counts as unset. On
// Windows keys are upper-cased, as the environment is case-insensitive there.
func envMap(environ []string) map[string]string {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if v = strings.TrimSpace(v); v != "" {
			env[normKey(k)] = v
		} else {
			delete(env, normKey(k))
		}
	}
	return env
}
