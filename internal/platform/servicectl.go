package platform

import (
	"path/filepath"
	"strconv"
)

// ServiceStep is one service-manager command run by `schedd install` or `uninstall`.
type ServiceStep struct {
	Argv []string
	// OK lists exit codes besides 0 that mean "already so": unloading what is not loaded.
	OK []int
	// Retries is how often the command is tried again, a second apart, while it exits with
	// a code in RetryOn (launchctl bootstrap right after a bootout fails with 5, R-INIT-06).
	Retries int
	RetryOn []int
}

// ServicePaths is where the files of an installed service live.
type ServicePaths struct {
	File   string // the unit, plist, or task XML handed to schtasks /Create
	Socket string // systemd's SocketUnit beside File; "" for the other managers
	Config string // the default config file
	Log    string // launchd's log file
}

// PathEnv is what default service paths depend on.
type PathEnv struct {
	Home        string // the user's home directory
	ConfigHome  string // $XDG_CONFIG_HOME ("" = Home/.config)
	ProgramData string // %ProgramData% ("" = C:\ProgramData)
	AppData     string // %APPDATA% ("" = Home\AppData\Roaming)
}

// DefaultServicePaths returns where a service for manager lives, as root (system) or for
// the user.
func DefaultServicePaths(manager string, user bool, e PathEnv) ServicePaths {
	configHome := e.ConfigHome
	if configHome == "" {
		configHome = filepath.Join(e.Home, ".config")
	}
	userConfig := filepath.Join(configHome, "schedd", "schedd.yaml")
	switch manager {
	case ManagerSystemd:
		if user {
			dir := filepath.Join(configHome, "systemd", "user")
			return ServicePaths{File: filepath.Join(dir, SystemdUnit), Socket: filepath.Join(dir, SocketUnit), Config: userConfig}
		}
		return ServicePaths{File: "/etc/systemd/system/" + SystemdUnit, Socket: "/etc/systemd/system/" + SocketUnit, Config: "/etc/schedd/schedd.yaml"}
	case ManagerLaunchd:
		if user {
			return ServicePaths{
				File:   filepath.Join(e.Home, "Library", "LaunchAgents", LaunchdLabel+".plist"),
				Config: userConfig,
				Log:    filepath.Join(e.Home, "Library", "Logs", "schedd.log"),
			}
		}
		return ServicePaths{
			File:   "/Library/LaunchDaemons/" + LaunchdLabel + ".plist",
			Config: "/usr/local/etc/schedd/schedd.yaml",
			Log:    "/var/log/schedd.log",
		}
	case ManagerSchtasks:
		base := e.ProgramData
		if base == "" {
			base = `C:\ProgramData`
		}
		if user {
			base = e.AppData
			if base == "" {
				base = filepath.Join(e.Home, "AppData", "Roaming")
			}
		}
		dir := filepath.Join(base, "schedd")
		return ServicePaths{File: filepath.Join(dir, "schedd-task.xml"), Config: filepath.Join(dir, "schedd.yaml")}
	}
	return ServicePaths{}
}

// launchctl exit codes that mean "not loaded" (bootout) or "already loaded" (bootstrap).
var (
	launchdNotLoaded     = []int{3, 36, 113}
	launchdAlreadyLoaded = []int{5, 17, 37}
)

// launchdDomain is the launchctl domain of a system daemon or of the user's agents.
func launchdDomain(user bool, uid int) string {
	if user {
		return "gui/" + strconv.Itoa(uid)
	}
	return "system"
}

// ServiceCheck is the command that asks the service manager a question it answers only
// when it runs and can be reached: `schedd install` runs it before it writes anything.
// systemctl fails without systemd as init (a container, WSL without systemd) or, with
// --user, without a user manager on the bus; launchctl fails for a gui domain outside a
// logged-in session; schtasks fails when the Task Scheduler service is stopped.
func ServiceCheck(s ServiceSpec, uid int) ServiceStep {
	switch s.Manager {
	case ManagerSystemd:
		return ServiceStep{Argv: systemctl(s.User)("show", "--property=Version")}
	case ManagerLaunchd:
		return ServiceStep{Argv: []string{"launchctl", "print", launchdDomain(s.User, uid)}}
	case ManagerSchtasks:
		return ServiceStep{Argv: []string{"schtasks", "/Query", "/FO", "CSV", "/NH"}}
	}
	return ServiceStep{}
}

// InstallSteps are the commands that load the service file at path into its manager and
// start it. changed says the file was new or different: a loaded service is reloaded then,
// and left alone otherwise, so installing twice disturbs nothing (R-INIT-11). Without start
// the service is registered to start at boot (or logon) only.
func InstallSteps(s ServiceSpec, path string, uid int, changed, start bool) []ServiceStep {
	return InstallStepsWithSocket(s, path, uid, changed, false, start)
}

// InstallStepsWithSocket is InstallSteps where s.Socket says systemd also has SocketUnit,
// which socketChanged says is new or different. The socket is enabled and started before
// the service, which systemd refuses while the service runs: so a change stops the
// service, (re)starts the socket and starts the service on it. An unchanged socket is
// never restarted, which would drop the connections waiting in its backlog.
func InstallStepsWithSocket(s ServiceSpec, path string, uid int, changed, socketChanged, start bool) []ServiceStep {
	var steps []ServiceStep
	switch s.Manager {
	case ManagerSystemd:
		sc := systemctl(s.User)
		if s.Socket != nil {
			steps = append(steps, ServiceStep{Argv: sc("daemon-reload")}, ServiceStep{Argv: sc("enable", SocketUnit, SystemdUnit)})
			if !start {
				return steps
			}
			if !changed && !socketChanged {
				return append(steps, ServiceStep{Argv: sc("start", SocketUnit)}, ServiceStep{Argv: sc("start", SystemdUnit)})
			}
			verb := "start"
			if socketChanged {
				verb = "restart"
			}
			return append(steps, ServiceStep{Argv: sc("stop", SystemdUnit)},
				ServiceStep{Argv: sc(verb, SocketUnit)}, ServiceStep{Argv: sc("start", SystemdUnit)})
		}
		steps = append(steps, ServiceStep{Argv: sc("daemon-reload")}, ServiceStep{Argv: sc("enable", SystemdUnit)})
		if start {
			verb := "start"
			if changed {
				verb = "restart"
			}
			steps = append(steps, ServiceStep{Argv: sc(verb, SystemdUnit)})
		}
	case ManagerLaunchd:
		domain := launchdDomain(s.User, uid)
		target := domain + "/" + LaunchdLabel
		steps = append(steps, ServiceStep{Argv: []string{"launchctl", "enable", target}})
		if changed {
			steps = append(steps,
				ServiceStep{Argv: []string{"launchctl", "bootout", target}, OK: launchdNotLoaded},
				ServiceStep{Argv: []string{"launchctl", "bootstrap", domain, path}, Retries: 10, RetryOn: []int{5}})
		} else {
			steps = append(steps, ServiceStep{Argv: []string{"launchctl", "bootstrap", domain, path}, OK: launchdAlreadyLoaded})
		}
		if start {
			steps = append(steps, ServiceStep{Argv: []string{"launchctl", "kickstart", target}})
		}
	case ManagerSchtasks:
		name := s.TaskName
		if name == "" {
			name = DefaultTaskName
		}
		steps = append(steps, ServiceStep{Argv: []string{"schtasks", "/Create", "/TN", name, "/XML", path, "/F"}})
		if start {
			steps = append(steps, ServiceStep{Argv: []string{"schtasks", "/Run", "/TN", name}})
		}
	}
	return steps
}

// UninstallSteps stop the service and take it out of its manager; the caller removes the
// file afterwards (and, for systemd, reloads: see UninstallAfterSteps).
func UninstallSteps(s ServiceSpec, uid int) []ServiceStep {
	switch s.Manager {
	case ManagerSystemd:
		st := []ServiceStep{{Argv: systemctl(s.User)("disable", "--now", SystemdUnit), OK: []int{1, 5}}}
		if s.Socket != nil {
			// The socket first: while it listens, a connection would start the service again.
			st = append([]ServiceStep{SocketUninstallStep(s)}, st...)
		}
		return st
	case ManagerLaunchd:
		return []ServiceStep{{Argv: []string{"launchctl", "bootout", launchdDomain(s.User, uid) + "/" + LaunchdLabel}, OK: launchdNotLoaded}}
	case ManagerSchtasks:
		name := s.TaskName
		if name == "" {
			name = DefaultTaskName
		}
		return []ServiceStep{
			{Argv: []string{"schtasks", "/End", "/TN", name}, OK: []int{1}},
			{Argv: []string{"schtasks", "/Delete", "/TN", name, "/F"}, OK: []int{1}},
		}
	}
	return nil
}

// SocketUninstallStep stops and disables SocketUnit (systemd only).
func SocketUninstallStep(s ServiceSpec) ServiceStep {
	return ServiceStep{Argv: systemctl(s.User)("disable", "--now", SocketUnit), OK: []int{1, 5}}
}

// UninstallAfterSteps run once the service file is gone.
func UninstallAfterSteps(s ServiceSpec) []ServiceStep {
	if s.Manager == ManagerSystemd {
		return []ServiceStep{{Argv: systemctl(s.User)("daemon-reload")}}
	}
	return nil
}

func systemctl(user bool) func(args ...string) []string {
	return func(args ...string) []string {
		argv := []string{"systemctl"}
		if user {
			argv = append(argv, "--user")
		}
		return append(argv, args...)
	}
}
