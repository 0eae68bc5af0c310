package platform

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSystemdQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/schedd":          "/usr/bin/schedd",
		"/opt/my apps/schedd":      `"/opt/my apps/schedd"`,
		"/etc/schedd/100%.yaml":    "/etc/schedd/100%%.yaml",
		"$HOME/x":                  "$$HOME/x",
		`/a "b"\c`:                 `"/a \"b\"\\c"`,
		"":                         `""`,
		"/srv/schedd;rm -rf /tmp/": `"/srv/schedd;rm -rf /tmp/"`,
	} {
		if got := systemdQuote(in); got != want {
			t.Errorf("systemdQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestWindowsQuote(t *testing.T) {
	for in, want := range map[string]string{
		`C:\ProgramData\schedd\schedd.yaml`: `C:\ProgramData\schedd\schedd.yaml`,
		`C:\Program Files\schedd`:           `"C:\Program Files\schedd"`,
		`C:\dir with space\`:                `"C:\dir with space\\"`,
		`say "hi"`:                          `"say \"hi\""`,
		"":                                  `""`,
	} {
		if got := windowsQuote(in); got != want {
			t.Errorf("windowsQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestStopBudget is R-INIT-03: the service manager's stop budget exceeds the gateway's
// stop timeout by StopMargin, in whole seconds.
func TestStopBudget(t *testing.T) {
	for stop, want := range map[time.Duration]time.Duration{
		0:                       15 * time.Second,
		30 * time.Second:        45 * time.Second,
		1500 * time.Millisecond: 17 * time.Second,
		10 * time.Minute:        615 * time.Second,
	} {
		if got := StopBudget(stop); got != want || got <= stop {
			t.Errorf("StopBudget(%v) = %v, want %v", stop, got, want)
		}
	}
}

func TestRenderServiceFileErrors(t *testing.T) {
	if _, err := RenderServiceFile(ServiceSpec{Manager: "upstart", Binary: "/x"}); err == nil {
		t.Error("unknown manager rendered")
	}
	if _, err := RenderServiceFile(ServiceSpec{Manager: ManagerSystemd}); err == nil {
		t.Error("no binary rendered")
	}
	if _, err := RenderServiceFile(ServiceSpec{Manager: ManagerSchtasks, Binary: `C:\s.exe`, User: true}); err == nil {
		t.Error("user task without an account rendered")
	}
}

// TestRenderUserFiles: user services differ from system ones where the manager needs it.
func TestRenderUserFiles(t *testing.T) {
	unit, err := RenderServiceFile(ServiceSpec{Manager: ManagerSystemd, User: true, Binary: "/home/u/go/bin/schedd"})
	if err != nil {
		t.Fatal(err)
	}
	u := string(unit)
	for _, want := range []string{"WantedBy=default.target", "ExecStart=/home/u/go/bin/schedd run --service-manager systemd\n", "Type=notify"} {
		if !strings.Contains(u, want) {
			t.Errorf("user unit lacks %q:\n%s", want, u)
		}
	}
	for _, bad := range []string{"ExecStartPre", "ProtectKernel", "network-online", "--config"} {
		if strings.Contains(u, bad) {
			t.Errorf("user unit has %q:\n%s", bad, u)
		}
	}
	task, err := RenderServiceFile(ServiceSpec{Manager: ManagerSchtasks, User: true, Binary: `C:\s.exe`, TaskUser: `HOST\u`})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(task); !strings.Contains(s, "<LogonTrigger>") || !strings.Contains(s, `<UserId>HOST\u</UserId>`) || strings.Contains(s, "BootTrigger") {
		t.Errorf("user task:\n%s", s)
	}
}

// TestInstallSteps: a changed file reloads a loaded service, an unchanged one is left
// alone (R-INIT-11); launchd retries bootstrap after bootout (R-INIT-06).
func TestInstallSteps(t *testing.T) {
	argvs := func(steps []ServiceStep) []string {
		var out []string
		for _, s := range steps {
			out = append(out, strings.Join(s.Argv, " "))
		}
		return out
	}
	sd := ServiceSpec{Manager: ManagerSystemd}
	if got, want := argvs(InstallSteps(sd, "/etc/systemd/system/schedd.service", 0, true, true)),
		[]string{"systemctl daemon-reload", "systemctl enable schedd.service", "systemctl restart schedd.service"}; !slices.Equal(got, want) {
		t.Errorf("systemd changed: %q", got)
	}
	if got := argvs(InstallSteps(ServiceSpec{Manager: ManagerSystemd, User: true}, "", 0, false, true)); got[2] != "systemctl --user start schedd.service" {
		t.Errorf("systemd user unchanged: %q", got)
	}
	if got := argvs(InstallSteps(sd, "", 0, false, false)); len(got) != 2 {
		t.Errorf("systemd without start: %q", got)
	}
	ld := InstallSteps(ServiceSpec{Manager: ManagerLaunchd, User: true}, "/Users/u/Library/LaunchAgents/io.github.schedd.plist", 501, true, true)
	if got, want := argvs(ld), []string{
		"launchctl enable gui/501/io.github.schedd",
		"launchctl bootout gui/501/io.github.schedd",
		"launchctl bootstrap gui/501 /Users/u/Library/LaunchAgents/io.github.schedd.plist",
		"launchctl kickstart gui/501/io.github.schedd",
	}; !slices.Equal(got, want) {
		t.Errorf("launchd: %q", got)
	}
	if ld[2].Retries == 0 || !slices.Contains(ld[2].RetryOn, 5) || !slices.Contains(ld[1].OK, 3) {
		t.Errorf("launchd bootstrap retry / bootout tolerance: %+v %+v", ld[2], ld[1])
	}
	st := InstallSteps(ServiceSpec{Manager: ManagerSchtasks}, `C:\ProgramData\schedd\schedd-task.xml`, 0, true, true)
	if got := argvs(st); got[0] != `schtasks /Create /TN schedd /XML C:\ProgramData\schedd\schedd-task.xml /F` || got[1] != "schtasks /Run /TN schedd" {
		t.Errorf("schtasks: %q", got)
	}
	if got := argvs(UninstallSteps(sd, 0)); got[0] != "systemctl disable --now schedd.service" {
		t.Errorf("uninstall: %q", got)
	}
	for s, want := range map[ServiceSpec]string{
		sd:                                    "systemctl show --property=Version",
		{Manager: ManagerSystemd, User: true}: "systemctl --user show --property=Version",
		{Manager: ManagerLaunchd}:             "launchctl print system",
		{Manager: ManagerLaunchd, User: true}: "launchctl print gui/501",
		{Manager: ManagerSchtasks}:            "schtasks /Query /FO CSV /NH",
	} {
		if got := strings.Join(ServiceCheck(s, 501).Argv, " "); got != want {
			t.Errorf("check for %+v: %q, want %q", s, got, want)
		}
	}
}

func TestDefaultServicePaths(t *testing.T) {
	e := PathEnv{Home: "/home/u"}
	if p := DefaultServicePaths(ManagerSystemd, false, e); p.File != "/etc/systemd/system/schedd.service" || p.Config != "/etc/schedd/schedd.yaml" {
		t.Errorf("systemd system: %+v", p)
	}
	if p := DefaultServicePaths(ManagerSystemd, true, PathEnv{Home: "/home/u", ConfigHome: "/xdg"}); p.File != "/xdg/systemd/user/schedd.service" || p.Config != "/xdg/schedd/schedd.yaml" {
		t.Errorf("systemd user: %+v", p)
	}
	if p := DefaultServicePaths(ManagerLaunchd, true, e); p.File != "/home/u/Library/LaunchAgents/io.github.schedd.plist" || p.Log != "/home/u/Library/Logs/schedd.log" {
		t.Errorf("launchd user: %+v", p)
	}
}
