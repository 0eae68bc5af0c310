package platform

import (
	"errors"
	"testing"
)

// TestResolveServiceManager is R-INIT-10: detection under systemd, launchd, schtasks, a
// plain shell, a container init, and shells that inherited a service's variables; the
// explicit flag always wins.
func TestResolveServiceManager(t *testing.T) {
	const pid = 4242
	systemd := ServiceHints{GOOS: "linux", PID: pid, PPID: 1, ParentName: "systemd"}
	userSystemd := ServiceHints{GOOS: "linux", PID: pid, PPID: 900, ParentName: "systemd"}
	shell := ServiceHints{GOOS: "linux", PID: pid, PPID: 777, ParentName: "bash"}
	tini := ServiceHints{GOOS: "linux", PID: pid, PPID: 1, ParentName: "tini"}
	launchd := ServiceHints{GOOS: "darwin", PID: pid, PPID: 1}
	macShell := ServiceHints{GOOS: "darwin", PID: pid, PPID: 555}
	win := ServiceHints{GOOS: "windows", PID: pid, PPID: 600}
	with := func(h ServiceHints, env ...string) ServiceHints { h.Environ = env; return h }

	tests := []struct {
		name   string
		flag   string
		hints  ServiceHints
		want   string
		source string
	}{
		// systemd
		{"systemd: SYSTEMD_EXEC_PID is us", "auto", with(shell, "SYSTEMD_EXEC_PID=4242"), ManagerSystemd, "SYSTEMD_EXEC_PID"},
		{"systemd: INVOCATION_ID from pid 1", "auto", with(systemd, "INVOCATION_ID=abc"), ManagerSystemd, "INVOCATION_ID"},
		{"systemd: user manager parent", "", with(userSystemd, "INVOCATION_ID=abc", "JOURNAL_STREAM=8:1"), ManagerSystemd, "INVOCATION_ID"},
		{"systemd: NOTIFY_SOCKET alone", "auto", with(systemd, "NOTIFY_SOCKET=/run/systemd/notify"), ManagerSystemd, "NOTIFY_SOCKET"},
		{"systemd: JOURNAL_STREAM alone", "auto", with(systemd, "JOURNAL_STREAM=8:1"), ManagerSystemd, "JOURNAL_STREAM"},
		{"nested shell inherits INVOCATION_ID", "auto", with(shell, "INVOCATION_ID=abc", "JOURNAL_STREAM=8:1", "SYSTEMD_EXEC_PID=777"), ManagerNone, "INVOCATION_ID inherited: the parent is not systemd"},
		{"SYSTEMD_EXEC_PID of another process", "auto", with(systemd, "SYSTEMD_EXEC_PID=1234"), ManagerNone, "no hint"},
		{"docker with tini and a leaked INVOCATION_ID", "auto", with(tini, "INVOCATION_ID=abc"), ManagerNone, "INVOCATION_ID inherited: the parent is not systemd"},
		{"blank INVOCATION_ID", "auto", with(systemd, "INVOCATION_ID=  "), ManagerNone, "no hint"},
		{"plain shell", "auto", with(shell, "HOME=/root", "TERM=xterm"), ManagerNone, "no hint"},
		{"systemd hints on darwin do not count", "auto", with(launchd, "INVOCATION_ID=abc", "SYSTEMD_EXEC_PID=4242"), ManagerNone, "no hint"},
		// launchd
		{"launchd: XPC_SERVICE_NAME label", "auto", with(launchd, "XPC_SERVICE_NAME=io.github.schedd"), ManagerLaunchd, "XPC_SERVICE_NAME"},
		{"launchd: LAUNCH_JOB_LABEL", "auto", with(launchd, "LAUNCH_JOB_LABEL=io.github.schedd"), ManagerLaunchd, "LAUNCH_JOB_LABEL"},
		{"launchd: LAUNCH_JOB_NAME", "auto", with(launchd, "LAUNCH_JOB_NAME=io.github.schedd"), ManagerLaunchd, "LAUNCH_JOB_NAME"},
		{"Terminal's XPC_SERVICE_NAME=0", "auto", with(macShell, "XPC_SERVICE_NAME=0"), ManagerNone, "no hint"},
		{"XPC_SERVICE_NAME=0 even from pid 1", "auto", with(launchd, "XPC_SERVICE_NAME=0"), ManagerNone, "no hint"},
		{"empty XPC_SERVICE_NAME", "auto", with(launchd, "XPC_SERVICE_NAME="), ManagerNone, "no hint"},
		{"shell inherits a launchd label", "auto", with(macShell, "XPC_SERVICE_NAME=application.com.apple.Terminal.123"), ManagerNone, "XPC_SERVICE_NAME inherited: the parent is not launchd"},
		{"launchd hints on linux do not count", "auto", with(systemd, "XPC_SERVICE_NAME=io.github.schedd"), ManagerNone, "no hint"},
		// schtasks
		{"schtasks marker", "auto", with(win, "SCHEDD_SCHTASKS_TASK=schedd"), ManagerSchtasks, "SCHEDD_SCHTASKS_TASK"},
		{"windows without marker", "auto", with(win, "USERPROFILE=C:\\Users\\u"), ManagerNone, "no hint"},
		{"schtasks marker off windows", "auto", with(shell, "SCHEDD_SCHTASKS_TASK=schedd"), ManagerNone, "no hint"},
		{"freebsd", "auto", with(ServiceHints{GOOS: "freebsd", PID: pid, PPID: 1}, "INVOCATION_ID=abc"), ManagerNone, "no hint"},
		// the explicit flag wins over everything
		{"flag none beats systemd hints", "none", with(systemd, "INVOCATION_ID=abc", "SYSTEMD_EXEC_PID=4242"), ManagerNone, "flag"},
		{"flag systemd without hints", "systemd", with(shell), ManagerSystemd, "flag"},
		{"flag launchd beats XPC_SERVICE_NAME=0", "launchd", with(macShell, "XPC_SERVICE_NAME=0"), ManagerLaunchd, "flag"},
		{"flag schtasks", "schtasks", with(win), ManagerSchtasks, "flag"},
		{"flag beats SCHEDD_SERVICE_MANAGER", "none", with(systemd, "SCHEDD_SERVICE_MANAGER=systemd"), ManagerNone, "flag"},
		{"SCHEDD_SERVICE_MANAGER beats hints", "auto", with(systemd, "SCHEDD_SERVICE_MANAGER=none", "INVOCATION_ID=abc"), ManagerNone, "SCHEDD_SERVICE_MANAGER"},
		{"bad SCHEDD_SERVICE_MANAGER is ignored", "auto", with(systemd, "SCHEDD_SERVICE_MANAGER=upstart", "INVOCATION_ID=abc"), ManagerSystemd, "INVOCATION_ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := ResolveServiceManager(tt.flag, tt.hints)
			if err != nil {
				t.Fatal(err)
			}
			if d.Manager != tt.want || d.Source != tt.source {
				t.Fatalf("got %s (%s), want %s (%s)", d.Manager, d.Source, tt.want, tt.source)
			}
			if (d.TaskName != "") != (d.Manager == ManagerSchtasks) {
				t.Fatalf("task name %q for %s", d.TaskName, d.Manager)
			}
		})
	}
}

func TestResolveServiceManagerTaskName(t *testing.T) {
	h := ServiceHints{GOOS: "windows", Environ: []string{"SCHEDD_SCHTASKS_TASK=schedd (prod)"}}
	d, _ := ResolveServiceManager("auto", h)
	if d.TaskName != "schedd (prod)" {
		t.Fatalf("task %q", d.TaskName)
	}
	d, _ = ResolveServiceManager("schtasks", ServiceHints{GOOS: "windows"})
	if d.TaskName != DefaultTaskName {
		t.Fatalf("task %q, want the default", d.TaskName)
	}
}

func TestResolveServiceManagerBadFlag(t *testing.T) {
	_, err := ResolveServiceManager("upstart", ServiceHints{GOOS: "linux"})
	if !errors.Is(err, ErrUnknownManager) {
		t.Fatalf("err %v", err)
	}
}

// TestDetectServiceManagerHere runs detection on this process: a test run from a shell or
// CI is never under a service manager of its own, whatever it inherited.
func TestDetectServiceManagerHere(t *testing.T) {
	h := CurrentServiceHints([]string{"INVOCATION_ID=abc", "XPC_SERVICE_NAME=x", "JOURNAL_STREAM=1:2"})
	if h.PPID == 1 {
		t.Skip("the test runs as a child of pid 1")
	}
	if got := DetectServiceManager(h.Environ); got != ManagerNone {
		t.Fatalf("detected %s from inherited hints (parent %d %q)", got, h.PPID, h.ParentName)
	}
}
